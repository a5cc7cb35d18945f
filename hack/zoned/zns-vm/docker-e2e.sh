#!/usr/bin/env bash
# The patched dockerd with checkpoints on a zoned device, end to end. It runs
# as root inside the guest of `hack/zoned/zns-vm.sh run-root` (hack/zoned/test-zns.sh
# starts it there, in a root made by hack/zoned/zns-vm/docker-root.sh), on the
# emulated ZNS namespace $ZNS_DEVICE, and checks, from the outside (the docker
# CLI, the index in data-root, the device's zone report, the daemon's
# metrics):
#
#   1. dockerd starts with checkpoints.zoned-device and finds every zone empty;
#   2. a memory holder is checkpointed with --leave-running (cp1): its images
#      are in zones of its own, finished (full), recorded as complete in the
#      index with the stream's size and SHA-256; the checkpoint directory
#      holds only the marker;
#   3. cp1 restores (docker start --checkpoint): the holder counts on from
#      where cp1 took it (not from where it was stopped) and verifies all of
#      its memory again;
#   4. dockerd SIGKILLed while a checkpoint's images are being written (a
#      write-bandwidth cap set by a reload makes that last; the kill comes
#      once a zone is finished and the next one open) leaves a "writing"
#      entry and written zones; started again, it commits the dump CRIU had
#      finished into the checkpoint's directory (listed, its images there, in
#      no zone), has reset those zones and left nothing else behind, and cp1
#      is intact in its zones;
#   5. cp1 restores again; a checkpoint without --leave-running (cp4) stops
#      the holder, is written as cp1 was and restores, memory verified;
#   6. docker checkpoint rm resets the zones of cp1 and cp4 (empty, write
#      pointer at the zone's start): the device is empty again.
#
# After each step no zone is leaked: the zones holding data on the device are
# exactly the zones of the complete checkpoints in the index, which are those
# of the checkpoints docker lists, and the daemon's used-zones metric counts
# them. It exits 0 only if every check held; a failure names what did not,
# and shows the daemon's log, the index and the zone report.
#
# Guest-only settings: no bridge and no firewall ("bridge": "none",
# "iptables": false; the containers run with --network none), CRIU locks the
# network with nftables (hack/zoned/zns-vm/docker-root.sh configures it), the daemon's
# data-root and exec-root are tmpfs.
#
# Environment: ZNS_DEVICE (set by hack/zoned/zns-vm.sh), ZNS_E2E_MIB (the memory
# holder's size in MiB) [16], ZNS_E2E_CAP (the write-bandwidth cap during the
# kill) [1MiB: the daemon's smallest; under TCG the uncapped write of 16 MiB
# takes about 4 s, so a cap near that rate would leave the kill little time].
set -euo pipefail


# shellcheck disable=SC2034 # read by docker-lib.sh
NAME=zns-e2e
MIB=${ZNS_E2E_MIB:-16}
CAP=${ZNS_E2E_CAP:-1MiB}
# shellcheck source=hack/zoned/zns-vm/docker-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/docker-lib.sh"

# --- the test -------------------------------------------------------------------

guest_setup

step "1. dockerd starts with checkpoints.zoned-device=$DEV"
write_config
start_dockerd
grep 'Checkpoint images go to a zoned device' "$LOG" | grep -q "device=$DEV" ||
	fail "dockerd did not log that checkpoint images go to $DEV"
