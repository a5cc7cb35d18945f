#!/usr/bin/env bash
# A checkpoint moved between two hosts through an NFS checkpoint root, and the
# NFS server's disk full in the middle of a checkpoint's copy: it runs as root inside
# the guest of `hack/zoned/zns-vm.sh run-root` (started there by
# hack/zoned/test-faults.sh, in a root made by hack/zoned/zns-vm/docker-root.sh),
# whose kernel has the NFS server and client (this host's has neither).
#
# The guest's kernel NFS server (nfsd, NFSv4 only, rpc.mountd for its export
# table) exports an ext4 file system on the guest's conventional namespace.
# Two daemons mount it, each with its own NFS client:
#
#   host A  dockerd in the guest's network namespace, the export mounted
#           from 127.0.0.1;
#   host B  a second dockerd with a data-root, exec-root, containerd and
#           socket of its own, in a network namespace of its own joined to
#           the first by a veth pair, the export mounted from 10.88.0.1 in
#           its own mount namespace.
#
# Both mounts are NFS 4.2 with the defaults (hard). A server that stops
# answering is not a case here: under a hard mount, and under a soft one
# too (NFSv4's lease recovery waits for the server), the copy waits until it
# is back, the images meanwhile in scratch (a daemon killed then commits
# them at its next start: hack/zoned/zns-vm/docker-kills.sh).
#
# Both have a write cap (CRIU dumps into scratch, the daemon copies the images
# out after the freeze) and mount the export's checkpoints directory as their
# --checkpoint-dir:
#
#   1. A checkpoints a memory holder without --leave-running (it stops);
#      B lists the checkpoint, restores it into a container of its own,
#      which counts on from where A's stopped, its memory verified;
#   2. B deletes the checkpoint; it is gone from the export and from A's
#      list (the commit and the delete rename on a file system that refuses
#      RENAME_NOREPLACE, as NFS does);
#   3. A checkpoints a new holder, and a writer on the server fills the
#      exported file system in the middle of the copy (NFS reports it at the
#      write-back or the fsync, not at the write): the create fails, naming
#      the cause and where the images are kept; no checkpoint is listed;
#      once the writer's file is removed, the same create commits the kept
#      images, and B restores them, memory verified; no staging directory
#      is left in the export.
#
# It ends with a line of counts: checkpoints moved, containers whose state
# was lost (must be 0), phantom checkpoints (must be 0), errors that did not
# name their cause.
#
# Environment: ZNS_PLAIN_DEVICE (set by hack/zoned/zns-vm.sh), NFS_MIB (the
# memory holders' size in MiB) [16], NFS_CAP (the write cap) [1MiB: the copy of
# 16 MiB takes 16 s, time to fill the disk in it].
set -euo pipefail

# shellcheck disable=SC2034 # read by docker-lib.sh
NAME=nfs
ZONED=0
MIB=${NFS_MIB:-16}
CAP=${NFS_CAP:-1MiB}
PLAIN=${ZNS_PLAIN_DEVICE:?ZNS_PLAIN_DEVICE is not set: run this in hack/zoned/zns-vm.sh run-root}
# shellcheck source=hack/zoned/zns-vm/docker-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/docker-lib.sh"

EXPORT=/srv/nfs
NS=hostb
A_IP=10.88.0.1 B_IP=10.88.0.2
A_MNT=/mnt/nfs-a B_MNT=/mnt/nfs-b
ROOT_A=$A_MNT/checkpoints ROOT_B=$B_MNT/checkpoints
B_DATA=/var/lib/docker-b B_EXEC=/run/docker-b B_HOST=unix:///run/docker-b.sock
B_CONFIG=/etc/docker/daemon-b.json B_LOG=/tmp/dockerd-b.log
A_HOST=$DOCKER_HOST A_DATA=$DATA A_SCRATCH=$SCRATCH
moved=0 lost=0 phantom=0 unnamed=0

nfs_diagnostics() {
	echo "--- the last lines of host B's dockerd log ($B_LOG)"
	tail -n 30 "$B_LOG" 2>/dev/null | cut -c1-400
	echo "--- the export ($EXPORT)"
	find "$EXPORT" -maxdepth 3 2>/dev/null | head -n 40
	echo "--- the kernel's last lines"
	dmesg 2>/dev/null | tail -n 20
}
trap 'rc=$?; [ "$rc" = 0 ] || nfs_diagnostics >&2; (exit "$rc"); on_exit' EXIT

