#!/usr/bin/env bash
# Unit tests of the moby packages the patch series touches, run in the patched
# tree, plus daemon/config (every daemon option is validated there), under the
# race detector: the series adds state shared between requests (queues,
# checkpoints in flight, per-registry limits).
#
# usage: hack/stack/test-unit.sh [--list] [go test flags...]   (UNIT_RACE=0: without -race)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

packages() {
	{
		echo ./daemon/config
		sed -n 's|^diff --git a/\(.*\)/[^/]*\.go b/.*|./\1|p' "$AB_ROOT"/patches/*.patch 2>/dev/null
	} | sort -u | while read -r d; do
		# Upstream's integration tests need a daemon: hack/stack/test-moby-integration.sh
		# runs them.
		case $d in ./integration/*) continue ;; esac
		# Skip directories a later patch removed.
		[ -d "$PATCHED_TREE/$d" ] && ls "$PATCHED_TREE/$d"/*.go >/dev/null 2>&1 && echo "$d"
	done
}

if [ "${1:-}" = --list ]; then
	packages
	exit 0
fi
"$AB_ROOT/hack/stack/patches.sh" ensure
# daemon/config validates userland-proxy-path against docker-proxy in PATH, as
# upstream's hack/test/unit arranges.
[ -x "$AB_ROOT/bin/docker-proxy" ] || "$AB_ROOT/hack/stack/build.sh" stock
export PATH=$AB_ROOT/bin:$PATH
# Some upstream tests leave temporary directories behind (a TestMain that
# removes its directory in a defer before os.Exit, for one): give the tests a
# TMPDIR of their own and remove it afterwards.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/moby-ab-unit.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp
mapfile -t pkgs < <(packages)
log "unit tests: ${pkgs[*]}"
cd "$PATCHED_TREE"
# Build first (this may fetch modules), then run the tests in a network
# namespace of their own with IPv4 forwarding on, as in upstream's dev
# container: some daemon tests expect it and must not change the host.
race=()
[ "${UNIT_RACE:-1}" = 0 ] || race=(-race)
go test "${race[@]}" -tags "$GO_BUILDTAGS" -count=1 -run '^$' "${pkgs[@]}" >/dev/null
unshare --net -- sh -c 'ip link set lo up && sysctl -qw net.ipv4.ip_forward=1 && exec "$@"' sh \
	env GOPROXY=off go test "${race[@]}" -tags "$GO_BUILDTAGS" -count=1 "$@" "${pkgs[@]}"