[ -f "$INDEX" ] || fail "no index $INDEX after the start"
[ "$(idx .device)" = "$DEV" ] || fail "the index names device $(idx .device)"
[ "$(idx .zones)" = "$(cat "/sys/block/${DEV#/dev/}/queue/nr_zones")" ] || fail "the index records $(idx .zones) zones"
[ "$(idx '.checkpoints | length')" = 0 ] || fail "a fresh index lists checkpoints"
zone_report
[ -z "$(used_zones)" ] || fail "zones hold data before any checkpoint: $(used_zones)"
check_no_leak
docker load -q -i /images/memholder.tar >/dev/null || fail "docker load of the memory holder failed"
start_holder "$MIB"
note "memory holder of $MIB MiB: $(reports | tail -n 1)"

step "2. checkpoint --leave-running"
before1=$(last_count)
docker checkpoint create --leave-running mh cp1 >/dev/null || fail "docker checkpoint create --leave-running mh cp1 failed"
[ "$(state)" = running ] || fail "the holder is $(state) after a --leave-running checkpoint"
after1=$(last_count)
grep 'Checkpoint created' "$LOG" | grep 'checkpoint=cp1 ' | grep -q 'zoned=true' ||
	fail "dockerd did not log cp1 as written to the zoned device"
check_checkpoint cp1 "$MIB"
key1=$(jq -r .key "$CPS/cp1/zoned.json")
zones1=$(entry_zones "$key1")
check_no_leak

step "3. restore from cp1"
# On far enough that cp1's state is told from a later one: restored, the
# holder first reports at most about 100 ticks (a second) beyond where cp1
# froze it, at or before the count it reported when cp1 returned.
wait_for 60 count_at_least $((after1 + 400)) || fail "the holder stopped counting after cp1"
docker kill mh >/dev/null || fail "docker kill mh failed"
wait_for 30 state_is exited || fail "the holder is $(state) after docker kill"
killed1=$(last_count)
restore_verified cp1 "$before1" "$killed1"
docker checkpoint ls mh | tail -n +2 | grep -qx cp1 || fail "cp1 is gone after a restore from it"
check_no_leak

step "4. dockerd SIGKILLed while cp3's images are being written"
write_config "\"write-pace\": \"fixed\", \"write-bandwidth\": \"$CAP\""
kill -HUP "$DOCKERD_PID"
reloaded() { grep 'Reloaded configuration' "$LOG" | grep -q "write-bandwidth.*$CAP"; }
wait_for 30 reloaded || fail "dockerd did not reload checkpoints.write-bandwidth=$CAP"
key3=$CPS/cp3
docker checkpoint create --leave-running mh cp3 >"$W/cp3.out" 2>&1 &
cli=$!
# The worst moment: a zone finished and the next one open, being written.
# The poll is cheap until the index has cp3 (a grep), then one jq, and a
# zone report only once two zones are taken: under TCG every process it
# starts takes CPU from the checkpoint it watches. The window is a zone's
# capacity at the capped rate.
mid_write() {
	local st n last
	gone "$cli" && fail "cp3 ended before it was seen with a zone finished and the next one open: $(cat "$W/cp3.out")"
	grep -q "\"key\": \"$key3\"" "$INDEX" || return 1
	read -r st n last < <(idx --arg k "$key3" '.checkpoints[]? | select(.key == $k) | (.extents // []) as $x |
		"\(.state) \($x | length) \(if ($x | length) > 0 then $x[-1].zone else -1 end)"')
	[ "${st:-}" = writing ] && [ "${n:-0}" -ge 2 ] || return 1
	zone_report
	case $(zone_cond "$last") in oi | oe) [ "$(zone_wp "$last")" -gt 0 ] || return 1 ;; *) return 1 ;; esac
	# and one of its other zones finished
	local z
	for z in $(entry_zones "$key3"); do
		[ "$z" != "$last" ] && [ "$(zone_cond "$z")" = fu ] && return 0
	done
	return 1
}
POLL=0.5 wait_for 300 mid_write || fail "cp3 was never seen with a zone finished and the next one open"
kill -KILL "$DOCKERD_PID"
wait_for 30 gone "$DOCKERD_PID" || fail "dockerd outlived SIGKILL"
wait "$DOCKERD_PID" 2>/dev/null || true
if wait "$cli"; then
	fail "docker checkpoint create cp3 succeeded although dockerd was killed during it"
fi
zones3=$(entry_zones "$key3")
own3=$(own_zones "$key3")
[ "$(entry_state "$key3")" = writing ] || fail "after the kill the index says cp3 is '$(entry_state "$key3")'"
zone_report
last3=${zones3##* }
full3=""
for z in $zones3; do [ "$(zone_cond "$z")" != fu ] || full3+="$z "; done
[ -n "$full3" ] || fail "none of cp3's zones [$zones3] is finished"
[ "$(zone_wp "$last3")" -gt 0 ] || fail "cp3's last zone $last3 holds nothing"
note "killed mid-write: cp3 holds zones [$zones3]; zone $last3 is '$(zone_cond "$last3")' at +$(zone_wp "$last3") bytes"

write_config
start_dockerd
grep -q 'recovered from an interrupted checkpoint' "$LOG" || fail "dockerd did not log a recovery at its restart"
# CRIU had finished cp3's dump: the restart commits it from scratch into its
# directory, as plain image files (not in zones), and it is listed.
grep -q 'Finished a checkpoint a killed daemon left' "$LOG" || fail "dockerd did not finish the killed cp3 at its restart"
docker checkpoint ls mh | tail -n +2 | grep -qx cp3 || fail "the killed cp3, whose dump was complete, is not listed"
[ -s "$key3/inventory.img" ] || fail "the finished cp3 has no inventory.img in $key3: [$(ls -A "$key3" | tr '\n' ' ')]"
[ ! -e "$key3/zoned.json" ] || fail "the finished cp3 in $key3 still points at zones"
[ -z "$(find "$CPS" -mindepth 1 -maxdepth 1 -name '.*')" ] || fail "left in $CPS: $(ls -A "$CPS")"
[ -z "$(find "$SCRATCH" -mindepth 1 2>/dev/null)" ] || fail "scratch left after the restart: $(ls -A "$SCRATCH")"
[ -z "$(entry_state "$key3")" ] || fail "cp3's killed zoned write is still in the index after the restart"
zone_report
# Its zones of its own are reset; a zone it shared with a complete
# checkpoint's tail stays (what cp3 wrote there is dead data, counted as
# such), and is a zone of that checkpoint (check_no_leak below).
for z in $own3; do
	[ "$(zone_cond "$z")" = em ] && [ "$(zone_wp "$z")" = 0 ] ||
		fail "zone $z of the killed cp3 is '$(zone_cond "$z")' at +$(zone_wp "$z") bytes after the restart, not reset"
done
note "the zones [$own3] of the killed cp3 are reset (it held [$zones3])"
# the complete cp1 went through the crash and the recovery untouched
check_checkpoint cp1 "$MIB"
[ "$(entry_zones "$key1")" = "$zones1" ] || fail "cp1 moved from zones [$zones1] to [$(entry_zones "$key1")]"
check_no_leak

step "5. after the restart: cp1 restores again, a new checkpoint (cp4) and its restore"
case $(state) in
exited) ;;
running) # a daemon that kept it (live-restore)
	docker kill mh >/dev/null || fail "docker kill mh failed"
	wait_for 30 state_is exited || fail "the holder is $(state) after docker kill"
	;;
