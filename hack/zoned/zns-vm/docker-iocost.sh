#!/usr/bin/env bash
# What a checkpoint costs a neighbour on the disk, with the daemon's own
# pacing and with the kernel's I/O controller (checkpoints.io-weight), in the
# guest of `hack/zoned/zns-vm.sh run-root` (started by hack/zoned/zns-iocost-vm.sh,
# in a root made by hack/zoned/zns-vm/docker-root.sh): a pure cgroup v2 host
# with blk-iocost and BFQ, which this project's hosts are not.
#
# The conventional namespace $ZNS_PLAIN_DEVICE (hack/zoned/zns-iocost-vm.sh
# makes it a disk of ZNS_IOCOST_DISK_BPS bytes a second whose requests wait
# in one queue) gets an ext4 file system; the checkpoints are made into a
# directory on it (--checkpoint-dir), and a neighbour
# (/usr/local/bin/commits), in a cgroup of its own of the default weight,
# makes 4 KiB commits, each followed by fdatasync, in a file on it. Per repetition and variant, in an order that
# turns each repetition: the daemon starts with the variant's settings, a
# memory holder of ZNS_IOCOST_MIB MiB comes up, the neighbour commits for 2 s
# alone and then through a `docker checkpoint create --leave-running` (or,
# for "alone", for ZNS_IOCOST_ALONE_S more seconds without one). Variants:
#
#   alone    no checkpoint
#   nocap    no option: CRIU writes the images straight to the disk
#   cap      checkpoints.write-pace "fixed" at ZNS_IOCOST_CAP
#   auto     checkpoints.write-pace "device"
#   iocost   checkpoints.io-weight ZNS_IOCOST_WEIGHT (10-1000, as --blkio-weight), blk-iocost enabled on the
#            disk: io.cost.model linear at ZNS_IOCOST_DISK_BPS (and as many
#            4 KiB IOs a second), io.cost.qos ctrl=user with rpct=wpct=95 and
#            rlat=wlat twice the neighbour's median commit alone, measured
#            first
#   bfq      checkpoints.io-weight ZNS_IOCOST_WEIGHT, the disk's scheduler bfq
#
# The results (runs.tsv: variant, repetition, the checkpoint's start and end
# in Unix ns, the disk's sectors written during it, the bytes the daemon
# says it wrote, the bytes the kernel charged to the daemon's copy group;
# the neighbour's commits per run; the daemon's logs; the qos and model)
# are printed at the end between ZNS-IOCOST-RESULTS-BEGIN and
# ZNS-IOCOST-RESULTS-END as a base64 tar.gz. It exits 0 if every run ended.
#
# Environment: ZNS_PLAIN_DEVICE (set by hack/zoned/zns-vm.sh),
# ZNS_IOCOST_REPS [4], ZNS_IOCOST_MIB [96], ZNS_IOCOST_CAP [16MiB],
# ZNS_IOCOST_WEIGHT [10], ZNS_IOCOST_ALONE_S [4], ZNS_IOCOST_DISK_BPS [67108864],
# ZNS_IOCOST_VARIANTS ["alone,nocap,cap,auto,iocost,bfq"].
set -euo pipefail

