#!/usr/bin/env bash
# The patched dockerd with checkpoints on a zoned device, end to end. It runs
# as root inside the guest of `hack/zoned/zns-vm.sh run-root` (hack/zoned/test-zns.sh
# starts it there, in a root made by hack/zoned/zns-vm/docker-root.sh), on the
# emulated ZNS namespace $ZNS_DEVICE, and checks, from the outside (the docker
# CLI, the index in data-root, the device's zone report, the daemon's
# metrics):
#
#   1. dockerd starts with "checkpoint-zoned-device" and finds every zone empty;
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

DEV=${ZNS_DEVICE:?ZNS_DEVICE is not set: run this in hack/zoned/zns-vm.sh run-root}
MIB=${ZNS_E2E_MIB:-16}
CAP=${ZNS_E2E_CAP:-1MiB}
DATA=/var/lib/docker
EXEC=/run/docker
INDEX=$DATA/checkpoint-zones.json
SCRATCH=$EXEC/checkpoint-scratch
CONFIG=/etc/docker/daemon.json
LOG=/tmp/dockerd.log
METRICS=127.0.0.1:9323
export DOCKER_HOST=unix:///run/docker.sock
W=/tmp/zns-e2e
DOCKERD_PID=""
ID=""   # the memory holder's container ID
CPS=""  # its checkpoints directory
ZONE_CAP=0

step() { printf '\n=== %s (at %ss)\n' "$*" "$SECONDS"; }
note() { printf 'zns-e2e: %s\n' "$*"; }
fail() {
	printf 'FAIL: %s\n' "$*" >&2
	exit 1
}

diagnostics() {
	echo "--- the last lines of dockerd's log ($LOG)"
	tail -n 40 "$LOG" 2>/dev/null | cut -c1-400
	echo "--- $INDEX"
	cat "$INDEX" 2>/dev/null || true
	echo "--- zone report of $DEV (zone cond wp-bytes)"
	zone_report 2>/dev/null && cat "$W/zones" || true
	echo "--- containers"
	timeout 20 docker ps -a 2>/dev/null || true
	local f
	for f in "$EXEC"/containerd/daemon/io.containerd.runtime.v2.task/*/*/criu-*.log; do
		[ -f "$f" ] || continue
		echo "--- errors in $f"
		grep -E 'Error|Warn' "$f" | tail -n 20
	done
}

on_exit() {
	local rc=$?
	if [ "$rc" != 0 ]; then
		printf '\nzns-e2e: FAILED (status %s) after %ss\n' "$rc" "$SECONDS" >&2
		diagnostics >&2
	fi
}
trap on_exit EXIT

# wait_for SECONDS CMD...: until CMD succeeds, polled every $POLL seconds
# [0.2]; 1 if it never did.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep "${POLL:-0.2}"
	done
}

# --- the device -------------------------------------------------------------

