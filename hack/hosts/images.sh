#!/usr/bin/env bash
# Test images, built without a daemon or a registry hub into build/images/NAME.tar
# (docker-loadable archives; see hack/hosts/testimages/mkimage.py).
#
#   hack/hosts/images.sh build [NAME...|all]   default: busybox memholder
#   hack/hosts/images.sh load NAME...          docker load into $DOCKER_HOST
#   hack/hosts/images.sh list
#
# Images: busybox (Debian's busybox-static), memholder (busybox + the memory
# holder, hack/hosts/testimages/memholder.c), pingpong (busybox + a static TCP
# round-trip timer, hack/hosts/testimages/pingpong), node (busybox + the host's
# Node.js binary and the shared libraries it links, with seed 004's server and
# seed 003's file reader in /app, hack/hosts/testimages/node), nginx, redis,
# postgres (Debian bookworm packages, in one shared base layer; built by
# `build all` or by name).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

OUT=$AB_BUILD/images
SRC=$AB_ROOT/hack/hosts/testimages
MKIMAGE=$SRC/mkimage.py
DEFAULT_IMAGES="busybox memholder"
ALL_IMAGES="busybox memholder pingpong node nginx redis postgres"

# A stamp per image: the hash of everything it is built from. Unchanged inputs
# skip the build.
up_to_date() { # name inputs-hash
	[ -f "$OUT/$1.tar" ] && [ "$(cat "$OUT/$1.stamp" 2>/dev/null)" = "$2" ]
}
mark() { echo "$2" >"$OUT/$1.stamp"; }

busybox_rootfs() { # dir
	local d=$1 a
	mkdir -p "$d/bin" "$d/etc" "$d/tmp" "$d/root" "$d/proc" "$d/sys" "$d/dev"
	chmod 1777 "$d/tmp"
	install -m 0755 /bin/busybox "$d/bin/busybox"
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$d/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$d/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$d/etc/group"
}

build_busybox() {
	local h
	h=$(cat /bin/busybox "$MKIMAGE" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)
	up_to_date busybox "$h" && return 0
	local tmp
	tmp=$(mktemp -d)
	busybox_rootfs "$tmp/rootfs"
	python3 "$MKIMAGE" --ref ab/busybox:latest --layer "$tmp/rootfs" --env PATH=/bin --cmd '["sh"]' -o "$OUT/busybox.tar"
	rm -rf "$tmp"
	mark busybox "$h"
}

build_memholder() {
	local h
	h=$(cat /bin/busybox "$MKIMAGE" "$SRC/memholder.c" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)
	up_to_date memholder "$h" && return 0
	local tmp
	tmp=$(mktemp -d)
	busybox_rootfs "$tmp/rootfs"
	mkdir -p "$tmp/rootfs/usr/local/bin"
	gcc -O2 -Wall -static -o "$tmp/rootfs/usr/local/bin/memholder" "$SRC/memholder.c"
	python3 "$MKIMAGE" --ref ab/memholder:latest --layer "$tmp/rootfs" \
		--env PATH=/usr/local/bin:/bin --cmd '["memholder", "64"]' -o "$OUT/memholder.tar"
	rm -rf "$tmp"
	mark memholder "$h"
}

# pingpong: a static Go program (CGO_ENABLED=0), the same binary natively and
# in containers; build/pingpong is the native copy the harness runs.
build_pingpong() {
	local h src=$SRC/pingpong
	command -v go >/dev/null || die "images: go is missing (the daemons' toolchain builds pingpong)"
	h=$(cat /bin/busybox "$MKIMAGE" "$src/main.go" "$src/go.mod" "${BASH_SOURCE[0]}" <(go version) |
		sha256sum | cut -c1-16)
	up_to_date pingpong "$h" && [ -x "$AB_BUILD/pingpong" ] && return 0
	local tmp
	tmp=$(mktemp -d)
	busybox_rootfs "$tmp/rootfs"
	mkdir -p "$tmp/rootfs/usr/local/bin"
	(cd "$src" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags='-s -w' \
		-o "$tmp/rootfs/usr/local/bin/pingpong" .)
	install -m 0755 "$tmp/rootfs/usr/local/bin/pingpong" "$AB_BUILD/pingpong"
	python3 "$MKIMAGE" --ref ab/pingpong:latest --layer "$tmp/rootfs" \
		--env PATH=/usr/local/bin:/bin --expose 7000 --cmd '["pingpong", "server"]' -o "$OUT/pingpong.tar"
	rm -rf "$tmp"
	mark pingpong "$h"
}

