#!/usr/bin/env bash
# A power cut at every moment a checkpoint is created and deleted, replayed
# from device-mapper's log-writes target: it runs as root inside the guest of
# `hack/zoned/zns-vm.sh run-root` (started there by hack/zoned/test-zns.sh,
# in a root made by hack/zoned/zns-vm/docker-root.sh).
#
# The checkpoint directory is an ext4 file system on a log-writes device over
# a region of the guest's conventional namespace ($ZNS_PLAIN_DEVICE), which
# records every write, flush and FUA the file system sends, in order, in a
# second region. The daemon creates a checkpoint there (with
# --leave-running, no write cap: CRIU writes the images straight into the
# directory and the daemon makes them durable and commits them by a rename)
# and deletes it, with marks put in the log where each begins and where the
# client heard it had succeeded. Then the log is replayed (logwrites, a tool
# of hack/zoned/zns-vm/logwrites) onto the zeroed region, entry by entry; at
# every flush or FUA, the state a power cut at that moment leaves, a snapshot
# of the region (dm-snapshot, its changes thrown away) is checked with
# e2fsck and mounted, and
#
#   - after the create succeeded and before the delete began, the
#     checkpoint must be there with every image as written (else: lost);
#   - at every moment, a checkpoint that is there has every image as written
#     (else: phantom, a half-written checkpoint listed);
#   - after the delete succeeded, it must be gone (else: phantom).
#
# It ends with a line of counts: moments checked, lost, phantom, file
# systems e2fsck could not repair.
#
# Environment: ZNS_PLAIN_DEVICE (set by hack/zoned/zns-vm.sh; 96 MiB at
# least), POWERCUT_MIB (the memory holder's size in MiB) [8].
set -euo pipefail

# shellcheck disable=SC2034 # read by docker-lib.sh
NAME=powercut
ZONED=0
MIB=${POWERCUT_MIB:-8}
PLAIN=${ZNS_PLAIN_DEVICE:?ZNS_PLAIN_DEVICE is not set: run this in hack/zoned/zns-vm.sh run-root}
# shellcheck source=hack/zoned/zns-vm/docker-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/docker-lib.sh"

ROOT=/ckpt
MNT=/mnt/powercut
# no udev in the guest: libdevmapper makes /dev/mapper's nodes itself
export DM_DISABLE_UDEV=1
# regions of the plain device, in 512-byte sectors: the file system's, the
# log's, the snapshots' copy-on-write store
FS_SECTORS=$((32 << 11))
LOG_SECTORS=$((48 << 11))
COW_SECTORS=$((16 << 11))
points=0 lost=0 phantom=0 unrepaired=0

mark() { dmsetup message pclw 0 mark "$1" || fail "dmsetup could not mark $1 in the log"; }
sums() { (cd "$1" && find . -type f | sort | xargs sha256sum); }

guest_setup

step "1. an ext4 file system on a log-writes device; dockerd; a memory holder of $MIB MiB"
size=$(cat "/sys/class/block/${PLAIN#/dev/}/size")
[ "$size" -ge $((FS_SECTORS + LOG_SECTORS + COW_SECTORS)) ] ||
	fail "$PLAIN has $size sectors, fewer than the $((FS_SECTORS + LOG_SECTORS + COW_SECTORS)) this needs (ZNS_VM_PLAIN_SIZE=96M)"
dm_create pcdata "0 $FS_SECTORS linear $PLAIN 0"
dm_create pclog "0 $LOG_SECTORS linear $PLAIN $FS_SECTORS"
dm_create pccow "0 $COW_SECTORS linear $PLAIN $((FS_SECTORS + LOG_SECTORS))"
# the replay starts from the region as the log began: zeros
dd if=/dev/zero of=/dev/mapper/pcdata bs=1M count=32 conv=fsync 2>/dev/null || fail "zeroing pcdata failed"
dd if=/dev/zero of=/dev/mapper/pclog bs=4096 count=1 conv=fsync 2>/dev/null || fail "zeroing the log's super block failed"
dm_create pclw "0 $FS_SECTORS log-writes /dev/mapper/pcdata /dev/mapper/pclog"
# everything written now (no lazy initialisation after the mount)
mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 /dev/mapper/pclw || fail "mkfs.ext4 on the log-writes device failed"
mkdir -p "$ROOT" "$MNT"
mount /dev/mapper/pclw "$ROOT" || fail "mount /dev/mapper/pclw failed"
chmod 0700 "$ROOT"
write_config
start_dockerd
docker load -q -i /images/memholder.tar >/dev/null || fail "docker load of the memory holder failed"
start_holder "$MIB"

