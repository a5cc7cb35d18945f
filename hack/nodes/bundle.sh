#!/usr/bin/env bash
# The A/B harness with both daemons, packed for machines that have neither
# this tree nor its toolchain (hack/nodes/ansible/ab.yml runs it on test nodes):
# the harness and suites (hack/, hyperfine-suites/, patches/ for the series
# hash), bin/dockerd-stock and bin/dockerd-patched, the test images
# (build/images), and the pinned runtime of $AB_PREFIX/bin with this
# machine's docker CLI in prefix/bin. .bundle records the commit it was made
# from. On the machine, with the Debian packages of `hack/stack/install-deps.sh
# --print-run-packages` installed:
#
#   AB_PREFIX=$PWD/prefix PATH=$PWD/prefix/bin:$PATH PYTHONPATH=hack python3 -m ab run SUITE
#
#   hack/nodes/bundle.sh [--out DIR]   write DIR/moby-ab-harness_<patched version>.tar.gz (DIR:
#                                      build/bundle) and print its path
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

OUT=$AB_BUILD/bundle
while [ $# -gt 0 ]; do
	case $1 in
	--out)
		OUT=${2:?--out needs a directory}
		shift 2
		;;
	*) die "usage: hack/nodes/bundle.sh [--out DIR]" ;;
	esac
done

for f in bin/dockerd-stock bin/dockerd-patched bin/docker-proxy; do
	[ -x "$AB_ROOT/$f" ] || die "bundle: $f is missing (make build)"
done
[ -f "$AB_BUILD/images/busybox.tar" ] || die "bundle: build/images is missing (hack/hosts/images.sh build)"
for f in containerd containerd-shim-runc-v2 runc criu docker-init; do
	[ -x "$AB_PREFIX/bin/$f" ] || die "bundle: $AB_PREFIX/bin/$f is missing (hack/stack/install-deps.sh)"
done
docker=$(command -v docker) || die "bundle: no docker CLI (hack/stack/install-deps.sh)"
! ldd "$docker" >/dev/null 2>&1 || die "bundle: $docker is not statically linked"

version=$("$AB_ROOT/bin/dockerd-patched" --version | sed -n 's/^Docker version \([^,]*\),.*/\1/p')
[ -n "$version" ] || die "bundle: cannot read bin/dockerd-patched's version"
mkdir -p "$OUT"
tmp=$(mktemp -d "$OUT/.bundle.XXXXXX")
trap 'rm -rf --one-file-system "$tmp"' EXIT
name=moby-ab-harness_$version
st=$tmp/$name
mkdir -p "$st/bin" "$st/build" "$st/prefix/bin"
(cd "$AB_ROOT" && tar --exclude=__pycache__ -cf - Makefile README.md hack hyperfine-suites patches) | tar -C "$st" -xf -
cp -a "$AB_ROOT"/bin/dockerd-stock "$AB_ROOT"/bin/dockerd-patched "$AB_ROOT"/bin/docker-proxy "$st/bin/"
cp -a "$AB_BUILD/images" "$st/build/"
[ ! -e "$AB_BUILD/pingpong" ] || cp -a "$AB_BUILD/pingpong" "$st/build/"
# The zns replayer, built from the patched tree, which the bundle does not
# carry (hack/ab/zns.py takes build/zns-replay where there is none).
cp -a "$("$AB_ROOT/hack/zoned/zns-replay.sh" build)" "$st/build/"
cp -a "$AB_PREFIX"/bin/. "$st/prefix/bin/"
cp -L "$docker" "$st/prefix/bin/docker"
commit=$(git -C "$AB_ROOT" rev-parse HEAD 2>/dev/null || true)
changes=null
if [ -n "$commit" ]; then
	changes=false
	[ -z "$(git -C "$AB_ROOT" status --porcelain --untracked-files=no)" ] || changes=true
fi
series=$("$AB_ROOT/hack/stack/patches.sh" hash) || die "bundle: no series hash (make build)"
printf '{"commit": %s, "local_changes": %s, "series": "%s", "version": "%s"}\n' \
	"$([ -n "$commit" ] && echo "\"$commit\"" || echo null)" "$changes" "$series" "$version" >"$st/.bundle"
tar --numeric-owner -C "$tmp" -cf - "$name" | gzip -1 >"$tmp/$name.tar.gz"
mv "$tmp/$name.tar.gz" "$OUT/"
log "bundle: $OUT/$name.tar.gz"
echo "$OUT/$name.tar.gz"
