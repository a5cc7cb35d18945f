#!/usr/bin/env bash
# dockerd killed (SIGKILL) in each phase of a checkpoint, with and without
# --leave-running: it runs as root inside the guest of
# `hack/zoned/zns-vm.sh run-root` (started there by hack/zoned/test-faults.sh,
# in a root made by hack/zoned/zns-vm/docker-root.sh).
#
# The daemon has a write cap (CRIU dumps into scratch, the daemon copies the
# images out after the freeze), one checkpoint slot and live-restore. For each case a
# memory holder is checkpointed and dockerd is killed
#
#   queue    while the checkpoint waits for the slot another container's
#            checkpoint holds (its CRIU dumps 32 MiB of random data in a
#            tmpfs through gzip; the daemon's queue metric says one waits);
#   dump     while CRIU dumps (a criu process runs);
#   copy     while the paced copy writes the images (a staging directory's
#            pages grow);
#   unmount  as copy, into a custom checkpoint directory on its own ext4,
#            which is unmounted before dockerd starts again and mounted
#            after (a mount that comes late at boot);
#
# then started again, and the holder judged: running (it must count on and
# verify its memory again, else its state is lost, as in a container left
# frozen; a checkpoint listed beside it must restore, after a stop, counting
# on from where it was taken, its memory verified, else it is a phantom), or
# stopped
# (CRIU stopped it: a checkpoint must be listed, after a create again for
# unmount, and restore so, else its state is lost).
#
# The commit and the delete are a rename each, between two flushes; a kill
# there leaves what a power cut leaves and more (the page cache survives),
# and hack/zoned/zns-vm/docker-powercut.sh checks every flush of both.
#
# It ends with a line of counts: cases, containers whose state was lost (must
# be 0), phantom checkpoints (must be 0).
#
# Environment: ZNS_PLAIN_DEVICE (set by hack/zoned/zns-vm.sh), KILLS_CASES
# [queue dump copy unmount, each with and without --leave-running but
# unmount], KILLS_MIB (the holders' size in MiB) [32], KILLS_CAP [2MiB].
set -euo pipefail

# shellcheck disable=SC2034 # read by docker-lib.sh
NAME=kills
ZONED=0
MIB=${KILLS_MIB:-32}
CAP=${KILLS_CAP:-2MiB}
CASES=${KILLS_CASES:-queue:0 queue:1 dump:0 dump:1 copy:0 copy:1 unmount:0}
PLAIN=${ZNS_PLAIN_DEVICE:?ZNS_PLAIN_DEVICE is not set: run this in hack/zoned/zns-vm.sh run-root}
# shellcheck source=hack/zoned/zns-vm/docker-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/docker-lib.sh"

ROOT=/ckpt
export DM_DISABLE_UDEV=1
cases=0 lost=0 phantom=0