# shellcheck disable=SC2034 # read by docker-lib.sh
NAME=zns-iocost
# shellcheck source=hack/zoned/zns-vm/docker-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/docker-lib.sh"
REPS=${ZNS_IOCOST_REPS:-4}
MIB=${ZNS_IOCOST_MIB:-96}
CAP=${ZNS_IOCOST_CAP:-16MiB}
WEIGHT=${ZNS_IOCOST_WEIGHT:-10}
ALONE_S=${ZNS_IOCOST_ALONE_S:-4}
DISK_BPS=${ZNS_IOCOST_DISK_BPS:-67108864}
GROUP=/sys/fs/cgroup/dockerd-checkpoint-io
NGROUP=/sys/fs/cgroup/neighbour
V=${ZNS_IOCOST_VARIANTS:-alone,nocap,cap,auto,iocost,bfq}
read -r -a VARIANTS <<<"${V//,/ }"
PLAIN=${ZNS_PLAIN_DEVICE:?ZNS_PLAIN_DEVICE is not set: run this in hack/zoned/zns-vm.sh run-root}
DISK=${PLAIN#/dev/}
MNT=/mnt/disk
OUT=$W/out
NEIGHBOUR_PID=""

on_iocost_exit() {
	local rc=$?
	if [ -n "$NEIGHBOUR_PID" ]; then
		kill "$NEIGHBOUR_PID" 2>/dev/null || true
		wait "$NEIGHBOUR_PID" 2>/dev/null || true
	fi
	[ "$rc" = 0 ] || diagnostics
	results
	exit "$rc"
}

# results: $OUT as a base64 tar.gz between the marker lines
results() {
	cp "$LOG" "$OUT/dockerd.log" 2>/dev/null || true
	echo ZNS-IOCOST-RESULTS-BEGIN
	tar -czf - -C "$OUT" . | base64
	echo ZNS-IOCOST-RESULTS-END
}

sectors_written() { awk '{print $7}' "/sys/block/$DISK/stat"; }
now_ns() { date +%s%N; }

# neighbour_start name / neighbour_stop: the commits, into $OUT/name.commits
neighbour_start() {
	sh -c 'echo $$ >"$1/cgroup.procs" && exec commits "$2"' sh "$NGROUP" "$MNT/neighbour" >"$OUT/$1.commits" &
	NEIGHBOUR_PID=$!
}
# group_written: the bytes written the kernel charged to the copy's group
group_written() { awk '{for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) {sub(/wbytes=/, "", $i); n += $i}} END {print n + 0}' "$GROUP/io.stat" 2>/dev/null || echo 0; }
neighbour_stop() {
	kill "$NEIGHBOUR_PID"
	wait "$NEIGHBOUR_PID" || fail "the neighbour failed"
	NEIGHBOUR_PID=""
}

# pct q file: the q-quantile of the commits' latencies in a file (ns)
pct() { awk '{print $2}' "$2" | sort -n | awk -v q="$1" '{a[NR] = $1} END {i = int(NR * q); if (i < 1) i = 1; print a[i]}'; }

# setup_variant v: the disk's scheduler and iocost as v wants them, and the
# daemon's configuration
setup_variant() {
	local sched=none members=""
	echo "$MAJMIN enable=0" >/sys/fs/cgroup/io.cost.qos
	echo "$MODEL" >/sys/fs/cgroup/io.cost.model
	case $1 in
	alone | nocap) ;;
	cap) members="\"write-pace\": \"fixed\", \"write-bandwidth\": \"$CAP\"" ;;
	auto) members='"write-pace": "device"' ;;
	iocost)
		members="\"io-weight\": $WEIGHT"
		echo "$QOS" >/sys/fs/cgroup/io.cost.qos
		;;
	bfq)
		members="\"io-weight\": $WEIGHT"
		sched=bfq
		;;
	*) fail "unknown variant $1" ;;
	esac
	echo "$sched" >"/sys/block/$DISK/queue/scheduler"
	grep -q "\[$sched\]" "/sys/block/$DISK/queue/scheduler" || fail "the scheduler of $DISK is not $sched: $(cat "/sys/block/$DISK/queue/scheduler")"
	ZONED=0 write_config "$members"
}

