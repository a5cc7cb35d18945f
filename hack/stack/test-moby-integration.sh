#!/usr/bin/env bash
# Upstream moby's own integration tests that the series makes pass, run from
# the patched tree against the patched daemon in its test host: today
# integration/container TestCheckpoint (skipped upstream as broken since
# moby#38963; 0001-0003 fix what broke it).
#
# Upstream's TestMain wants its "frozen" images present and would pull them
# from Docker Hub otherwise; these hosts have no Docker Hub, so the busybox
# test image is loaded and tagged under those names (TestCheckpoint uses
# busybox only). The test bind-mounts `true` over ip6tables-restore and
# ip6tables-save (upstream's CI lacks the ip6tables modules); it runs in a
# mount namespace of its own, so that stays inside the test.
#
# usage: hack/stack/test-moby-integration.sh [--flavour stock|patched] [go test -run regexp]
#   --flavour stock runs the same tests against the stock daemon (they fail
#   there: that is what the series fixes).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

FLAVOUR=patched
if [ "${1:-}" = --flavour ]; then
	FLAVOUR=${2:?--flavour needs stock or patched}
	shift 2
fi
case $FLAVOUR in stock | patched) ;; *) die "unknown flavour $FLAVOUR" ;; esac
RUN=${1:-'^TestCheckpoint$'}
FROZEN="busybox:latest busybox:glibc hello-world:frozen debian:trixie-slim hello-world:amd64 hello-world:arm64"

[ "$(id -u)" = 0 ] || die "moby integration tests need root"
"$AB_ROOT/hack/stack/patches.sh" ensure
[ -x "$AB_ROOT/bin/dockerd-$FLAVOUR" ] || "$AB_ROOT/hack/stack/build.sh" "$FLAVOUR"
"$AB_ROOT/hack/hosts/images.sh" build busybox >/dev/null

out=$(mktemp -d)
cleanup() {
	"$AB_ROOT/hack/hosts/daemon.sh" down "$FLAVOUR" >/dev/null 2>&1 || true
	rm -rf "$out"
}
trap cleanup EXIT

log "moby integration: building integration/container tests"
(cd "$PATCHED_TREE" && go test -c -tags "$GO_BUILDTAGS" -o "$out/container.test" ./integration/container)

eval "$("$AB_ROOT/hack/hosts/daemon.sh" up "$FLAVOUR")"
export DOCKER_HOST
"$AB_ROOT/hack/hosts/images.sh" load busybox
for ref in $FROZEN; do
	docker tag ab/busybox:latest "$ref"
done

log "moby integration: integration/container -run $RUN against the $FLAVOUR daemon"
# CRIU (criu check) is in the runtime stack's bin.
PATH=$AB_PREFIX/bin:$PATH unshare --mount --propagation private -- \
	"$out/container.test" -test.v -test.count=1 -test.timeout 10m -test.run "$RUN"