# on_a, on_b: the docker CLI and the holder functions of docker-lib.sh act
# on host A's daemon, or host B's, from now on.
on_a() { DOCKER_HOST=$A_HOST DATA=$A_DATA SCRATCH=$A_SCRATCH; }
on_b() { DOCKER_HOST=$B_HOST DATA=$B_DATA SCRATCH=$B_EXEC/checkpoint-scratch; }

listed_on() { # root name: the holder (of the host acted on) lists checkpoint name in root
	docker checkpoint ls --checkpoint-dir "$1" "$MH" | tail -n +2 | grep -qx "$2"
}

guest_setup

step "1. the NFS server, host A's mount, host B's network namespace, mount and daemon"
mkdir -p "$EXPORT" "$A_MNT" "$B_MNT" /var/lib/nfs/v4recovery "$B_DATA" "$B_EXEC" /run/netns
mkfs.ext4 -q -F "$PLAIN" || fail "mkfs.ext4 on $PLAIN failed"
mount "$PLAIN" "$EXPORT" || fail "mount $PLAIN $EXPORT failed"
mkdir -p "$EXPORT/checkpoints"
chmod 0700 "$EXPORT/checkpoints"
: >/var/lib/nfs/etab
: >/var/lib/nfs/rmtab
echo "$EXPORT 127.0.0.1(rw,sync,no_root_squash,no_subtree_check,fsid=0) $B_IP(rw,sync,no_root_squash,no_subtree_check,fsid=0)" >/etc/exports
mount -t nfsd nfsd /proc/fs/nfsd || fail "mount of the nfsd file system failed"
exportfs -ra || fail "exportfs -ra failed"
rpc.mountd -N 2 -N 3 || fail "rpc.mountd failed"
# NFSv4 only, its grace period (no opens) as short as the kernel allows
rpc.nfsd -N 3 --grace-time 10 --lease-time 10 4 || fail "rpc.nfsd failed"
ip link add vetha type veth peer name vethb || fail "ip link add (veth) failed"
ip netns add "$NS" || fail "ip netns add $NS failed"
ip link set vethb netns "$NS"
ip addr add "$A_IP/24" dev vetha
ip link set vetha up
ip -n "$NS" addr add "$B_IP/24" dev vethb
ip -n "$NS" link set vethb up
ip -n "$NS" link set lo up
mount.nfs4 127.0.0.1:/ "$A_MNT" -o vers=4.2 || fail "host A: mount.nfs4 127.0.0.1:/ failed"
note "host A mounted the export: $(grep " $A_MNT " /proc/mounts)"
mount -t tmpfs -o mode=0711 tmpfs "$B_DATA"
cat >"$B_CONFIG" <<EOF
{
  "data-root": "$B_DATA",
  "exec-root": "$B_EXEC",
  "pidfile": "/run/docker-b.pid",
  "hosts": ["$B_HOST"],
  "experimental": true,
  "bridge": "none",
  "iptables": false,
  "ip6tables": false,
  "userland-proxy-path": "/usr/local/bin/docker-proxy",
  "checkpoints": {"write-pace": "fixed", "write-bandwidth": "$CAP"}
}
EOF
# ip netns exec gives host B a mount namespace of its own (a slave of the
# guest's) with the namespace's sysfs, without the cgroup file system
# shellcheck disable=SC2016 # expanded by that shell
ip netns exec "$NS" sh -c '
	mount -t cgroup2 cgroup2 /sys/fs/cgroup || exit 1
	mount.nfs4 "$1:/" "$2" -o vers=4.2 || exit 1
	grep " $2 " /proc/mounts >&2
	exec dockerd --config-file "$3"
' hostb "$A_IP" "$B_MNT" "$B_CONFIG" >>"$B_LOG" 2>&1 &
B_PID=$!
write_config "\"write-pace\": \"fixed\", \"write-bandwidth\": \"$CAP\""
start_dockerd
on_b
b_up() {
	kill -0 "$B_PID" 2>/dev/null || fail "host B's dockerd exited during start-up: $(tail -n 5 "$B_LOG")"
	timeout 20 docker version >/dev/null 2>&1
}
wait_for 180 b_up || fail "host B's dockerd (pid $B_PID) did not answer within 180 s"
note "host B's dockerd up (pid $B_PID), its mount: $(grep -m1 'nfs4' "$B_LOG" || true)"
for h in a b; do
	"on_$h"
	docker load -q -i /images/memholder.tar >/dev/null || fail "host ${h^^}: docker load of the memory holder failed"
