#!/usr/bin/env bash
# Upstream moby's own integration tests that the series makes pass, and the
# series' own tests written as upstream's, run from the patched tree against
# the patched daemon in its test host:
#   integration/container: TestCheckpoint (skipped upstream as broken since
#     moby#38963; 0001-0003 fix what broke it), TestCheckpointAPIErrors (the
#     checkpoint endpoints' 409/404/400 answers), TestCheckpointQueue and
#     TestCheckpointQueueInvalidOption (the checkpoints object's max-concurrent,
#     max-waiting and queue-order, a misspelt key, the deprecated flag);
#   integration/daemon: TestDaemonRegistryDownloadConcurrencyInvalid and
#     TestDaemonReloadRegistryDownloadConcurrencyInvalid.
#
# Upstream's TestMain wants its "frozen" images present and would pull them
# from Docker Hub otherwise; these hosts have no Docker Hub, so the busybox
# test image is loaded and tagged under those names (the tests use busybox
# only). TestCheckpoint bind-mounts `true` over ip6tables-restore and
# ip6tables-save (upstream's CI lacks the ip6tables modules).
#
# Tests that start daemons of their own (internal/testutil/daemon) run
# `dockerd` from PATH: a directory in PATH links it to this flavor's binary.
# The tests run in a mount and a network namespace of their own, so the
# bind mounts, the daemons' bridges and firewall rules stay inside; their
# data, exec roots and sockets are in a temporary directory removed at the
# end, and any daemon or containerd they leave running is stopped by its
# pidfile.
#
# usage: hack/stack/test-moby-integration.sh [--flavor stock|patched] [go test -run regexp]
#   the regexp is run in each package (default: the tests named above);
#   --flavor stock runs the same tests against the stock daemon (they fail
#   there: that is what the series fixes).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

FLAVOR=patched
if [ "${1:-}" = --flavor ]; then
	FLAVOR=${2:?--flavor needs stock or patched}
	shift 2
fi
case $FLAVOR in stock | patched) ;; *) die "unknown flavor $FLAVOR" ;; esac
# the tests run by default, per package of integration/
declare -A RUN=(
	[container]='^(TestCheckpoint|TestCheckpointAPIErrors|TestCheckpointRestoreCustomDir|TestCheckpointQueue|TestCheckpointQueueInvalidOption)$'
	[daemon]='^(TestDaemonRegistryDownloadConcurrencyInvalid|TestDaemonReloadRegistryDownloadConcurrencyInvalid)$'
)
PACKAGES="container daemon"
if [ -n "${1:-}" ]; then
	for pkg in $PACKAGES; do RUN[$pkg]=$1; done
fi
FROZEN="busybox:latest busybox:glibc hello-world:frozen debian:trixie-slim hello-world:amd64 hello-world:arm64"

[ "$(id -u)" = 0 ] || die "moby integration tests need root"
"$AB_ROOT/hack/stack/patches.sh" ensure
[ -x "$AB_ROOT/bin/dockerd-$FLAVOR" ] || "$AB_ROOT/hack/stack/build.sh" "$FLAVOR"
"$AB_ROOT/hack/hosts/images.sh" build busybox >/dev/null

out=$(mktemp -d)
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	local f pid
	# daemons and containerds the tests left running (by their pidfiles)
	while read -r f; do
		pid=$(cat "$f" 2>/dev/null) || continue
		[ -n "$pid" ] || continue
		case "$(basename "$(pid_exe "$pid")")" in
		dockerd* | containerd) stop_pid "$pid" "test daemon" 10 ;;
		esac
	done < <(find "$out/dest" "$out/tmp" \( -name docker.pid -o -name containerd.pid \) 2>/dev/null)
	"$AB_ROOT/hack/hosts/daemon.sh" down "$FLAVOR" >/dev/null 2>&1 || true
	unmount_under "$out"
	rm -rf "$out"
}
trap cleanup EXIT

for pkg in $PACKAGES; do
	log "moby integration: building integration/$pkg tests"
	(cd "$PATCHED_TREE" && go test -c -tags "$GO_BUILDTAGS" -o "$out/$pkg.test" "./integration/$pkg")
done
# `dockerd` and `docker-proxy` for the daemons the tests start
mkdir -p "$out/bin" "$out/dest" "$out/tmp"
ln -s "$AB_ROOT/bin/dockerd-$FLAVOR" "$out/bin/dockerd"
ln -s "$AB_ROOT/bin/docker-proxy" "$out/bin/docker-proxy"

eval "$("$AB_ROOT/hack/hosts/daemon.sh" up "$FLAVOR")"
export DOCKER_HOST
"$AB_ROOT/hack/hosts/images.sh" load busybox
for ref in $FROZEN; do
	docker tag ab/busybox:latest "$ref"
done

status=0
for pkg in $PACKAGES; do
	log "moby integration: integration/$pkg -run ${RUN[$pkg]} against the $FLAVOR daemon"
	# CRIU (criu check), containerd and runc are in the runtime stack's bin.
	PATH=$out/bin:$(ab_path) TMPDIR=$out/tmp DOCKER_INTEGRATION_DAEMON_DEST=$out/dest \
		unshare --mount --net --propagation private -- sh -c 'ip link set lo up && exec "$@"' sh \
		"$out/$pkg.test" -test.v -test.count=1 -test.timeout 10m -test.run "${RUN[$pkg]}" || status=$?
done
exit "$status"