# zone_report: $W/zones gets "zone cond wp" per zone of the device: the
# condition as blkzone abbreviates it (em empty, oi/oe open, cl closed, fu
# full, ...) and the write pointer in bytes from the zone's start.
zone_report() {
	local line i=0 re='start: 0x([0-9a-f]+), len 0x([0-9a-f]+), cap 0x([0-9a-f]+), wptr 0x([0-9a-f]+) .*zcond: *[0-9]+\(([a-z]+)\)'
	blkzone report "$DEV" >"$W/report" || fail "blkzone report $DEV failed"
	: >"$W/zones"
	while read -r line; do
		[[ $line =~ $re ]] || fail "blkzone report: a line not understood: $line"
		echo "$i ${BASH_REMATCH[5]} $((16#${BASH_REMATCH[4]} * 512))" >>"$W/zones"
		ZONE_CAP=$((16#${BASH_REMATCH[3]} * 512))
		i=$((i + 1))
	done <"$W/report"
	[ "$i" = "$(cat "/sys/block/${DEV#/dev/}/queue/nr_zones")" ] ||
		fail "blkzone reported $i zones, the kernel says $(cat "/sys/block/${DEV#/dev/}/queue/nr_zones")"
}

zone_cond() { awk -v z="$1" '$1 == z {print $2}' "$W/zones"; }
zone_wp() { awk -v z="$1" '$1 == z {print $3}' "$W/zones"; }
# the zones that hold data (not empty), one line
used_zones() { awk '$2 != "em" {printf "%s ", $1}' "$W/zones"; }

# --- the index ----------------------------------------------------------------

idx() { jq -r "$@" "$INDEX"; }
# zones of the index entry with key $1, one line
entry_zones() { idx --arg k "$1" '[.checkpoints[]? | select(.key == $k) | (.extents // [])[].zone] | map(tostring) | join(" ")'; }
entry_state() { idx --arg k "$1" '.checkpoints[]? | select(.key == $k) | .state'; }
# zones of the complete entries, each once (checkpoints share the zones of
# their tails), sorted, one line
complete_zones() { idx '[.checkpoints[]? | select(.state == "complete") | (.extents // [])[].zone] | unique | map(tostring) | join(" ")'; }
# zones of entry $1 that no other entry of the index has, one line
own_zones() { idx --arg k "$1" '(.checkpoints // []) as $all | [$all[] | select(.key == $k) | (.extents // [])[].zone] | unique | map(select(. as $z | [$all[] | select(.key != $k and any((.extents // [])[]; .zone == $z))] | length == 0)) | map(tostring) | join(" ")'; }
unfinished_entries() { idx '[.checkpoints[]? | select(.state != "complete") | .key] | join(" ")'; }

# LISTED: zones of the checkpoints docker lists, of every container, sorted,
# one line
listed_zones() {
	local d id name key zones=()
	for d in "$DATA"/containers/*/; do
		[ -d "$d" ] || continue
		id=$(basename "$d")
		for name in $(docker checkpoint ls "$id" | tail -n +2); do
			# A checkpoint a restart finished from scratch holds its images
			# in its directory, in no zone.
			if [ ! -e "$d/checkpoints/$name/zoned.json" ] && [ -s "$d/checkpoints/$name/inventory.img" ]; then
				continue
			fi
			key=$(jq -r .key "$d/checkpoints/$name/zoned.json") ||
				fail "checkpoint $name of $id is listed without a zoned.json marker"
			# shellcheck disable=SC2207 # zone numbers
			zones+=($(entry_zones "$key"))
		done
	done
	LISTED=$(printf '%s\n' "${zones[@]}" | sed '/^$/d' | sort -nu | tr '\n' ' ')
	LISTED=${LISTED% }
}

metric_used() {
	wget -qO- "http://$METRICS/metrics" | awk '/^engine_daemon_checkpoint_zones\{state="used"\}/ {print $2}'
}

# check_no_leak: the zones holding data are exactly those of the complete
# checkpoints in the index, which are those of the listed checkpoints, and
# the metric counts them.
check_no_leak() {
	local used indexed listed unfinished m
	zone_report
	used=$(used_zones)
	used=${used% }
	indexed=$(complete_zones)
	listed_zones
	listed=$LISTED
	unfinished=$(unfinished_entries)
	[ -z "$unfinished" ] || fail "the index still has checkpoints that never completed: $unfinished"
	[ "$used" = "$indexed" ] ||
		fail "zone leak: zones holding data on the device [$used] are not the zones of the index's checkpoints [$indexed]"
	[ "$indexed" = "$listed" ] ||
		fail "the index's zones [$indexed] are not the zones of the checkpoints docker lists [$listed]"
	m=$(metric_used)
	# shellcheck disable=SC2086 # count the words
	[ "$m" = "$(set -- $indexed && echo $#)" ] ||
		fail "engine_daemon_checkpoint_zones{state=\"used\"} is '$m', the index holds $(set -- $indexed && echo $#) zones"
	note "no zone leaked: zones in use [${used:-none}]"
}

# --- the daemon ---------------------------------------------------------------

write_config() { # extra JSON members, or nothing
	cat >"$CONFIG" <<EOF
{
  "data-root": "$DATA",
  "exec-root": "$EXEC",
  "pidfile": "/run/docker.pid",
  "hosts": ["$DOCKER_HOST"],
  "experimental": true,
  "bridge": "none",
  "iptables": false,
  "ip6tables": false,
  "userland-proxy-path": "/usr/local/bin/docker-proxy",
  "metrics-addr": "$METRICS",
  "checkpoint-zoned-device": "$DEV"${1:+,
  $1}
}
EOF
}

start_dockerd() {
	local t0=$SECONDS
	dockerd --config-file "$CONFIG" >>"$LOG" 2>&1 &
	DOCKERD_PID=$!
	wait_for 180 docker_up || fail "dockerd (pid $DOCKERD_PID) did not answer within 180 s"
	note "dockerd up (pid $DOCKERD_PID) in $((SECONDS - t0)) s"
}

docker_up() {
	kill -0 "$DOCKERD_PID" 2>/dev/null || fail "dockerd exited during start-up"
	timeout 20 docker version >/dev/null 2>&1
}

gone() { ! kill -0 "$1" 2>/dev/null; }

# --- the memory holder ----------------------------------------------------------

# The holder's output, read from its json-file log rather than through
# docker logs: the CLI takes a second or more to start under TCG, and the
# waits below poll.
holder_log() { sed -n 's/^{"log":"\(.*\)\\n","stream":"std[a-z]*".*/\1/p' "$DATA/containers/$ID/$ID-json.log"; }
# reports [from]: the holder's report lines (from output line number from on)
reports() { holder_log | tail -n +"${1:-1}" | grep '^memholder '; }
field() { sed -n "s/.* $1=\\([0-9]*\\) .*/\\1/p"; }
last_count() { reports | tail -n 1 | field count; }
state() { docker inspect -f '{{.State.Status}}' mh; }
state_is() { [ "$(state)" = "$1" ]; }

# count_at_least n [passes]: the holder has counted to n (and verified its
# memory passes times).
count_at_least() {
	local l p c
	l=$(reports | tail -n 1)
	p=$(field verified_passes <<<"$l")
	c=$(field count <<<"$l")
	[ -n "$p" ] && [ -n "$c" ] && [ "$c" -ge "$1" ] && [ "$p" -ge "${2:-0}" ]
}

# start_holder: it has verified its memory twice and counted well beyond
# what a fresh start reports first (at most 100 ticks in its first second),
# so that a restore cannot be mistaken for a restart.
start_holder() {
	ID=$(docker run -d --name mh --network none ab/memholder memholder "$MIB") ||
		fail "docker run of the memory holder failed"
	CPS=$DATA/containers/$ID/checkpoints
	wait_for 120 count_at_least 250 2 || fail "the memory holder did not come up: $(holder_log | tail -n 3)"
}

lines_beyond() { [ "$(reports "$1" | wc -l)" -ge 1 ]; }
passes_reach() { # from passes
	local p
	p=$(reports "$1" | tail -n 1 | field verified_passes)
	[ -n "$p" ] && [ "$p" -ge "$2" ]
}

# restore_verified name after [below]: restores the stopped holder from
# checkpoint name, taken after it had reported count after (and before it
# reported below); it must count on from there and verify its whole memory
# again (two more passes: the one under way at the checkpoint may have begun
# before it).
restore_verified() {
	local name=$1 after=$2 below=${3:-} from first c0 p0 t0=$SECONDS
	from=$(($(holder_log | wc -l) + 1))
	docker start --checkpoint "$name" mh >/dev/null || fail "docker start --checkpoint $name failed"
	wait_for 90 lines_beyond "$from" || fail "the holder restored from $name reported nothing"
	first=$(reports "$from" | head -n 1)
	c0=$(field count <<<"$first")
	p0=$(field verified_passes <<<"$first")
	[ "$c0" -gt "$after" ] ||
		fail "restored from $name, the holder reports count=$c0, not beyond $after where the checkpoint took it: it started afresh"
	[ -z "$below" ] || [ "$c0" -lt "$below" ] ||
		fail "restored from $name, the holder reports count=$c0, beyond $below, which it reached after $name: not $name's state"
	wait_for 90 passes_reach "$from" $((p0 + 2)) ||
		fail "restored from $name, the holder did not verify its memory again (passes stuck at $(reports "$from" | tail -n 1 | field verified_passes))"
	! holder_log | grep -q CORRUPT || fail "restored from $name, the holder found its memory corrupt: $(holder_log | grep CORRUPT | head -n 1)"
	[ "$(state)" = running ] || fail "restored from $name, the holder is $(state)"
	[ -z "$(find "$SCRATCH" -mindepth 1 2>/dev/null)" ] || fail "scratch left after the restore: $(ls -A "$SCRATCH")"
	note "restored from $name in $((SECONDS - t0)) s: count $after -> $c0, memory verified (passes $p0 -> $((p0 + 2)))"
}

# check_checkpoint name: a complete checkpoint of the holder, on the device:
# the part of its images that fills whole zones in zones of its own, full
# (finished), the rest, its tail (extents shorter than a zone's capacity), in
# zones it may share with the tails of checkpoints expected to be deleted
# with it.
check_checkpoint() {
	local name=$1 dir=$CPS/$1 key size sha zones z n other sum
	docker checkpoint ls mh | tail -n +2 | grep -qx "$name" || fail "checkpoint $name is not listed"
	[ "$(ls -A "$dir")" = zoned.json ] ||
		fail "checkpoint $name: its directory holds [$(ls -A "$dir" | tr '\n' ' ')], not only the zoned.json marker"
	[ "$(jq -r .device "$dir/zoned.json")" = "$DEV" ] || fail "checkpoint $name: the marker names device $(jq -r .device "$dir/zoned.json")"
	key=$(jq -r .key "$dir/zoned.json")
	size=$(jq -r .size "$dir/zoned.json")
	sha=$(jq -r .sha256 "$dir/zoned.json")
	[ "$size" -ge $((MIB << 20)) ] || fail "checkpoint $name: $size bytes of images for a holder of $MIB MiB"
	[ "$(entry_state "$key")" = complete ] || fail "checkpoint $name: the index says '$(entry_state "$key")', not complete"
	[ "$(idx --arg k "$key" '.checkpoints[] | select(.key == $k) | .size')" = "$size" ] ||
		fail "checkpoint $name: the index's size differs from the marker's ($size)"
	[ "$(idx --arg k "$key" '.checkpoints[] | select(.key == $k) | .sha256')" = "$sha" ] ||
		fail "checkpoint $name: the index's SHA-256 differs from the marker's"
	sum=$(idx --arg k "$key" '[.checkpoints[] | select(.key == $k) | .extents[].length] | add')
	[ "$sum" -ge "$size" ] || fail "checkpoint $name: its extents hold $sum bytes of a $size-byte stream"
	zones=$(entry_zones "$key")
	zone_report
	# shellcheck disable=SC2086 # zone numbers
	n=$(set -- $zones && echo $#)
	[ "$n" -ge $(((size + ZONE_CAP - 1) / ZONE_CAP)) ] ||
		fail "checkpoint $name: $size bytes in $n zones of $ZONE_CAP bytes of capacity"
	local whole="" tails="" len
	while read -r z len; do
		other=$(idx --arg k "$key" --argjson z "$z" '[.checkpoints[] | select(.key != $k and any((.extents // [])[]; .zone == $z)) | .key] | join(" ")')
		if [ "$len" -ge "$ZONE_CAP" ]; then
			[ "$(zone_cond "$z")" = fu ] || fail "checkpoint $name: its whole zone $z is '$(zone_cond "$z")', not finished (fu)"
			[ -z "$other" ] || fail "checkpoint $name: its whole zone $z is also in the index for $other"
			whole+="$z "
		else
			[ "$(zone_wp "$z")" -gt 0 ] || fail "checkpoint $name: zone $z of its tail holds nothing"
			tails+="$z${other:+ (shared)} "
		fi
	done < <(idx --arg k "$key" '.checkpoints[] | select(.key == $k) | .extents[] | "\(.zone) \(.length)"')
	note "checkpoint $name: $size bytes, whole zones [${whole% }], its tail in [${tails% }]"
}

# --- the test -------------------------------------------------------------------

mkdir -p "$W" /etc/docker "$DATA" "$EXEC" /sys/fs/cgroup /dev/pts /dev/shm
# the guest: loopback up (the metrics), cgroup v2, shared mounts, devpts
ip link set lo up
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount --make-rshared /
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs -o mode=0711 tmpfs "$DATA"
[ "$(cat "/sys/block/${DEV#/dev/}/queue/zoned")" = host-managed ] || fail "$DEV is not host-managed zoned"

step "1. dockerd starts with checkpoint-zoned-device=$DEV"
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
start_holder
note "memory holder of $MIB MiB: $(reports | tail -n 1)"

step "2. checkpoint --leave-running"
before1=$(last_count)
docker checkpoint create --leave-running mh cp1 >/dev/null || fail "docker checkpoint create --leave-running mh cp1 failed"
[ "$(state)" = running ] || fail "the holder is $(state) after a --leave-running checkpoint"
after1=$(last_count)
grep 'Checkpoint created' "$LOG" | grep 'checkpoint=cp1 ' | grep -q 'zoned=true' ||
	fail "dockerd did not log cp1 as written to the zoned device"
check_checkpoint cp1
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
write_config "\"checkpoint-write-bandwidth\": \"$CAP\""
kill -HUP "$DOCKERD_PID"
reloaded() { grep 'Reloaded configuration' "$LOG" | grep -q "checkpoint-write-bandwidth.*$CAP"; }
wait_for 30 reloaded || fail "dockerd did not reload checkpoint-write-bandwidth=$CAP"
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
check_checkpoint cp1
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
check_checkpoint cp4
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