# run v rep: one run
run() {
	local v=$1 rep=$2 t0 t1 s0 s1 g0 g1 rc=0 out written=""
	setup_variant "$v"
	: >"$LOG"
	start_dockerd
	start_holder "$MIB"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	neighbour_start "$v-$rep"
	sleep 2
	s0=$(sectors_written)
	g0=$(group_written)
	t0=$(now_ns)
	if [ "$v" = alone ]; then
		sleep "$ALONE_S"
	else
		out=$(docker checkpoint create --leave-running --checkpoint-dir "$MNT/cps" "$MH" "c$rep" 2>&1) || rc=$?
	fi
	t1=$(now_ns)
	s1=$(sectors_written)
	sleep 0.5
	g1=$(group_written)
	neighbour_stop
	[ "$rc" = 0 ] || fail "$v, repetition $rep: the checkpoint failed: $out"
	written=$(grep -o 'written=[0-9]*' "$LOG" | tail -n 1 | cut -d= -f2 || true)
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$v" "$rep" "$t0" "$t1" "$((s1 - s0))" "${written:-}" "$((g1 - g0))" >>"$OUT/runs.tsv"
	note "$v, repetition $rep: $(((t1 - t0) / 1000000)) ms, $(((s1 - s0) / 2048)) MiB written ($(((g1 - g0) >> 20)) MiB charged to $GROUP), neighbour p99 $(($(pct 0.99 "$OUT/$v-$rep.commits") / 1000)) us"
	case $v in
	iocost | bfq) [ "$((g1 - g0))" -ge "${written:-1}" ] || fail "$v, repetition $rep: the daemon wrote ${written:-?} bytes, $((g1 - g0)) were charged to $GROUP" ;;
	esac
	cp "$LOG" "$OUT/dockerd-$v-$rep.log"
	docker rm -f "$MH" >/dev/null
	rm -rf "$MNT/cps"
	kill "$DOCKERD_PID"
	wait_for 60 gone "$DOCKERD_PID" || fail "dockerd did not stop"
	wait "$DOCKERD_PID" 2>/dev/null || true
}

trap on_iocost_exit EXIT
step "setup"
guest_setup
mkdir -p "$OUT" "$MNT"
printf 'variant\trep\tstart_ns\tend_ns\tsectors_written\tdaemon_written\tgroup_written\n' >"$OUT/runs.tsv"
[ "$(cat "/sys/block/$DISK/queue/zoned")" = none ] || fail "$PLAIN is zoned"
MAJMIN=$(cat "/sys/block/$DISK/dev")
[ -e /sys/fs/cgroup/io.cost.qos ] || fail "the guest's kernel has no blk-iocost (no io.cost.qos)"
grep -q bfq "/sys/block/$DISK/queue/scheduler" || fail "the guest's kernel has no bfq scheduler: $(cat "/sys/block/$DISK/queue/scheduler")"
# the neighbour's group (and the daemon's, which it makes itself) under
# the io and memory controllers
echo "+io +memory" >/sys/fs/cgroup/cgroup.subtree_control
mkdir -p "$NGROUP"
MODEL="$MAJMIN ctrl=user model=linear rbps=$DISK_BPS rseqiops=$((DISK_BPS / 4096)) rrandiops=$((DISK_BPS / 4096)) wbps=$DISK_BPS wseqiops=$((DISK_BPS / 4096)) wrandiops=$((DISK_BPS / 4096))"
mkfs.ext4 -q -F "$PLAIN"
mount -o noatime "$PLAIN" "$MNT"
note "$PLAIN: $(($(blockdev --getsize64 "$PLAIN") >> 20)) MiB, ext4 at $MNT, $MAJMIN"
ZONED=0 write_config ""
start_dockerd
docker load -q -i /images/memholder.tar >/dev/null || fail "docker load of the memory holder failed"
kill "$DOCKERD_PID"
wait_for 60 gone "$DOCKERD_PID" || fail "dockerd did not stop"

step "the neighbour alone, for iocost's latency target"
neighbour_start idle
sleep 5
neighbour_stop
wlat=$((2 * ($(pct 0.5 "$OUT/idle.commits") + 999) / 1000))
QOS="$MAJMIN enable=1 ctrl=user rpct=95.00 rlat=$wlat wpct=95.00 wlat=$wlat min=1.00 max=100.00"
printf '%s\n%s\n' "$QOS" "$MODEL" >"$OUT/qos"
note "io.cost.qos for the iocost variant: $QOS; io.cost.model: $MODEL"

n=${#VARIANTS[@]}
for ((rep = 1; rep <= REPS; rep++)); do
	step "repetition $rep of $REPS"
	for ((i = 0; i < n; i++)); do
		run "${VARIANTS[$(((i + rep - 1) % n))]}" "$rep"
	done
done
step "done"