*) fail "the holder is $(state) after the restart" ;;
esac
restore_verified cp1 "$before1" "$killed1"
before4=$(last_count)
docker checkpoint create mh cp4 >/dev/null || fail "docker checkpoint create mh cp4 failed after the restart"
wait_for 30 state_is exited || fail "the holder is $(state) after a checkpoint without --leave-running"
check_checkpoint cp4 "$MIB"
check_no_leak
restore_verified cp4 "$before4"
check_no_leak

step "6. docker checkpoint rm resets the zones"
zones4=$(entry_zones "$(jq -r .key "$CPS/cp4/zoned.json")")
for cp in cp1 cp4; do
	docker checkpoint rm mh "$cp" || fail "docker checkpoint rm mh $cp failed"
	! docker checkpoint ls mh | tail -n +2 | grep -qx "$cp" || fail "$cp is still listed after rm"
	[ ! -e "$CPS/$cp" ] || fail "$CPS/$cp is still there after rm"
	[ -z "$(idx --arg k "$CPS/$cp" '.checkpoints[]? | select(.key == $k or .dir == $k) | .key')" ] ||
		fail "$cp is still in the index after rm"
done
zone_report
for z in $zones1 $zones4; do
	[ "$(zone_cond "$z")" = em ] && [ "$(zone_wp "$z")" = 0 ] ||
		fail "zone $z of a removed checkpoint is '$(zone_cond "$z")' with its write pointer at +$(zone_wp "$z") bytes, not reset"
done
note "the zones [$zones1] of cp1 and [$zones4] of cp4 are empty, their write pointers at their starts"
check_no_leak
[ -z "$(used_zones)" ] || fail "zones still hold data with no checkpoint left: $(used_zones)"

note "the daemon's checkpoints (from its log):"
awk '/msg="Checkpoint created"/ {
	c = d = w = ""
	for (i = 1; i <= NF; i++) {
		if ($i ~ /^checkpoint=/) c = substr($i, 12)
		if ($i ~ /^dump=/) d = substr($i, 6)
		if ($i ~ /^write=/) w = substr($i, 7)
	}
	printf "  %s: dump %s, write %s\n", c, d, w
}' "$LOG"
printf '\nzns-e2e: all checks passed in %ss\n' "$SECONDS"
