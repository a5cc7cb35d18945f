#!/usr/bin/env bash
# The guest root of the daemon's runs in the zoned guest, all started with
# hack/zoned/zns-vm.sh run-root: hack/zoned/zns-vm/docker-e2e.sh (the end-to-end
# test hack/zoned/test-zns.sh runs), hack/zoned/zns-vm/docker-trace.sh (a
# whole trace, hack/zoned/zns-trace-vm.sh) and hack/zoned/zns-vm/docker-iocost.sh
# (the I/O controller beside the daemon's pacing, hack/zoned/zns-iocost-vm.sh).
# It holds the patched dockerd and
# docker-proxy (make build), the docker CLI, the runtime stack in
# $AB_PREFIX/bin (containerd, its runc shim, runc, CRIU, tini as docker-init;
# hack/stack/install-deps.sh), bash, jq, util-linux's blkzone, mkfs.ext4, e2fsck,
# dmsetup (hack/zoned/zns-vm/docker-faults.sh), iproute2's ip, the NFS
# server's rpc.nfsd, rpc.mountd and exportfs and mount.nfs
# (hack/zoned/zns-vm/docker-nfs.sh), systemd, systemctl, unshare and
# nsenter (hack/zoned/zns-vm/docker-systemd.sh), date and
# a neighbour that commits (hack/zoned/zns-vm/commits), each with the
# shared libraries it links (as ldd finds them here), the memory holder's
# image (hack/hosts/images.sh) and the scripts. Everything comes from this
# machine; nothing is downloaded. Busybox, which the guest's initramfs has,
# is /bin.
#
# usage: hack/zoned/zns-vm/docker-root.sh DIR     (DIR empty or missing)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../../lib.sh"

dir=${1:?usage: hack/zoned/zns-vm/docker-root.sh DIR}
mkdir -p "$dir"
[ -z "$(ls -A "$dir")" ] || die "zns-vm: $dir is not empty"

need() { # path what: a file the root needs, or an error saying where it comes from
	[ -f "$1" ] || die "zns-vm: $1 is missing: $2"
}
need "$AB_ROOT/bin/dockerd-patched" "run 'make build'"
need "$AB_ROOT/bin/docker-proxy" "run 'make build'"
need "$AB_BUILD/images/memholder.tar" "run 'hack/hosts/images.sh build'"
for b in containerd containerd-shim-runc-v2 runc criu docker-init; do
	need "$AB_PREFIX/bin/$b" "run hack/stack/install-deps.sh"
done

# program-on-this-host path-in-the-root
progs=(
	"$AB_ROOT/bin/dockerd-patched" /usr/local/bin/dockerd
	"$AB_ROOT/bin/docker-proxy" /usr/local/bin/docker-proxy
)
for b in containerd containerd-shim-runc-v2 runc criu docker-init; do
	progs+=("$AB_PREFIX/bin/$b" "/usr/local/bin/$b")
done
for b in docker bash jq blkzone tar gzip date mkfs.ext4 e2fsck dmsetup ip rpc.nfsd rpc.mountd exportfs mount.nfs unshare nsenter systemctl; do
	p=$(command -v "$b") || die "zns-vm: $b is missing (hack/stack/install-deps.sh)"
	case $b in
	docker) progs+=("$p" /usr/local/bin/docker) ;;
	blkzone | mkfs.ext4 | e2fsck | dmsetup | ip | rpc.nfsd | rpc.mountd | exportfs) progs+=("$p" "/usr/sbin/$b") ;;
	mount.nfs) progs+=("$p" "/sbin/$b") ;;
	systemctl) progs+=("$p" /usr/bin/systemctl) ;;
	*) progs+=("$p" "/usr/bin/$b") ;;
	esac
done

# systemd, run as a container's PID 1 (hack/zoned/zns-vm/docker-systemd.sh)
need /lib/systemd/systemd "install systemd (hack/stack/install-deps.sh)"
progs+=(/lib/systemd/systemd /lib/systemd/systemd)

mkdir -p "$dir/usr/local/bin" "$dir/usr/bin" "$dir/usr/sbin" "$dir/sbin" "$dir/lib/systemd" "$dir/etc" "$dir/images" "$dir/var/lib"
libs=()
for ((i = 0; i < ${#progs[@]}; i += 2)); do
	src=${progs[i]} dst=$dir${progs[i + 1]}
	cp -L "$src" "$dst"
	chmod 0755 "$dst"
	# the libraries ldd resolves, and the dynamic loader (the line without =>)
	out=$(LC_ALL=C ldd "$src" 2>&1) || true
	case $out in
	*"not a dynamic executable"* | *"statically linked"*) continue ;;
	*"not found"*) die "zns-vm: $src needs libraries this machine lacks: $out" ;;
	esac
	while read -r lib; do
		libs+=("$lib")
	done < <(awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' <<<"$out")
done
for lib in $(printf '%s\n' "${libs[@]}" | sort -u); do
	mkdir -p "$dir$(dirname "$lib")"
	cp -L "$lib" "$dir$lib"
done
# scripts start with #!/usr/bin/env bash; busybox's env is /bin/env
ln -s /bin/busybox "$dir/usr/bin/env"
# mount.nfs is also mount.nfs4; libtirpc (the NFS server's rpc.mountd)
# reads its transports from /etc/netconfig, rpc.nfsd its port from
# /etc/services
ln -s mount.nfs "$dir/sbin/mount.nfs4"
cp /etc/netconfig /etc/services /etc/protocols "$dir/etc/"

printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$dir/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$dir/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$dir/etc/hosts"
# no name server: the guest has no network beyond loopback
: >"$dir/etc/resolv.conf"
# CRIU locks a container's network while it dumps; by default with
# iptables-restore, which the guest has not: with nftables (CRIU's own
# libnftables) instead. runc has CRIU read this file for its requests.
mkdir -p "$dir/etc/criu"
echo 'network-lock nftables' >"$dir/etc/criu/runc.conf"
cp "$AB_BUILD/images/memholder.tar" "$dir/images/memholder.tar"
# the neighbour of docker-iocost.sh, a static Go program
(cd "$AB_ROOT/hack/zoned/zns-vm/commits" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath \
	-ldflags='-s -w' -o "$dir/usr/local/bin/commits" .)
(cd "$AB_ROOT/hack/zoned/zns-vm/logwrites" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath \
	-ldflags='-s -w' -o "$dir/usr/local/bin/logwrites" .)
for f in docker-e2e.sh docker-faults.sh docker-kills.sh docker-nfs.sh docker-powercut.sh docker-systemd.sh docker-trace.sh docker-iocost.sh docker-lib.sh; do
	install -m 0755 "$AB_ROOT/hack/zoned/zns-vm/$f" "$dir/$f"
done
log "zns-vm: guest root in $dir ($(du -sh "$dir" | cut -f1))"
