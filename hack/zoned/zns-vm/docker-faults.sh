#!/usr/bin/env bash
# A checkpoint whose disk fails under it, or fills, in the middle of its
# copy: it runs as root inside the guest of `hack/zoned/zns-vm.sh run-root`
# (hack/zoned/test-zns.sh starts it there, in a root made by
# hack/zoned/zns-vm/docker-root.sh), whose kernel has device-mapper. The
# checkpoint directory is an ext4 file system on a device-mapper device over
# the guest's conventional namespace ($ZNS_PLAIN_DEVICE). The fault
# ($FAULTS_FAULT) comes while the daemon writes a checkpoint's images there:
#
#   eio     the device's table is swapped for the error target, so that every
#           write and flush below the file system fails with EIO, as a disk
#           that dies does;
#   enospc  another writer fills the file system, as a neighbour's log does.
#
#   1. dockerd with a write cap (CRIU dumps into scratch, the daemon copies
#      the images out after the freeze) and a memory holder;
#   2. a checkpoint without --leave-running into the dm directory, the fault
#      in the middle of its copy: the create fails, naming the cause
#      and where the images are kept; the holder has exited (CRIU stopped it)
#      and no checkpoint is listed (no phantom); the dump is in scratch, with
#      its mark;
#   3. the disk is back (eio: the linear table again, e2fsck; enospc: the
#      other writer's file removed): the same create
#      commits the kept images, without a new dump; the holder restores from
#      the checkpoint directory, counting on from where the checkpoint took
#      it, its memory verified; nothing is left in scratch.
#
# It ends with a line of counts: containers whose state was lost (must be
# 0), phantom checkpoints (must be 0), errors that did not name their cause.
#
# Environment: ZNS_PLAIN_DEVICE (set by hack/zoned/zns-vm.sh), FAULTS_FAULT
# (eio or enospc) [eio], FAULTS_MIB (the
# memory holder's size in MiB) [16], FAULTS_CAP (the write cap) [1MiB: the
# copy of 16 MiB takes 16 s, time to fail the disk in it].
set -euo pipefail

FAULT=${FAULTS_FAULT:-eio}
case $FAULT in
eio | enospc) ;;
*) echo "FAULTS_FAULT: want eio or enospc, got '$FAULT'" >&2; exit 2 ;;
esac
# shellcheck disable=SC2034 # read by docker-lib.sh
NAME=faults-$FAULT
ZONED=0
MIB=${FAULTS_MIB:-16}
CAP=${FAULTS_CAP:-1MiB}
PLAIN=${ZNS_PLAIN_DEVICE:?ZNS_PLAIN_DEVICE is not set: run this in hack/zoned/zns-vm.sh run-root}
# shellcheck source=hack/zoned/zns-vm/docker-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/docker-lib.sh"

DM=cpdisk
ROOT=/ckpt
# no udev in the guest: libdevmapper makes /dev/mapper's nodes itself
export DM_DISABLE_UDEV=1
lost=0 phantom=0 unnamed=0

# table linear|error: the dm device's table, swapped in place.
table() {
	local sectors
	sectors=$(cat "/sys/class/block/${PLAIN#/dev/}/size")
	case $1 in
	linear) echo "0 $sectors linear $PLAIN 0" ;;
	error) echo "0 $sectors error" ;;
	esac
}
swap_table() {
	if ! { dmsetup suspend --noflush "$DM" && table "$1" | dmsetup load "$DM" && dmsetup resume "$DM"; }; then
		fail "dmsetup could not swap $DM to its $1 table"
	fi
}
listed() { docker checkpoint ls --checkpoint-dir "$ROOT" "$MH" | tail -n +2 | grep -qx "$1"; }

guest_setup

step "1. dockerd with checkpoints.write-bandwidth=$CAP, a memory holder of $MIB MiB"
dm_create "$DM" "$(table linear)"
mkfs.ext4 -q -F "/dev/mapper/$DM" || fail "mkfs.ext4 on /dev/mapper/$DM failed"
mkdir -p "$ROOT"
mount "/dev/mapper/$DM" "$ROOT" || fail "mount /dev/mapper/$DM failed"
chmod 0700 "$ROOT"
write_config "\"write-pace\": \"fixed\", \"write-bandwidth\": \"$CAP\""
start_dockerd
docker load -q -i /images/memholder.tar >/dev/null || fail "docker load of the memory holder failed"
start_holder "$MIB"

step "2. the fault ($FAULT) in the middle of the paced copy of a checkpoint that stops the holder"
before=$(last_count)
docker checkpoint create --checkpoint-dir "$ROOT" "$MH" cp1 >"$W/cp1.out" 2>&1 &
cli=$!
wait_for 180 copy_under_way "$ROOT" cp1 || fail "the paced copy of cp1 never began: $(cat "$W/cp1.out")"
case $FAULT in
eio)
	swap_table error
	note "the disk under $ROOT fails from now on"
	cause='input/output error|read-only file system'
	;;
enospc)
	# (dd's own ENOSPC ends it)
	dd if=/dev/zero of="$ROOT/filler" bs=1M 2>/dev/null || true
	note "$ROOT is full: $(df -k "$ROOT" | tail -n 1)"
	cause='no space left on device'
	;;
esac
create_failed_kept "$cli" "$W/cp1.out" "$cause"
if listed cp1 2>/dev/null; then
	phantom=$((phantom + 1))
fi
marks=$(find "$SCRATCH" -maxdepth 1 -name '*.done' | wc -l)
[ "$marks" = 1 ] || fail "$marks finished dumps in scratch, not 1: $(ls -A "$SCRATCH")"

step "3. the disk is back: the same create commits the kept images; the holder restores"
case $FAULT in
eio)
	umount "$ROOT" || fail "umount $ROOT failed"
	swap_table linear
	e2fsck -fy "/dev/mapper/$DM" >"$W/fsck.out" 2>&1 || [ $? -le 1 ] || fail "e2fsck: $(tail -n 5 "$W/fsck.out")"
	mount "/dev/mapper/$DM" "$ROOT" || fail "mount /dev/mapper/$DM failed after e2fsck"
	;;
enospc) rm -f "$ROOT/filler" ;;
esac
docker checkpoint create --checkpoint-dir "$ROOT" "$MH" cp1 >/dev/null || fail "the create of cp1 again failed"
grep -q 'Committed the checkpoint images kept from an earlier create' "$LOG" || fail "dockerd did not log the kept images committed"
listed cp1 || fail "cp1 is not listed after the create again"
[ -f "$ROOT/cp1/inventory.img" ] || fail "cp1 committed without its inventory.img"
# (in a subshell: a failed restore is counted, not the end of the run)
if ! (RESTORE_DIR=$ROOT restore_verified cp1 "$before"); then
	lost=$((lost + 1))
fi

printf '%s: lost=%d phantom=%d unnamed=%d\n' "$NAME" "$lost" "$phantom" "$unnamed"
[ "$lost$phantom" = 00 ] || fail "state lost ($lost) or phantom checkpoints ($phantom)"
note "passed in $SECONDS s"