# criu_runs: a CRIU process runs (the guest runs nothing else's)
criu_runs() {
	local f comm
	for f in /proc/[0-9]*/comm; do
		read -r comm <"$f" 2>/dev/null || continue
		[ "$comm" != criu ] || return 0
	done
	return 1
}
no_criu() { ! criu_runs; }
waiting() {
	[ "$(wget -qO- "http://$METRICS/metrics" | awk '/^engine_daemon_checkpoints_waiting / {print $2}')" = 1 ]
}
kill_dockerd() {
	kill -KILL "$DOCKERD_PID"
	wait_for 30 gone "$DOCKERD_PID" || fail "dockerd outlived SIGKILL"
}
listed() { docker checkpoint ls "${where[@]}" "$MH" | tail -n +2 | grep -qx cp; }

# judge case before: the holder after the restart, as the header says
judge() {
	local c=$1 before=$2 st
	st=$(state)
	if [ "$st" = running ]; then
		local p
		p=$(reports | tail -n 1 | field verified_passes)
		if ! wait_for 90 count_at_least $((before + 50)) $((p + 1)); then
			lost=$((lost + 1))
			note "$c: running, but it does not count on and verify its memory: its state is lost"
			return 0
		fi
		listed || { note "$c: running on, its memory verified; no checkpoint listed"; return 0; }
		docker kill "$MH" >/dev/null && wait_for 30 state_is exited || fail "$c: the holder did not stop"
		if (RESTORE_DIR=${where[1]:-} restore_verified cp "$before"); then
			note "$c: running; the listed checkpoint restores"
		else
			phantom=$((phantom + 1))
			note "$c: running, but the listed checkpoint does not restore: a phantom"
		fi
		return 0
	fi
	if ! listed; then
		lost=$((lost + 1))
		note "$c: the holder is $st and no checkpoint is listed: its state is lost"
	elif (RESTORE_DIR=${where[1]:-} restore_verified cp "$before"); then
		note "$c: $st; the checkpoint restores"
	else
		lost=$((lost + 1))
		note "$c: the holder is $st and its checkpoint does not restore: its state is lost"
	fi
}

guest_setup
# live-restore: a daemon that starts again stops every container it finds
# running otherwise, checkpoint or not; that would be all this measured.
write_config "\"write-pace\": \"fixed\", \"write-bandwidth\": \"$CAP\", \"max-concurrent\": 1" "\"live-restore\": true"
start_dockerd
docker load -q -i /images/memholder.tar >/dev/null || fail "docker load of the memory holder failed"
dm_create kdisk "0 $(cat "/sys/class/block/${PLAIN#/dev/}/size") linear $PLAIN 0"
mkfs.ext4 -q -F /dev/mapper/kdisk || fail "mkfs.ext4 on /dev/mapper/kdisk failed"
mkdir -p "$ROOT"

for c in $CASES; do
	phase=${c%:*} leave=${c#*:}
	cases=$((cases + 1))
	flags=()
	[ "$leave" = 0 ] || flags=(--leave-running)
	where=()
	dir=
	step "$c: dockerd killed in the $phase of a checkpoint${flags:+ with --leave-running}"
	start_holder "$MIB"
	dir=$CPS
	if [ "$phase" = unmount ]; then
		mount /dev/mapper/kdisk "$ROOT" || fail "mount /dev/mapper/kdisk failed"
		chmod 0700 "$ROOT"
		where=(--checkpoint-dir "$ROOT")
		dir=$ROOT
	fi
	if [ "$phase" = queue ]; then
		docker run -d --name blk --network none --tmpfs /data ab/memholder \
			sh -c 'head -c 33554432 /dev/urandom >/data/fill && touch /data/ready && exec sleep 1000' >/dev/null ||
			fail "$c: docker run of the slow container failed"
		blkpid=$(docker inspect -f '{{.State.Pid}}' blk)
		wait_for 120 test -f "/proc/$blkpid/root/data/ready" || fail "$c: the slow container did not fill its tmpfs"
		docker checkpoint create --leave-running blk cp >"$W/blk.out" 2>&1 &
		wait_for 60 criu_runs || fail "$c: CRIU never ran for the slow container: $(cat "$W/blk.out"; ps)"
	fi
	before=$(last_count)
	docker checkpoint create "${flags[@]}" "${where[@]}" mh cp >"$W/$c.out" 2>&1 &
	case $phase in
	queue) wait_for 60 waiting || fail "$c: the checkpoint never waited for the slot" ;;
	dump) wait_for 60 criu_runs || fail "$c: CRIU never ran" ;;
	copy | unmount) wait_for 180 copy_under_way "$dir" cp || fail "$c: the paced copy never began" ;;
	esac
	kill_dockerd
	note "$c: dockerd killed"
	# CRIU goes on without the daemon (the shim runs it)
	wait_for 120 no_criu || fail "$c: CRIU still runs two minutes after the kill"
	if [ "$phase" = unmount ]; then
		umount "$ROOT" || fail "umount $ROOT failed"
	fi
	start_dockerd
	if [ "$phase" = unmount ]; then
		mount /dev/mapper/kdisk "$ROOT" || fail "mount /dev/mapper/kdisk failed"
		if [ "$(state)" != running ]; then
			docker checkpoint create "${where[@]}" mh cp >/dev/null ||
				fail "$c: the create again failed"
		fi
	fi
	judge "$c" "$before"
	docker rm -f mh >/dev/null
	docker rm -f blk >/dev/null 2>&1 || true
	if [ "$phase" = unmount ]; then
		rm -rf "${ROOT:?}"/* "$ROOT"/.[!.]* 2>/dev/null || true
		umount "$ROOT"
	fi
	[ -z "$(find "$SCRATCH" -mindepth 1 2>/dev/null)" ] || fail "$c: scratch left: $(ls -A "$SCRATCH")"
done

printf '%s: cases=%d lost=%d phantom=%d\n' "$NAME" "$cases" "$lost" "$phantom"
[ "$lost$phantom" = 00 ] || fail "state lost ($lost) or phantom checkpoints ($phantom)"
note "passed in $SECONDS s"