step "2. a checkpoint created and deleted in the logged directory"
sync
mark create-begin
docker checkpoint create --leave-running --checkpoint-dir "$ROOT" "$MH" cp1 >/dev/null || fail "the create failed"
mark created
[ -f "$ROOT/cp1/inventory.img" ] || fail "cp1 has no inventory.img after the create"
sums "$ROOT/cp1" >"$W/cp1.sums"
note "cp1: $(wc -l <"$W/cp1.sums") files, $(du -sk "$ROOT/cp1" | cut -f1) KiB"
mark delete-begin
docker checkpoint rm --checkpoint-dir "$ROOT" "$MH" cp1 || fail "the delete failed"
mark deleted
[ ! -e "$ROOT/cp1" ] || fail "cp1 is there after the delete"
docker rm -f "$MH" >/dev/null
kill "$DOCKERD_PID"
wait_for 60 gone "$DOCKERD_PID" || fail "dockerd did not stop"
umount "$ROOT" || fail "umount $ROOT failed"
dmsetup remove pclw || fail "dmsetup remove pclw failed"

step "3. a power cut at every flush: replayed, repaired, checked"
logwrites list /dev/mapper/pclog >"$W/entries" || fail "logwrites could not read the log"
note "the log: $(wc -l <"$W/entries") entries, $(awk '$2 ~ /FLUSH|FUA/' "$W/entries" | wc -l) flushes or FUA writes"
for m in create-begin created delete-begin deleted; do
	grep -q " MARK .* $m\$" "$W/entries" || fail "the log has no mark $m"
done
# the moments: each flush or FUA write after create-begin, and the log's end,
# with the phase (the last mark before it)
awk '$2 ~ /MARK/ {phase = $5} phase != "" && ($2 ~ /FLUSH|FUA/ || NR == n) {print $1, phase}' \
	n="$(wc -l <"$W/entries")" "$W/entries" >"$W/points"
applied=0
while read -r at phase; do
	logwrites replay /dev/mapper/pclog /dev/mapper/pcdata "$applied" "$((at + 1))" || fail "replaying entries $applied to $at failed"
	applied=$((at + 1))
	points=$((points + 1))
	dm_create pcsnap "0 $FS_SECTORS snapshot /dev/mapper/pcdata /dev/mapper/pccow N 8"
	rc=0
	e2fsck -fy /dev/mapper/pcsnap >"$W/fsck.out" 2>&1 || rc=$?
	if [ "$rc" -gt 1 ]; then
		unrepaired=$((unrepaired + 1))
		note "entry $at ($phase): e2fsck status $rc: $(tail -n 3 "$W/fsck.out" | tr '\n' ' ')"
	else
		mount -o ro /dev/mapper/pcsnap "$MNT" || fail "entry $at: mount of the replayed file system failed"
		there=0 whole=0
		if [ -e "$MNT/cp1" ]; then
			there=1
			(cd "$MNT/cp1" && sha256sum -c -s "$W/cp1.sums") 2>/dev/null && whole=1
		fi
		case $phase/$there/$whole in
		*/1/0)
			phantom=$((phantom + 1))
			note "entry $at ($phase): cp1 is there without all its images as written"
			;;
		created/0/*)
			lost=$((lost + 1))
			note "entry $at ($phase): cp1 is gone, though its create had succeeded"
			;;
		deleted/1/*)
			phantom=$((phantom + 1))
			note "entry $at ($phase): cp1 is back, though its delete had succeeded"
			;;
		esac
		umount "$MNT"
	fi
	dmsetup remove pcsnap || fail "dmsetup remove pcsnap failed"
done <"$W/points"

printf '%s: points=%d lost=%d phantom=%d unrepaired=%d\n' "$NAME" "$points" "$lost" "$phantom" "$unrepaired"
[ "$points" -gt 0 ] || fail "no moment was checked"
[ "$lost$phantom$unrepaired" = 000 ] || fail "state lost ($lost), phantom checkpoints ($phantom) or file systems e2fsck could not repair ($unrepaired)"
note "passed in $SECONDS s"
