#!/usr/bin/env bash
# The patched dockerd over a whole checkpoint trace on a zoned device. It
# runs as root inside the guest of `hack/zoned/zns-vm.sh run-root` (started by
# hack/zoned/zns-trace-vm.sh, in a root made by hack/zoned/zns-vm/docker-root.sh),
# on the emulated ZNS namespace $ZNS_DEVICE, and replays the trace /trace.csv
# (time_s,op,container,checkpoint,bytes: hack/ab/zns.py's format) against
# the daemon, in the trace's order, one operation at a time (see
# ZNS_TRACE_TOGETHER below):
#
#   create  a memory holder for the container if it has none yet (of the
#           create's bytes in MiB, at least 1), then `docker checkpoint create
#           --leave-running`; a create the daemon refuses is recorded (a full
#           device is an answer, not a failure of this run);
#   delete  `docker checkpoint rm`, which must succeed for a checkpoint that
#           was made; a container with nothing left to do and no checkpoint
#           is removed.
#
# The device is small enough that the daemon's placement relocates live data
# to make room, as in the replay of the same trace. Every 25 operations and
# at the end no zone is leaked (hack/zoned/zns-vm/docker-lib.sh's
# check_no_leak). Then every checkpoint docker lists is restored, oldest
# first per container: the holder counts on from where that checkpoint took
# it and verifies all of its memory again.
#
# What the daemon wrote and read on the device comes from the kernel's
# counters of the namespace (/sys/block/*/stat), before the first and after
# the last operation, and before and after the restores, and after each
# operation into device.tsv (where the device and the replay part). The
# results (the daemon's log, the index, the zone report, the counters, each
# operation and restore with its outcome) are printed at the end between the lines
# ZNS-TRACE-RESULTS-BEGIN and ZNS-TRACE-RESULTS-END as a base64 tar.gz, which
# hack/zoned/zns-trace-vm.sh unpacks. It exits 0 only if every check held.
#
# With ZNS_TRACE_TOGETHER=1 the creates of different containers at the same
# time in the trace are made at once (each in the background, the daemon's
# queue and placement taking them together, as in the replay), not one at a
# time.
#
# Environment: ZNS_DEVICE (set by hack/zoned/zns-vm.sh), ZNS_TRACE [/trace.csv],
# ZNS_TRACE_CHECK_EVERY [25], ZNS_TRACE_TOGETHER [0].
set -euo pipefail

# shellcheck disable=SC2034 # read by docker-lib.sh
NAME=zns-trace
TRACE=${ZNS_TRACE:-/trace.csv}
EVERY=${ZNS_TRACE_CHECK_EVERY:-25}
TOGETHER=${ZNS_TRACE_TOGETHER:-0}
# shellcheck source=hack/zoned/zns-vm/docker-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/docker-lib.sh"
OUT=$W/out
PREFIX=t-

# counters: "sectors read, sectors written" of the namespace (512-byte units)
counters() { awk '{print $3, $7}' "/sys/block/${DEV#/dev/}/stat"; }

# The trace's names made docker's: a container's name gets the prefix, a
# checkpoint's characters outside [A-Za-z0-9_.-] become _.
cname() { echo "$PREFIX$1"; }
cpname() { tr -c 'A-Za-z0-9_.\n-' _ <<<"$1"; }

# Per container, its files in $W/c/NAME: mib, and per checkpoint made,
# NAME.cps ("checkpoint before-count", in order).
holder_file() { echo "$W/c/$1"; }

ensure_holder() { # container bytes
	local c=$1 f mib
	f=$(holder_file "$c")
	MH=$(cname "$c")
	if [ -f "$f.mib" ]; then
		use_holder "$MH"
		return
	fi
	mib=$(($2 >> 20))
	[ "$mib" -ge 1 ] || mib=1
	echo "$mib" >"$f.mib"
	: >"$f.cps"
	start_holder "$mib"
}

# last_event[container] = the index of its last operation in the trace
declare -A last_event=()

