#!/usr/bin/env bash
# A clean Debian 12 root for the package tests (bats/deb.bats): a minbase
# debootstrap of bookworm with systemd (not running), with its package lists, from the mirror apt on this
# machine uses; cached as a tarball under $AB_CACHE/deb-root so that later runs
# download nothing. The packages that apt installs into a root are kept in
# $AB_CACHE/deb-root/archives (bind-mounted by the tests).
#
#   hack/nodes/deb-root.sh tarball       make the tarball unless it is there; print its path
#   hack/nodes/deb-root.sh extract DIR   unpack a fresh root into DIR (empty or missing)
#   hack/nodes/deb-root.sh run DIR CMD... CMD in the root, with /proc and apt's archive cache
#   hack/nodes/deb-root.sh unit-exec DIR NETNS SOCKET [VAR=VALUE ...] -- CMD...
#       CMD as systemd runs a unit's command line on the node whose root is DIR:
#       in a mount namespace of its own whose root DIR becomes (pivot_root), with
#       /proc, /sys and /dev; in the network namespace NETNS; with a clean
#       environment and the unit's VARs; with SOCKET, a path in DIR ("" for none),
#       passed as socket activation passes it (LISTEN_FDS). It execs throughout:
#       its PID is CMD's. Everything it mounts goes with its last process.
#   hack/nodes/deb-root.sh mirror        the mirror it uses
#
# DEB_ROOT_MIRROR overrides the mirror; DEB_ROOT_TIMEOUT (seconds, default 900)
# bounds the download.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

SUITE=bookworm
AB_CACHE=${AB_CACHE:-/var/cache/moby-ab}
CACHE=$AB_CACHE/deb-root
# minbase plus systemd, as on a node: the units are verified against it.
INCLUDE=systemd
TARBALL=$CACHE/$SUITE-minbase-$INCLUDE.tar.gz
TIMEOUT=${DEB_ROOT_TIMEOUT:-900}

