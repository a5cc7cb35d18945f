#!/usr/bin/env bash
# The zns replayer: a Go command (hack/zoned/zns-replay/) that replays a trace of
# checkpoint creates and deletes on the daemon's own model of a zoned device
# (daemon/internal/zoned.Model) under the daemon's own placement
# (zoned.Placer) and the baselines it is measured against. It imports the
# daemon's internal package, so it is compiled inside the patched moby tree:
# `go -overlay` places its sources at daemon/internal/zoned/zns-replay/
# there, without a file of the tree changing. hack/ab/zns.py runs it.
#
# usage: hack/zoned/zns-replay.sh build    build/zns-replay (prints its path)
#        hack/zoned/zns-replay.sh test [go test flags]
#        hack/zoned/zns-replay.sh vet
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SRC=$AB_ROOT/hack/zoned/zns-replay
PKG=daemon/internal/zoned/zns-replay
OUT=$AB_BUILD/zns-replay

"$AB_ROOT/hack/stack/patches.sh" ensure >&2
[ -d "$PATCHED_TREE/daemon/internal/zoned" ] ||
	die "zns-replay: $PATCHED_TREE has no daemon/internal/zoned (the series' zoned store)"
mkdir -p "$AB_BUILD"
overlay=$AB_BUILD/zns-replay-overlay.json
{
	printf '{"Replace": {'
	sep=
	for f in "$SRC"/*.go; do
		printf '%s"%s": "%s"' "$sep" "$PATCHED_TREE/$PKG/$(basename "$f")" "$f"
		sep=,
	done
	printf '}}\n'
} >"$overlay"
# go vet runs its checker in the package's directory: an empty one (git
# does not see it) is enough, the sources come from the overlay.
mkdir -p "$PATCHED_TREE/$PKG"

cd "$PATCHED_TREE"
export GOFLAGS=-buildvcs=false
case ${1:-build} in
build)
	go build -trimpath -overlay "$overlay" -o "$OUT.tmp" "./$PKG"
	mv "$OUT.tmp" "$OUT"
	echo "$OUT"
	;;
test)
	shift
	go test -overlay "$overlay" -count=1 "$@" "./$PKG"
	;;
vet)
	go vet -overlay "$overlay" "./$PKG"
	;;
*) die "usage: hack/zoned/zns-replay.sh build|test|vet" ;;
esac