# ops.tsv: per operation, its number in the trace, kind, container,
# checkpoint, the trace's bytes, outcome, seconds it took, when it was
# issued (seconds since the trace began; the same for the creates made at
# once) and, for a checkpoint made, the bytes of its images (its marker's).
op_create() { # n container checkpoint bytes issued
	local n=$1 c=$2 cp t0 before rc=0 out size
	cp=$(cpname "$3")
	ensure_holder "$c" "$4"
	before=$(last_count)
	t0=$EPOCHREALTIME
	out=$(docker checkpoint create --leave-running "$MH" "$cp" 2>&1) || rc=$?
	if [ "$rc" = 0 ]; then
		[ "$(state)" = running ] || fail "$MH is $(state) after a --leave-running checkpoint"
		echo "$cp $before" >>"$(holder_file "$c").cps"
		size=$(jq -r .size "$CPS/$cp/zoned.json") || fail "checkpoint $cp of $MH has no zoned.json marker"
		printf '%s\tcreate\t%s\t%s\t%s\tok\t%s\t%s\t%s\n' "$n" "$c" "$cp" "$4" "$(elapsed "$t0")" "$5" "$size" >>"$OUT/ops.tsv"
	else
		# The daemon's answer, as the CLI gives it; the checkpoint must not be listed.
		! docker checkpoint ls "$MH" | tail -n +2 | grep -qx "$cp" ||
			fail "checkpoint $cp of $MH is listed although its create failed: $out"
		printf '%s\tcreate\t%s\t%s\t%s\tfailed: %s\t%s\t%s\t\n' "$n" "$c" "$cp" "$4" "$(tr '\t\n' '  ' <<<"$out")" "$(elapsed "$t0")" "$5" >>"$OUT/ops.tsv"
		note "op $n: the daemon refused checkpoint $cp of $MH: $out"
	fi
}

op_delete() { # n container checkpoint issued
	local n=$1 c=$2 cp f t0
	cp=$(cpname "$3")
	f=$(holder_file "$c")
	t0=$EPOCHREALTIME
	if ! grep -q "^$cp " "$f.cps" 2>/dev/null; then
		# Its create was refused: nothing to delete.
		printf '%s\tdelete\t%s\t%s\t\tnot made\t0\t%s\n' "$n" "$c" "$cp" "$4" >>"$OUT/ops.tsv"
		return
	fi
	MH=$(cname "$c")
	docker checkpoint rm "$MH" "$cp" || fail "op $n: docker checkpoint rm $MH $cp failed"
	sed -i "/^$cp /d" "$f.cps"
	printf '%s\tdelete\t%s\t%s\t\tok\t%s\t%s\n' "$n" "$c" "$cp" "$(elapsed "$t0")" "$4" >>"$OUT/ops.tsv"
}

# done_with n container: after its last operation, a container without
# checkpoints goes.
done_with() {
	local c=$2 f
	f=$(holder_file "$c")
	[ "${last_event[$c]}" = "$1" ] && [ ! -s "$f.cps" ] || return 0
	docker rm -f "$(cname "$c")" >/dev/null || fail "docker rm -f $(cname "$c") failed"
	rm -f "$f.mib" "$f.cps"
}

elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }'; }

# --- the run ---------------------------------------------------------------------

guest_setup
mkdir -p "$OUT" "$W/c"
[ -s "$TRACE" ] || fail "no trace at $TRACE"
head -n 1 "$TRACE" | grep -q '^time_s,op,container,checkpoint,bytes' || fail "$TRACE: not a trace (header $(head -n 1 "$TRACE"))"
while IFS=, read -r n _ _ c _; do
	last_event[$c]=$n
done < <(tail -n +2 "$TRACE" | awk -F, '{print NR "," $0}')
nops=$(($(wc -l <"$TRACE") - 1))

step "dockerd starts with checkpoints.zoned-device=$DEV"
write_config '"max-concurrent": 2, "queue-order": "smallest-first"'
start_dockerd
docker load -q -i /images/memholder.tar >/dev/null || fail "docker load of the memory holder failed"
zone_report
[ -z "$(used_zones)" ] || fail "zones hold data before any checkpoint: $(used_zones)"
cp "$W/report" "$OUT/zones-start.txt"

if [ "$TOGETHER" = 1 ]; then
	step "the trace: $nops operations, the creates of a time at once"
else
	step "the trace: $nops operations, one at a time"