done

step "2. host A checkpoints a holder of $MIB MiB, which stops; host B restores it"
on_a
start_holder "$MIB"
before=$(last_count)
docker checkpoint create --checkpoint-dir "$ROOT_A" "$MH" cp1 >/dev/null || fail "host A: checkpoint create cp1 failed"
wait_for 30 state_is exited || fail "host A: the holder is $(state) after a checkpoint without --leave-running"
listed_on "$ROOT_A" cp1 || fail "host A: cp1 is not listed"
[ -s "$EXPORT/checkpoints/cp1/inventory.img" ] || fail "the export has no cp1/inventory.img: $(ls -A "$EXPORT/checkpoints")"
on_b
docker create --name "$MH" --network none ab/memholder memholder "$MIB" >/dev/null || fail "host B: docker create failed"
use_holder "$MH"
listed_on "$ROOT_B" cp1 || fail "host B does not list cp1, which host A committed"
if (RESTORE_DIR=$ROOT_B restore_verified cp1 "$before"); then
	moved=$((moved + 1))
else
	lost=$((lost + 1))
fi

step "3. host B deletes the checkpoint; it is gone from the export and from host A's list"
docker checkpoint rm --checkpoint-dir "$ROOT_B" "$MH" cp1 || fail "host B: checkpoint rm cp1 failed"
left=$(find "$EXPORT/checkpoints" -mindepth 1 -maxdepth 1)
[ -z "$left" ] || fail "the export still holds [$left] after the delete"
on_a
use_holder "$MH"
! listed_on "$ROOT_A" cp1 || fail "host A still lists cp1, which host B deleted"

step "4. host A checkpoints a new holder; the server's disk fills in the middle of the copy"
docker rm -f "$MH" >/dev/null
start_holder "$MIB"
before=$(last_count)
docker checkpoint create --checkpoint-dir "$ROOT_A" "$MH" cp2 >"$W/cp2.out" 2>&1 &
cli=$!
wait_for 180 copy_under_way "$EXPORT/checkpoints" cp2 || fail "the paced copy of cp2 never began: $(cat "$W/cp2.out")"
copied=$(du -sk "$EXPORT/checkpoints" | cut -f1)
# (dd's own ENOSPC ends it)
dd if=/dev/zero of="$EXPORT/filler" bs=1M 2>/dev/null || true
note "the export is full at $copied KiB of cp2 copied: $(df -k "$EXPORT" | tail -n 1)"
cause='no space left on device'
create_failed_kept "$cli" "$W/cp2.out" "$cause"

step "5. no checkpoint listed; room again: the same create commits the kept images; host B restores them"
if listed_on "$ROOT_A" cp2 2>/dev/null; then
	phantom=$((phantom + 1))
fi
rm -f "$EXPORT/filler"
docker checkpoint create --checkpoint-dir "$ROOT_A" "$MH" cp2 >/dev/null || fail "host A: the create of cp2 again failed"
grep -q 'Committed the checkpoint images kept from an earlier create' "$LOG" || fail "host A's dockerd did not log the kept images committed"
listed_on "$ROOT_A" cp2 || fail "host A: cp2 is not listed after the create again"
stale=$(find "$EXPORT/checkpoints" -mindepth 1 -maxdepth 1 -name '.*')
[ -z "$stale" ] || fail "the export holds [$stale] beside cp2"
on_b
docker rm -f "$MH" >/dev/null
docker create --name "$MH" --network none ab/memholder memholder "$MIB" >/dev/null || fail "host B: docker create failed"
use_holder "$MH"
if (RESTORE_DIR=$ROOT_B restore_verified cp2 "$before"); then
	moved=$((moved + 1))
else
	lost=$((lost + 1))
fi

printf '%s: moved=%d lost=%d phantom=%d unnamed=%d\n' "$NAME" "$moved" "$lost" "$phantom" "$unnamed"
[ "$lost$phantom" = 00 ] || fail "state lost ($lost) or phantom checkpoints ($phantom)"
[ "$moved" = 2 ] || fail "$moved of 2 checkpoints moved"
note "passed in $SECONDS s"