# node: the host's node (the same binary runs natively and in the container,
# so a comparison is of the placement, not of two Node.js builds) with every
# shared library ldd lists, at the same paths.
node_bin() {
	local n
	n=$(command -v node || command -v nodejs) ||
		die "images: node is missing (apt-get install nodejs): the node image copies the host's"
	readlink -f "$n"
}

node_libs() { # binary: the absolute paths ldd resolves, loader included
	ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u
}

build_node() {
	local node h lib tmp
	node=$(node_bin)
	# shellcheck disable=SC2046 # one path per line, none with spaces
	h=$(cat /bin/busybox "$MKIMAGE" "$node" $(node_libs "$node") "$SRC"/node/*.js "${BASH_SOURCE[0]}" |
		sha256sum | cut -c1-16)
	up_to_date node "$h" && return 0
	tmp=$(mktemp -d)
	busybox_rootfs "$tmp/rootfs"
	mkdir -p "$tmp/rootfs/usr/local/bin" "$tmp/rootfs/app"
	install -m 0755 "$node" "$tmp/rootfs/usr/local/bin/node"
	for lib in $(node_libs "$node"); do
		mkdir -p "$tmp/rootfs$(dirname "$lib")"
		cp -L "$lib" "$tmp/rootfs$lib"
	done
	install -m 0644 "$SRC"/node/*.js "$tmp/rootfs/app/"
	python3 "$MKIMAGE" --ref ab/node:latest --layer "$tmp/rootfs" \
		--env PATH=/usr/local/bin:/bin --workdir /app --expose 3000 --cmd '["node", "/app/app.js"]' \
		-o "$OUT/node.tar"
	rm -rf "$tmp"
	mark node "$h"
}

build_one() {
	case "$1" in
	busybox | memholder | pingpong | node) "build_$1" ;;
	nginx | redis | postgres) build_app "$1" ;;
	*) die "images: unknown image '$1' (known: $ALL_IMAGES)" ;;
	esac
	log "images: $1 -> ${OUT#"$AB_ROOT"/}/$1.tar ($(du -h "$OUT/$1.tar" | cut -f1))"
}

cmd_build() {
	mkdir -p "$OUT"
	local names="$*"
	[ -n "$names" ] || names=$DEFAULT_IMAGES
	[ "$names" = all ] && names=$ALL_IMAGES
	local n
	for n in $names; do build_one "$n"; done
}

cmd_load() {
	local n
	[ $# -gt 0 ] || die "usage: hack/hosts/images.sh load NAME..."
	for n in "$@"; do
		[ -f "$OUT/$n.tar" ] || die "images: $OUT/$n.tar is not built (hack/hosts/images.sh build $n)"
		docker load -q -i "$OUT/$n.tar" >/dev/null || die "images: docker load of $n failed"
	done
}

cmd_list() {
	local n
	for n in $ALL_IMAGES; do
		if [ -f "$OUT/$n.tar" ]; then
			printf '%-10s built  %s\n' "$n" "$(du -h "$OUT/$n.tar" | cut -f1)"
		else
			printf '%-10s -\n' "$n"
		fi
	done
}

# shellcheck source=testimages/apps.sh
. "$SRC/apps.sh"

case "${1:-}" in
build) shift; cmd_build "$@" ;;
load) shift; cmd_load "$@" ;;
list) cmd_list ;;
*) die "usage: hack/hosts/images.sh build [NAME...|all] | load NAME... | list" ;;
esac
