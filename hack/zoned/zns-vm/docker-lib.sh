# Shared by the daemon's runs in the zoned guest (hack/zoned/zns-vm/docker-e2e.sh,
# hack/zoned/zns-vm/docker-trace.sh): the daemon's settings and start, the
# device's zone report, the store's index, the leak check and the memory
# holders (ab/memholder), from the outside: the docker CLI, the index in
# data-root, blkzone and the daemon's metrics. Sourced, after NAME (the
# script's name in its messages) is set.
# shellcheck shell=bash

DEV=${ZNS_DEVICE:?ZNS_DEVICE is not set: run this in hack/zoned/zns-vm.sh run-root}
DATA=/var/lib/docker
EXEC=/run/docker
INDEX=$DATA/checkpoint-zones.json
SCRATCH=$EXEC/checkpoint-scratch
CONFIG=/etc/docker/daemon.json
LOG=/tmp/dockerd.log
METRICS=127.0.0.1:9323
export DOCKER_HOST=unix:///run/docker.sock
W=/tmp/$NAME
DOCKERD_PID=""
MH=mh   # the memory holder the functions below act on (use_holder)
ID=""   # its container ID
CPS=""  # its checkpoints directory
ZONE_CAP=0

step() { printf '\n=== %s (at %ss)\n' "$*" "$SECONDS"; }
note() { printf '%s: %s\n' "$NAME" "$*"; }
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
		printf '\n%s: FAILED (status %s) after %ss\n' "$NAME" "$rc" "$SECONDS" >&2
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

# write_config [checkpoint-members] [members]: the daemon's configuration,
# with the members of its "checkpoints" object (zoned-device unless ZONED=0)
# and extra top-level JSON members, if given.
write_config() {
	local cp=${1:-} extra=${2:-}
	[ "${ZONED:-1}" = 0 ] || cp="\"zoned-device\": \"$DEV\"${cp:+, $cp}"
	[ -z "$cp" ] || extra="\"checkpoints\": {$cp}${extra:+,
  $extra}"
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
  "metrics-addr": "$METRICS"${extra:+,
  $extra}
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
# (none for a container created and never started)
holder_log() {
	local f=$DATA/containers/$ID/$ID-json.log
	[ -f "$f" ] || return 0
	sed -n 's/^{"log":"\(.*\)\\n","stream":"std[a-z]*".*/\1/p' "$f"
}
# reports [from]: the holder's report lines (from output line number from on)
reports() { holder_log | tail -n +"${1:-1}" | grep '^memholder '; }
field() { sed -n "s/.* $1=\\([0-9]*\\) .*/\\1/p"; }
last_count() { reports | tail -n 1 | field count; }
state() { docker inspect -f '{{.State.Status}}' "$MH"; }
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

# start_holder mib: the holder $MH of mib MiB runs, has verified its memory
# twice and counted well beyond what a fresh start reports first (at most
# 100 ticks in its first second), so that a restore cannot be mistaken for a
# restart.
start_holder() {
	ID=$(docker run -d --name "$MH" --network none ab/memholder memholder "$1") ||
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
# checkpoint name (in $RESTORE_DIR if set, a custom checkpoint directory),
# taken after it had reported count after (and before it reported below); it
# must count on from there and verify its whole memory again (two more
# passes: the one under way at the checkpoint may have begun before it).
restore_verified() {
	local name=$1 after=$2 below=${3:-} from first c0 p0 t0=$SECONDS
	local where=()
	[ -z "${RESTORE_DIR:-}" ] || where=(--checkpoint-dir "$RESTORE_DIR")
	from=$(($(holder_log | wc -l) + 1))
	docker start --checkpoint "$name" "${where[@]}" "$MH" >/dev/null || fail "docker start --checkpoint $name failed"
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

# check_checkpoint name mib: a complete checkpoint of the holder (of mib
# MiB), on the device: the part of its images that fills whole zones in
# zones of its own, full (finished), the rest, its tail (extents shorter
# than a zone's capacity), in zones it may share with the tails of
# checkpoints expected to be deleted with it.
check_checkpoint() {
	local name=$1 dir=$CPS/$1 key size sha zones z n other sum
	docker checkpoint ls "$MH" | tail -n +2 | grep -qx "$name" || fail "checkpoint $name is not listed"
	[ "$(ls -A "$dir")" = zoned.json ] ||
		fail "checkpoint $name: its directory holds [$(ls -A "$dir" | tr '\n' ' ')], not only the zoned.json marker"
	[ "$(jq -r .device "$dir/zoned.json")" = "$DEV" ] || fail "checkpoint $name: the marker names device $(jq -r .device "$dir/zoned.json")"
	key=$(jq -r .key "$dir/zoned.json")
	size=$(jq -r .size "$dir/zoned.json")
	sha=$(jq -r .sha256 "$dir/zoned.json")
	[ "$size" -ge $(($2 << 20)) ] || fail "checkpoint $name: $size bytes of images for a holder of $2 MiB"
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


# --- faults ---------------------------------------------------------------------

# dm_create name table: a device-mapper device of that table, its node made
# by hand (no udev in the guest; DM_DISABLE_UDEV=1).
dm_create() {
	echo "$2" | dmsetup create "$1" || fail "dmsetup create $1 ($2) failed"
	dmsetup mknodes "$1" || fail "dmsetup mknodes $1 failed"
}

# copy_under_way dir name: the paced copy of checkpoint name is writing its
# pages into a staging directory in dir.
copy_under_way() {
	local s
	for s in "$1"/.staging-"$2"-*/pages-*.img; do
		[ -s "$s" ] && return 0
	done
	return 1
}

# create_failed_kept pid out cause: the create whose CLI is pid (its output
# in out) failed after the freeze: the error names the fault (a regex;
# counted in the caller's unnamed if not) and where the stopped holder's
# images are kept in scratch; the holder has exited.
create_failed_kept() {
	if wait "$1"; then
		fail "the create succeeded despite the fault"
	fi
	note "the create failed: $(tr '\n' ' ' <"$2")"
	grep -qiE "$3" "$2" || {
		unnamed=$((unnamed + 1))
		note "the error does not name the fault ($3)"
	}
	grep -q "its checkpoint images are kept in $SCRATCH/" "$2" ||
		fail "the error does not say where the stopped holder's images are kept"
	wait_for 30 state_is exited || fail "the holder is $(state) after a checkpoint without --leave-running"
}

# guest_setup: the guest as the daemon needs it: loopback up (the
# metrics), cgroup v2, shared mounts, devpts, data-root on a tmpfs.
guest_setup() {
	mkdir -p "$W" /etc/docker "$DATA" "$EXEC" /sys/fs/cgroup /dev/pts /dev/shm
	ip link set lo up
	mount -t cgroup2 cgroup2 /sys/fs/cgroup
	mount --make-rshared /
	mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
	mount -t tmpfs tmpfs /dev/shm
	mount -t tmpfs -o mode=0711 tmpfs "$DATA"
	[ "$(cat "/sys/block/${DEV#/dev/}/queue/zoned")" = host-managed ] || fail "$DEV is not host-managed zoned"
}

# use_holder NAME: the holder functions act on container NAME from now on.
use_holder() {
	MH=$1
	ID=$(docker inspect -f '{{.Id}}' "$MH") || fail "no container $MH"
	CPS=$DATA/containers/$ID/checkpoints
}