fi
printf 'op\tkind\tcontainer\tcheckpoint\tbytes\toutcome\tseconds\tissued\tsize\n' >"$OUT/ops.tsv"
# device.tsv: after each operation (or group of creates at once), the
# namespace's sectors read and written since the trace began: the reads are
# relocations', so that where the device and the replay part can be found
printf 'op\tread_sectors\twritten_sectors\n' >"$OUT/device.tsv"
mapfile -t rows < <(tail -n +2 "$TRACE")
read -r r0 w0 < <(counters)
T0=$EPOCHREALTIME
i=0
while [ "$i" -lt "${#rows[@]}" ]; do
	# the group: this operation, and with TOGETHER=1 the creates of other
	# containers that follow it at the same time
	IFS=, read -r t op _ <<<"${rows[i]}"
	j=$((i + 1))
	if [ "$TOGETHER" = 1 ] && [ "$op" = create ]; then
		declare -A in_group=()
		while [ "$j" -lt "${#rows[@]}" ]; do
			IFS=, read -r t2 op2 c2 _ <<<"${rows[j]}"
			[ "$t2" = "$t" ] && [ "$op2" = create ] && [ -z "${in_group[$c2]:-}" ] || break
			in_group[$c2]=1
			j=$((j + 1))
		done
		unset in_group
	fi
	issued=$(elapsed "$T0")
	if [ $((j - i)) -gt 1 ]; then
		# holders first, then their checkpoints at once
		for ((k = i; k < j; k++)); do
			IFS=, read -r _ _ c cp bytes _ <<<"${rows[k]}"
			ensure_holder "$c" "$bytes"
		done
		pids=()
		for ((k = i; k < j; k++)); do
			IFS=, read -r _ _ c cp bytes _ <<<"${rows[k]}"
			op_create $((k + 1)) "$c" "$cp" "$bytes" "$issued" &
			pids+=($!)
		done
		for k in "${!pids[@]}"; do
			wait "${pids[k]}" || fail "op $((i + k + 1)) failed (above)"
		done
	else
		IFS=, read -r _ op c cp bytes _ <<<"${rows[i]}"
		case $op in
		create) op_create $((i + 1)) "$c" "$cp" "$bytes" "$issued" ;;
		delete) op_delete $((i + 1)) "$c" "$cp" "$issued" ;;
		*) fail "$TRACE line $((i + 2)): unknown operation '$op'" ;;
		esac
	fi
	for ((k = i; k < j; k++)); do
		IFS=, read -r _ _ c _ <<<"${rows[k]}"
		done_with $((k + 1)) "$c"
		note "op $((k + 1)) of $nops at ${SECONDS}s: $(awk -F'\t' -v n=$((k + 1)) '$1 == n {print $2, $3 "/" $4 ": " $6 " (" $7 " s)"}' "$OUT/ops.tsv")"
		[ $(((k + 1) % EVERY)) != 0 ] || check_no_leak
	done
	read -r r w < <(counters)
	printf '%s\t%s\t%s\n' "$j" "$((r - r0))" "$((w - w0))" >>"$OUT/device.tsv"
	i=$j
done
read -r r1 w1 < <(counters)
check_no_leak
cp "$W/report" "$OUT/zones-end.txt"
cp "$INDEX" "$OUT/index-end.json"

step "every listed checkpoint restores"
printf 'container\tcheckpoint\tbefore\tbelow\tfirst_count\tseconds\n' >"$OUT/restores.tsv"
restored=0
for f in "$W"/c/*.cps; do
	[ -s "$f" ] || continue
	c=$(basename "$f" .cps)
	use_holder "$(cname "$c")"
	listed=$(docker checkpoint ls "$MH" | tail -n +2 | sort)
	[ "$listed" = "$(awk '{print $1}' "$f" | sort)" ] ||
		fail "$MH: docker lists [$(tr '\n' ' ' <<<"$listed")], the run made and kept [$(awk '{print $1}' "$f" | tr '\n' ' ')]"
	# The bound of each: the count before the next checkpoint of the holder
	# (a restore reports at most about 100 ticks past its state), and for
	# the last, the count now.
	now=$(last_count)
	mapfile -t cps <"$f"
	for i in "${!cps[@]}"; do
		read -r cp before <<<"${cps[i]}"
		below=$now
		[ $((i + 1)) -ge "${#cps[@]}" ] || below=$(($(awk '{print $2}' <<<"${cps[i + 1]}") + 100))
		case $(state) in
		running)
			docker kill "$MH" >/dev/null || fail "docker kill $MH failed"
			wait_for 30 state_is exited || fail "$MH is $(state) after docker kill"
			;;
		exited) ;;
		*) fail "$MH is $(state) before its restore from $cp" ;;
		esac
		t0=$EPOCHREALTIME
		from=$(($(holder_log | wc -l) + 1))
		restore_verified "$cp" "$before" "$below"
		printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$cp" "$before" "$below" "$(reports "$from" | head -n 1 | field count)" "$(elapsed "$t0")" >>"$OUT/restores.tsv"
		restored=$((restored + 1))
	done
done
read -r r2 w2 < <(counters)
check_no_leak

cat >"$OUT/counters.json" <<EOF
{"sector_bytes": 512,
 "trace": {"read_sectors": $((r1 - r0)), "written_sectors": $((w1 - w0))},
 "restores": {"read_sectors": $((r2 - r1)), "written_sectors": $((w2 - w1))},
 "operations": $nops, "restored": $restored}
EOF
cp "$LOG" "$OUT/dockerd.log"
made=$(awk -F'\t' 'NR > 1 && $2 == "create" && $6 == "ok"' "$OUT/ops.tsv" | wc -l)
refused=$(awk -F'\t' 'NR > 1 && $2 == "create" && $6 ~ /^failed/' "$OUT/ops.tsv" | wc -l)
note "$made checkpoints made, $refused refused, $restored listed at the end and restored"
echo ZNS-TRACE-RESULTS-BEGIN
tar -C "$OUT" -czf - . | base64
echo ZNS-TRACE-RESULTS-END
printf '\nzns-trace: all checks passed in %ss\n' "$SECONDS"