# The first URI apt's sources give for the suite's main component (deb822
# .sources files and one-line .list files).
mirror() {
	if [ -n "${DEB_ROOT_MIRROR:-}" ]; then
		echo "$DEB_ROOT_MIRROR"
		return
	fi
	local m
	m=$(
		{
			for f in /etc/apt/sources.list.d/*.sources; do
				[ -f "$f" ] || continue
				awk -v s="$SUITE" '
					BEGIN { RS = ""; FS = "\n" }
					{
						types = ""; uris = ""; suites = ""; comps = ""
						for (i = 1; i <= NF; i++) {
							if ($i ~ /^[ \t]*#/) continue
							if ($i ~ /^Types:/) types = " " substr($i, 7) " "
							if ($i ~ /^URIs:/) uris = substr($i, 6)
							if ($i ~ /^Suites:/) suites = " " substr($i, 8) " "
							if ($i ~ /^Components:/) comps = " " substr($i, 12) " "
							if ($i ~ /^Enabled:[ \t]*no/) types = ""
						}
						if (types ~ /[ \t]deb[ \t]/ && suites ~ ("[ \t]" s "[ \t]") && comps ~ /[ \t]main[ \t]/) {
							split(uris, u, /[ \t]+/)
							for (j in u) if (u[j] != "") { print u[j]; exit }
						}
					}' "$f"
			done
			for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
				[ -f "$f" ] || continue
				sed -e 's/\[[^]]*\]//' "$f" | awk -v s="$SUITE" '$1 == "deb" && $3 == s { for (i = 4; i <= NF; i++) if ($i == "main") { print $2; exit } }'
			done
		} | head -n 1
	)
	echo "${m:-http://deb.debian.org/debian}"
}

# Commands in a root, with /proc mounted in a mount namespace of their own:
# nothing is left mounted when they end. IN_ROOT_TIMEOUT bounds them (seconds).
in_root() { # root cmd...
	local root=$1
	shift
	# shellcheck disable=SC2016 # expanded by the inner shell
	timeout "${IN_ROOT_TIMEOUT:-0}" unshare --mount --propagation slave -- /bin/sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$root" \
		/usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C DEBIAN_FRONTEND=noninteractive "$@"
}

cmd_tarball() {
	if [ -s "$TARBALL" ]; then
		echo "$TARBALL"
		return
	fi
	command -v debootstrap >/dev/null || die "deb-root: debootstrap is missing (hack/stack/install-deps.sh installs it)"
	mkdir -p "$CACHE"
	local m tmp
	m=$(mirror)
	tmp=$(mktemp -d "$CACHE/.build.XXXXXX")
	# shellcheck disable=SC2064 # expand now: the path is fixed
	trap "rm -rf --one-file-system '$tmp'" EXIT
	log "deb-root: debootstrap --variant=minbase --include=$INCLUDE $SUITE from $m (once; cached in $TARBALL)"
	timeout "$TIMEOUT" debootstrap --variant=minbase --include="$INCLUDE" "$SUITE" "$tmp/root" "$m" >"$tmp/debootstrap.log" 2>&1 || {
		tail -n 20 "$tmp/debootstrap.log" >&2
		die "deb-root: debootstrap failed or took more than ${TIMEOUT}s (mirror $m)"
	}
	echo "deb $m $SUITE main" >"$tmp/root/etc/apt/sources.list"
	cp /etc/resolv.conf "$tmp/root/etc/resolv.conf"
	IN_ROOT_TIMEOUT=300 in_root "$tmp/root" apt-get -q update >"$tmp/apt.log" 2>&1 || {
		tail -n 20 "$tmp/apt.log" >&2
		die "deb-root: apt-get update in the root failed"
	}
	in_root "$tmp/root" apt-get clean
	tar --numeric-owner -C "$tmp/root" -czf "$tmp/root.tar.gz" .
	mv "$tmp/root.tar.gz" "$TARBALL"
	log "deb-root: $TARBALL"
	echo "$TARBALL"
}

cmd_extract() {
	local dir=${1:?usage: hack/nodes/deb-root.sh extract DIR}
	cmd_tarball >/dev/null
	mkdir -p "$dir"
	[ -z "$(ls -A "$dir")" ] || die "deb-root: $dir is not empty"
	tar --numeric-owner -C "$dir" -xzf "$TARBALL"
	cp /etc/resolv.conf "$dir/etc/resolv.conf"
	mkdir -p "$CACHE/archives/partial"
}

cmd_run() {
	local dir=${1:?usage: hack/nodes/deb-root.sh run DIR CMD...}
	shift
	mkdir -p "$CACHE/archives/partial"
	# shellcheck disable=SC2016 # expanded by the inner shell
	timeout "${IN_ROOT_TIMEOUT:-0}" unshare --mount --propagation slave -- /bin/sh -c '
		mount -t proc proc "$0/proc" && mount --bind "$1" "$0/var/cache/apt/archives" && shift && exec chroot "$0" "$@"' \
		"$dir" "$CACHE/archives" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C DEBIAN_FRONTEND=noninteractive "$@"
}

# unit-exec, in three steps that exec one another: namespaces; mounts and the
# socket; the new root.
cmd_unit_exec() { # DIR NETNS SOCKET [VAR=VALUE ...] -- CMD...
	[ $# -ge 5 ] || die "usage: hack/nodes/deb-root.sh unit-exec DIR NETNS SOCKET [VAR=VALUE ...] -- CMD..."
	local dir=$1 ns=$2
	shift 2
	[ -e "/run/netns/$ns" ] || die "deb-root: no network namespace $ns"
	exec nsenter --net="/run/netns/$ns" -- unshare --mount --propagation slave -- "$0" unit-exec-mounts "$dir" "$@"
}

cmd_unit_exec_mounts() { # DIR SOCKET [VAR=VALUE ...] -- CMD...
	local dir=$1 sock=$2 vars=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	shift
	# runc needs the root to be a mount point.
	mount --bind "$dir" "$dir"
	mount -t proc proc "$dir/proc"
	mount --rbind /sys "$dir/sys"
	mount --rbind /dev "$dir/dev"
	if [ -n "$sock" ]; then
		local opts=() v
		for v in "${vars[@]}"; do opts+=(-E "$v"); done
		exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin systemd-socket-activate -l "$dir$sock" "${opts[@]}" -- \
			"$0" unit-exec-root "$dir" "$@"
	fi
	exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "${vars[@]}" "$0" unit-exec-root "$dir" "$@"
}

cmd_unit_exec_root() { # DIR CMD...
	local dir=$1
	shift
	cd "$dir"
	mkdir -p .host
	pivot_root . .host
	# shellcheck disable=SC2016 # expanded by the inner shell
	exec chroot . /bin/sh -c 'umount -l /.host && rmdir /.host && exec "$@"' sh "$@"
}

[ "$(id -u)" = 0 ] || die "hack/nodes/deb-root.sh needs root"
cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
tarball) cmd_tarball ;;
extract) cmd_extract "${1:-}" ;;
run) cmd_run "$@" ;;
unit-exec) cmd_unit_exec "$@" ;;
unit-exec-mounts) cmd_unit_exec_mounts "$@" ;;
unit-exec-root) cmd_unit_exec_root "$@" ;;
mirror) mirror ;;
*) die "usage: hack/nodes/deb-root.sh tarball | extract DIR | run DIR CMD... | unit-exec DIR NETNS SOCKET [VAR=VALUE ...] -- CMD... | mirror" ;;
esac
