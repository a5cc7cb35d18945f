#!/usr/bin/env bats
# Checkpoints on the patched daemon: configuration of the checkpoint queue,
# and faults (a full disk, a daemon killed mid-checkpoint, a reload or a kill
# while the write cap paces the images).

load helpers
bats_require_minimum_version 1.5.0

setup_file() {
	"$AB_ROOT/hack/hosts/registry.sh" up >/dev/null
}

teardown_file() {
	"$AB_ROOT/hack/hosts/registry.sh" down
}

setup() {
	load_libs
}

teardown() {
	local m
	if [ -f "$BATS_TEST_TMPDIR/sampler.pid" ]; then
		kill "$(cat "$BATS_TEST_TMPDIR/sampler.pid")" 2>/dev/null || true
	fi
	if [ -f "$BATS_TEST_TMPDIR/busy.pid" ]; then
		stop_busy_disk
	fi
	for m in "$BATS_TEST_TMPDIR/small" "$BATS_TEST_TMPDIR/nfslike" /run/moby-ab/patched/exec/checkpoint-scratch; do
		if mountpoint -q "$m" 2>/dev/null; then
			umount "$m"
		fi
	done
	if [ -f "$BATS_TEST_TMPDIR/loop" ]; then
		losetup -d "$(cat "$BATS_TEST_TMPDIR/loop")" || true
	fi
	"$AB_ROOT/hack/hosts/daemon.sh" down patched >/dev/null 2>&1 || true
}

up_patched() { # [config json]
	local cfg=$BATS_TEST_TMPDIR/daemon.json
	echo "${1:-{\}}" >"$cfg"
	"$AB_ROOT/hack/hosts/daemon.sh" up patched --config "$cfg" >"$BATS_TEST_TMPDIR/env"
	use_env
}

use_env() {
	. "$BATS_TEST_TMPDIR/env"
	docker load -q -i "$AB_ROOT/build/images/memholder.tar" >/dev/null
}

start_memholder() { # name MiB
	docker run -d --name "$1" ab/memholder memholder "$2" >/dev/null
	wait_for 60 bash -c "docker logs $1 2>&1 | grep -q 'verified_passes='"
}

# last_count name: the last counter the memory holder reported.
last_count() {
	docker logs "$1" 2>&1 | sed -n 's/.* count=\([0-9]*\) .*/\1/p' | tail -1
}

# verifies_on name: the memory holder runs, and verifies its memory again
# (a new pass ends " ok") with no CORRUPT line.
verifies_on() {
	local n
	run docker inspect -f '{{.State.Running}}' "$1"
	assert_output true
	n=$(docker logs "$1" 2>&1 | grep -c ' ok$')
	wait_for 30 bash -c "[ \$(docker logs $1 2>&1 | grep -c ' ok\$') -gt $n ]" || fail "$1 verified no pass after the checkpoint"
	run docker logs "$1"
	refute_output --partial CORRUPT
}

# restore_resumes name [docker start args...]: restores the memory holder
# (checkpointed with --exit) and checks that it counts on from where the
# checkpoint took it, with its memory intact.
restore_resumes() {
	local name=$1
	shift
	restore_counts_on "$name" "$(last_count "$name")" "$@"
}

# restore_counts_on name count [docker start args...]: restores the stopped
# memory holder from a checkpoint taken after it had reported count, and
# checks that it counts on from there with its memory intact.
restore_counts_on() {
	local name=$1 before=$2 nlines first
	shift 2
	nlines=$(docker logs "$name" 2>&1 | wc -l)
	run docker start "$@" "$name"
	assert_success
	wait_for 30 bash -c "[ \$(docker logs $name 2>&1 | wc -l) -gt $nlines ]"
	first=$(docker logs "$name" 2>&1 | tail -n +"$((nlines + 1))" | sed -n 's/.* count=\([0-9]*\) .*/\1/p' | head -1)
	[ "$first" -gt "$before" ]
	run docker logs "$name"
	refute_output --partial CORRUPT
}

@test "patched: invalid checkpoint options are refused at start, naming the option" {
	bad() { # config want
		echo "$1" >"$BATS_TEST_TMPDIR/bad.json"
		run "$AB_ROOT/hack/hosts/daemon.sh" up patched --config "$BATS_TEST_TMPDIR/bad.json"
		assert_failure
		assert_output --partial "$2"
	}
	bad '{"checkpoints": {"max-concurrent": 0}}' "invalid checkpoints.max-concurrent: 0: must be at least 1"
	bad '{"checkpoints": {"queue-order": "lifo"}}' 'invalid checkpoints.queue-order: "lifo"'
	bad '{"checkpoints": {"max-waiting": -1}}' "invalid checkpoints.max-waiting: -1"
	bad '{"checkpoints": {"max-concurent": 1}}' 'invalid checkpoints: json: unknown field "max-concurent"'
	bad '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "200MB"}}' 'the unit "MB" is not one of B, KiB, MiB, GiB, TiB'
	bad '{"checkpoint-max-concurrent": 2, "checkpoints": {"max-concurrent": 2}}' "checkpoint-max-concurrent and checkpoints.max-concurrent must not both be specified"
}

@test "patched: a reload with a bad checkpoint option is refused, the daemon keeps running" {
	up_patched '{"checkpoints": {"queue-order": "fifo"}}'
	echo '{"checkpoints": {"queue-order": "lifo"}}' >"$BATS_TEST_TMPDIR/bad.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/bad.json"
	assert_failure
	assert_output --partial "reload refused"
	assert_output --partial 'invalid checkpoints.queue-order'
	echo '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "100KiB"}}' >"$BATS_TEST_TMPDIR/bad.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/bad.json"
	assert_failure
	assert_output --partial 'invalid checkpoints.write-bandwidth: \"100KiB\": must be at least 1MiB per second'
	run docker version --format '{{.Server.Version}}'
	assert_success
	# A good reload after the bad one applies.
	echo '{"checkpoints": {"max-concurrent": 2}}' >"$BATS_TEST_TMPDIR/good.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/good.json"
	assert_success
}

@test "patched: the checkpoint's phases are logged" {
	up_patched
	start_memholder mh 16
	run docker checkpoint create mh cp1
	assert_success
	run grep 'Checkpoint created' /var/lib/moby-ab/patched/dockerd.log
	assert_success
	assert_output --regexp 'checkpoint=cp1 .*commit=.*dump=.*queued='
}

@test "patched: a restored container's memory usage is known to its next checkpoint" {
	# containerd reports no metrics for a task restored from a checkpoint;
	# the queue's order and the scratch space check need the usage anyway
	up_patched
	start_memholder mh 32
	docker checkpoint create mh cp1 >/dev/null
	restore_resumes mh --checkpoint cp1
	run docker checkpoint create --leave-running mh cp2
	assert_success
	line=$(grep 'Checkpoint created' /var/lib/moby-ab/patched/dockerd.log | grep 'checkpoint=cp2')
	[[ "$line" =~ memory=([0-9]+) ]]
	[ "${BASH_REMATCH[1]}" -ge $((32 << 20)) ]
}

@test "patched: a fixed write pace paces the image writes; the checkpoint restores" {
	# 8 MiB/s: a 32 MiB memory holder's images (about 33 MiB) need at least
	# (33 - 1 MiB burst) / 8 = 4 s to be written; without the cap, 0.1 s.
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "8MiB"}}'
	start_memholder mh 32
	run docker checkpoint create mh cp1
	assert_success
	line=$(grep 'Checkpoint created' /var/lib/moby-ab/patched/dockerd.log | grep 'checkpoint=cp1')
	echo "# $line" >&3
	[[ "$line" =~ written=([0-9]+) ]]
	written=${BASH_REMATCH[1]}
	[ "$written" -ge $((32 << 20)) ]
	[[ "$line" =~ write=([0-9.]+)(m?s) ]]
	write_s=${BASH_REMATCH[1]}
	[ "${BASH_REMATCH[2]}" = s ] || write_s=0
	# the token bucket's floor: (written - burst) / rate
	awk -v w="$write_s" -v n="$written" 'BEGIN { exit !(w >= (n - 1048576) / (8 * 1048576) * 0.98) }'
	# no scratch left behind, and the checkpoint restores
	run find /run/moby-ab/patched/exec/checkpoint-scratch -mindepth 1
	assert_output ""
	docker start --checkpoint cp1 mh
	run docker inspect -f '{{.State.Running}}' mh
	assert_output true
	# the memory holder keeps verifying its pattern after the restore
	n=$(docker logs mh 2>&1 | grep -c ' ok$')
	wait_for 30 bash -c "[ \$(docker logs mh 2>&1 | grep -c ' ok\$') -gt $n ]"
}

@test "patched: a fixed write pace holds at the device, not only in the page cache" {
	# 16 MiB/s: a 64 MiB memory holder's images (about 65 MiB) take at
	# least 4 s to write. The disk under the data-root must see them as
	# they are paced: by half-way through the checkpoint at least a quarter
	# of them (a write left to the page cache reaches it only at the fsync
	# at the end), and all of them by its end.
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "16MiB"}}'
	start_memholder mh 64
	dev=$(python3 "$AB_ROOT/hack/measure/diskstats.py" disk /var/lib/moby-ab/patched)
	sync
	python3 "$AB_ROOT/hack/measure/diskstats.py" sample "$dev" "$BATS_TEST_TMPDIR/samples" &
	echo $! >"$BATS_TEST_TMPDIR/sampler.pid"
	wait_for 5 test -s "$BATS_TEST_TMPDIR/samples"
	t0=$(date +%s.%N)
	docker checkpoint create --leave-running mh cp1 >/dev/null
	t1=$(date +%s.%N)
	sleep 0.3 # a last sample after the end
	kill "$(cat "$BATS_TEST_TMPDIR/sampler.pid")"
	line=$(grep 'Checkpoint created' /var/lib/moby-ab/patched/dockerd.log | grep 'checkpoint=cp1')
	[[ "$line" =~ written=([0-9]+) ]]
	written=${BASH_REMATCH[1]}
	[ "$written" -ge $((64 << 20)) ]
	run env PYTHONPATH="$AB_ROOT/hack/measure" python3 -c '
import sys
import diskstats
rows = diskstats.read(sys.argv[1])
t0, t1, images = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
mid = t0 + (t1 - t0) / 2
half, total = diskstats.written(rows, t0, mid), diskstats.written(rows, t0, t1)
print(f"checkpoint {t1 - t0:.2f} s; images {images >> 20} MiB; the device took {half >> 20} MiB by half-way, {total >> 20} MiB in all")
sys.exit(0 if t1 - t0 >= 3.0 and half >= images / 4 and total >= images else 1)
' "$BATS_TEST_TMPDIR/samples" "$t0" "$t1" "$written"
	echo "# $output" >&3
	assert_success
}

# device_bytes_check samples t0 t1 images cap-bytes-per-s-or-0: what the
# data-root's disk took from t0 to t1 (the whole checkpoint, dump included):
# at most 1.5x the images' bytes (once, plus the others' writes on a shared
# disk; a dump that reaches the disk before the paced write makes it 2x),
# and, with a cap, at most 2x the cap over any one-second window (the dump
# flushed at the disk's speed makes it several times the cap).
device_bytes_check() {
	run env PYTHONPATH="$AB_ROOT/hack/measure" python3 -c '
import sys
import diskstats
rows = diskstats.read(sys.argv[1])
t0, t1, images, cap = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
total, worst = diskstats.written(rows, t0, t1), diskstats.worst_window(rows, t0, t1)
print(f"checkpoint {t1 - t0:.2f} s; images {images >> 20} MiB; the device took {total >> 20} MiB "
      f"({total / images:.2f}x), at most {worst / 2**20:.0f} MiB/s over 1 s" + (f" ({worst / cap:.2f}x the cap)" if cap else ""))
ok = total <= 1.5 * images and (not cap or worst <= 2 * cap)
sys.exit(0 if ok else 1)
' "$@"
	echo "# $output" >&3
	assert_success
}

# checkpoint_on_device name checkpoint [args...]: docker checkpoint create
# name checkpoint args while the data-root's disk is sampled; sets t0, t1
# and written (the images' bytes, from the daemon's log).
checkpoint_on_device() {
	local name=$1 cp=$2
	shift 2
	dev=$(python3 "$AB_ROOT/hack/measure/diskstats.py" disk /var/lib/moby-ab/patched)
	sync
	: >"$BATS_TEST_TMPDIR/samples"
	python3 "$AB_ROOT/hack/measure/diskstats.py" sample "$dev" "$BATS_TEST_TMPDIR/samples" &
	echo $! >"$BATS_TEST_TMPDIR/sampler.pid"
	wait_for 5 test -s "$BATS_TEST_TMPDIR/samples"
	t0=$(date +%s.%N)
	docker checkpoint create "$@" "$name" "$cp" >/dev/null
	t1=$(date +%s.%N)
	sleep 0.3 # a last sample after the end
	kill "$(cat "$BATS_TEST_TMPDIR/sampler.pid")"
	rm "$BATS_TEST_TMPDIR/sampler.pid"
	line=$(grep 'Checkpoint created' /var/lib/moby-ab/patched/dockerd.log | grep "checkpoint=$cp")
	[[ "$line" =~ written=([0-9]+) ]]
	written=${BASH_REMATCH[1]}
}

@test "patched: a checkpoint that stops the container: the disk takes the images once, at the cap" {
	# Without --leave-running CRIU stops the container, whose overlay is
	# unmounted, which syncs the file system under it: a dump in a
	# scratch directory on that disk would go to it at full speed, and the
	# images a second time at the cap. 256 MiB at 64 MiB/s: 4 s.
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "64MiB"}}'
	run findmnt -n -o FSTYPE /run/moby-ab/patched/exec/checkpoint-scratch
	echo "# checkpoint scratch: ${output:-not a mount point}" >&3
	start_memholder mh 256
	before=$(last_count mh)
	checkpoint_on_device mh cp1
	[ "$written" -ge $((256 << 20)) ]
	device_bytes_check "$BATS_TEST_TMPDIR/samples" "$t0" "$t1" "$written" $((64 << 20))
	run docker inspect -f '{{.State.Status}}' mh
	assert_output exited
	restore_counts_on mh "$before" --checkpoint cp1
	# "auto": the images reach the disk once too
	echo '{"checkpoints": {"write-pace": "device"}}' >"$BATS_TEST_TMPDIR/auto.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/auto.json"
	assert_success
	checkpoint_on_device mh cp2
	device_bytes_check "$BATS_TEST_TMPDIR/samples" "$t0" "$t1" "$written" 0
	scratch_empty
}

@test "patched: smallest-first at a limit of 1: checkpoints requested together finish smallest first" {
	# The 512 MiB holder's checkpoint finds the daemon idle and dumps; the
	# 64 MiB one is requested next, the 16 MiB one after it, while it
	# still dumps. FIFO would finish large, 64 MiB, 16 MiB. The options
	# are given by their deprecated top-level keys, as test nodes of earlier
	# releases have them: they still take effect, each with a warning.
	up_patched '{"checkpoint-max-concurrent": 1, "checkpoint-queue-order": "smallest-first"}'
	run grep -F 'checkpoint-queue-order is deprecated and will be removed in a later release: use checkpoints.queue-order (here \"smallest-first\")' /var/lib/moby-ab/patched/dockerd.log
	assert_success
	start_memholder large 512
	start_memholder mid 64
	start_memholder small 16
	since=$(date +%s.%N)
	docker checkpoint create --leave-running large cp1 >/dev/null &
	local pids=($!)
	# it has its slot once its staging directory is there
	wait_for 10 compgen -G "/var/lib/moby-ab/patched/data/containers/$(docker inspect -f '{{.Id}}' large)/checkpoints/.staging-*"
	docker checkpoint create --leave-running mid cp1 >/dev/null &
	pids+=($!)
	sleep 0.1 # mid's request first
	sent=$(date +%s%N)
	docker checkpoint create --leave-running small cp1 >/dev/null &
	pids+=($!)
	for p in "${pids[@]}"; do wait "$p"; done
	run docker events --since "$since" --until "$(date +%s.%N)" --filter type=container --filter event=checkpoint --format '{{.TimeNano}} {{.Actor.Attributes.name}}'
	echo "# small sent at $sent; $(echo "$output" | tr '\n' ' ')" >&3
	[ "${#lines[@]}" -eq 3 ]
	# the large one was still dumping when the small one was requested
	[ "${lines[0]#* }" = large ]
	[ "${lines[0]%% *}" -gt "$sent" ]
	[ "${lines[1]#* }" = small ]
	[ "${lines[2]#* }" = mid ]
}

@test "patched: checkpoint directories are 0700 and their files 0600, paced or not" {
	up_patched
	start_memholder mh 16
	docker checkpoint create --leave-running mh cp1 >/dev/null
	echo '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "256MiB"}}' >"$BATS_TEST_TMPDIR/cap.json"
	"$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/cap.json" >/dev/null
	docker checkpoint create --leave-running mh cp2 >/dev/null
	root=/var/lib/moby-ab/patched/data/containers/$(docker inspect -f '{{.Id}}' mh)/checkpoints
	[ -n "$(find "$root/cp1" -name 'pages-*.img')" ]
	[ -n "$(find "$root/cp2" -name 'pages-*.img')" ]
	# every directory 0700, every file 0600, nothing else
	run find "$root" \( -type d -not -perm 0700 \) -o \( -type f -not -perm 0600 \) -o \( -not -type d -not -type f \) -printf '%M %p\n'
	assert_success
	assert_output ""
}

@test "patched: a checkpoint that runs out of space fails cleanly" {
	up_patched
	# without an option that dumps to scratch, no scratch tmpfs (0075)
	run scratch_mounts
	assert_output ""
	start_memholder mh 64
	mkdir "$BATS_TEST_TMPDIR/small"
	mount -t tmpfs -o size=8m,mode=0700 tmpfs "$BATS_TEST_TMPDIR/small"
	run docker checkpoint create --leave-running --checkpoint-dir "$BATS_TEST_TMPDIR/small" mh cp1
	assert_failure
	# The container still runs, and nothing partial is listed or left behind.
	run docker inspect -f '{{.State.Running}}' mh
	assert_output true
	run docker checkpoint ls --checkpoint-dir "$BATS_TEST_TMPDIR/small" mh
	assert_success
	refute_output --partial cp1
	run ls -A "$BATS_TEST_TMPDIR/small"
	assert_output ""
	# The memory holder keeps verifying its memory after the failure.
	verifies_on mh
}

@test "patched: images that do not fit the scratch space: refused with a fixed pace, unpaced with the device pace" {
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "64MiB"}}'
	start_memholder mh 32
	scratch=/run/moby-ab/patched/exec/checkpoint-scratch
	mkdir -p "$scratch"
	mount -t tmpfs -o size=8m tmpfs "$scratch"
	# a fixed cap: refused before the container is frozen, naming the option
	run docker checkpoint create --leave-running mh cp1
	assert_failure
	assert_output --partial 'checkpoints.write-pace'
	assert_output --partial 'do not fit'
	run docker inspect -f '{{.State.Running}}' mh
	assert_output true
	run docker checkpoint ls mh
	refute_output --partial cp1
	# "auto": CRIU writes the images straight into the checkpoint, unpaced,
	# and the checkpoint restores. A writer on the data-root's disk keeps
	# it busy, so that "auto" would pace (a quiet disk is not paced: 0038).
	echo '{"checkpoints": {"write-pace": "device"}}' >"$BATS_TEST_TMPDIR/auto.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/auto.json"
	assert_success
	busy_disk /var/lib/moby-ab/patched/busy
	run docker checkpoint create mh cp2
	stop_busy_disk
	assert_success
	run grep 'Checkpoint images written unpaced' /var/lib/moby-ab/patched/dockerd.log
	assert_success
	assert_output --partial 'do not fit'
	run find "$scratch" -mindepth 1
	assert_output ""
	umount "$scratch"
	restore_resumes mh --checkpoint cp2
}

# busy_disk file: write file with O_DIRECT and fsync in a loop, in the
# background, until stop_busy_disk (which removes it).
busy_disk() {
	local busy_file=$1
	while :; do
		dd if=/dev/zero of="$busy_file" bs=64k count=16 oflag=direct conv=fsync status=none || break
	done &
	echo $! >"$BATS_TEST_TMPDIR/busy.pid"
	echo "$busy_file" >"$BATS_TEST_TMPDIR/busy.file"
	wait_for 5 test -s "$busy_file"
}

stop_busy_disk() {
	local pid
	pid=$(cat "$BATS_TEST_TMPDIR/busy.pid")
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$(cat "$BATS_TEST_TMPDIR/busy.file")" "$BATS_TEST_TMPDIR/busy.pid" "$BATS_TEST_TMPDIR/busy.file"
}

# kill_daemon: SIGKILL the patched dockerd and let the test's background job
# (the docker CLI) end.
kill_daemon() {
	local pid
	pid=$(cat /run/moby-ab/patched/dockerd.pid)
	kill -KILL "$pid"
	wait || true
	wait_for 10 bash -c "[ ! -e /proc/$pid ]"
}

# restart_daemon: start the daemon again with the same config.
restart_daemon() {
	"$AB_ROOT/hack/hosts/daemon.sh" up patched --config "$BATS_TEST_TMPDIR/daemon.json" >"$BATS_TEST_TMPDIR/env"
	use_env
}

kill_and_restart() {
	kill_daemon
	restart_daemon
}

# paced_write_running checkpoints-dir name: the paced write of checkpoint
# name is under way: CRIU has finished the dump into scratch, and the
# daemon has copied images up to the pages into the checkpoint's staging
# directory (CRIU writes nothing there with a cap), which is not committed
# yet.
paced_write_running() {
	compgen -G "$1/.staging-$2-*/pages-*.img" >/dev/null &&
		[ ! -e "$1/$2" ]
}

# scratch_empty: nothing in the checkpoint scratch directory.
scratch_empty() {
	[ -z "$(find /run/moby-ab/patched/exec/checkpoint-scratch -mindepth 1 2>/dev/null)" ]
}

# checkpoint_names container: the names docker checkpoint ls lists.
checkpoint_names() {
	local out
	out=$(docker checkpoint ls "$1") || return
	tail -n +2 <<<"$out"
}

# checkpoint_listed container name
checkpoint_listed() {
	checkpoint_names "$1" 2>/dev/null | grep -qx "$2"
}

@test "patched: a reload during a paced write applies the new pace; the checkpoint is whole" {
	# 32 MiB at 4 MiB/s takes 8 s; at 256 MiB/s a fraction of a second.
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "4MiB"}}'
	start_memholder mh 32
	before=$(last_count mh)
	cps=/var/lib/moby-ab/patched/data/containers/$(docker inspect -f '{{.Id}}' mh)/checkpoints
	docker checkpoint create --leave-running mh cp1 >"$BATS_TEST_TMPDIR/cp.out" 2>&1 &
	cp=$!
	wait_for 30 paced_write_running "$cps" cp1
	sleep 1
	echo '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "256MiB"}}' >"$BATS_TEST_TMPDIR/fast.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/fast.json"
	assert_success
	wait "$cp"
	line=$(grep 'Checkpoint created' /var/lib/moby-ab/patched/dockerd.log | grep 'checkpoint=cp1')
	echo "# $line" >&3
	[[ "$line" =~ write=([0-9.]+)(m?s) ]]
	write_s=${BASH_REMATCH[1]}
	[ "${BASH_REMATCH[2]}" = s ] || write_s=0
	# the rest went at the new pace: well under the 7.75 s the old one needed
	awk -v w="$write_s" 'BEGIN { exit !(w < 6) }'
	run docker checkpoint ls mh
	assert_output --partial cp1
	run find /run/moby-ab/patched/exec/checkpoint-scratch -mindepth 1
	assert_output ""
	run docker inspect -f '{{.State.Running}}' mh
	assert_output true
	docker kill mh >/dev/null
	docker wait mh >/dev/null
	restore_counts_on mh "$before" --checkpoint cp1
}

@test "patched: a daemon killed during a paced write finishes the checkpoint at start" {
	# 32 MiB at 4 MiB/s: the write takes 8 s.
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "4MiB"}}'
	start_memholder mh 32
	local cps before
	cps=/var/lib/moby-ab/patched/data/containers/$(docker inspect -f '{{.Id}}' mh)/checkpoints
	before=$(last_count mh)
	docker checkpoint create mh cp1 >/dev/null 2>&1 &
	wait_for 30 paced_write_running "$cps" cp1
	kill_daemon
	# The kill landed in the write: the dump is complete in scratch, the
	# checkpoint half written and not committed.
	[ ! -e "$cps/cp1" ] || fail "cp1 was committed before the kill"
	compgen -G "$cps/.staging-cp1-*" >/dev/null || fail "no staging directory of cp1"
	restart_daemon
	# Listed, whole, and nothing else left.
	run checkpoint_names mh
	assert_success
	assert_output cp1
	[ -f "$cps/cp1/inventory.img" ] || fail "cp1 is listed without its inventory.img"
	wait_for 5 no_staging "$cps" || fail "left after the restart: $(ls -A "$cps" | tr '\n' ' ')"
	run find /run/moby-ab/patched/exec/checkpoint-scratch -mindepth 1
	assert_output ""
	# The container was checkpointed with --exit: it restores from cp1.
	run docker inspect -f '{{.State.Status}}' mh
	assert_output exited
	restore_counts_on mh "$before" --checkpoint cp1
}

@test "patched: a client that gives up during a paced write: the checkpoint is kept" {
	# 32 MiB at 4 MiB/s: the write takes 8 s; the client is interrupted in it.
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "4MiB"}}'
	start_memholder mh 32
	local cps before cli
	cps=/var/lib/moby-ab/patched/data/containers/$(docker inspect -f '{{.Id}}' mh)/checkpoints
	before=$(last_count mh)
	docker checkpoint create mh cp1 >"$BATS_TEST_TMPDIR/cp.out" 2>&1 &
	cli=$!
	wait_for 30 paced_write_running "$cps" cp1
	# (SIGTERM: a background job of a script ignores SIGINT.)
	kill -TERM "$cli"
	local rc=0
	wait "$cli" || rc=$?
	[ "$rc" -ne 0 ] || fail "the client finished before it was interrupted"
	# The request is gone; the checkpoint is committed all the same.
	wait_for 30 checkpoint_listed mh cp1 || fail "cp1 never listed: $(ls -A "$cps" | tr '\n' ' ')"
	[ -f "$cps/cp1/inventory.img" ] || fail "cp1 is listed without its inventory.img"
	run ls -A "$cps"
	assert_output cp1
	# The scratch copy goes once the checkpoint is committed.
	wait_for 10 scratch_empty || fail "left in scratch: $(ls -A /run/moby-ab/patched/exec/checkpoint-scratch | tr '\n' ' ')"
	run docker inspect -f '{{.State.Status}}' mh
	assert_output exited
	restore_counts_on mh "$before" --checkpoint cp1
}

@test "patched: a paced checkpoint that would not fit is refused before the freeze, naming the room" {
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "16MiB"}}'
	start_memholder mh 64
	mkdir "$BATS_TEST_TMPDIR/small"
	mount -t tmpfs -o size=8m,mode=0700 tmpfs "$BATS_TEST_TMPDIR/small"
	# without --leave-running: had CRIU dumped, the container would be gone
	run docker checkpoint create --checkpoint-dir "$BATS_TEST_TMPDIR/small" mh cp1
	assert_failure
	assert_output --regexp "not enough room for the checkpoint images in $BATS_TEST_TMPDIR/small: they need about 6[4-9] MiB .*, 8 MiB is available"
	run docker inspect -f '{{.State.Running}}' mh
	assert_output true
	run docker checkpoint ls --checkpoint-dir "$BATS_TEST_TMPDIR/small" mh
	assert_success
	refute_output --partial cp1
	run ls -A "$BATS_TEST_TMPDIR/small"
	assert_output ""
	run find /run/moby-ab/patched/exec/checkpoint-scratch -mindepth 1
	assert_output ""
	verifies_on mh
}

# scratch_mounts: the file system types mounted on the checkpoint scratch
# directory, one a line, oldest first.
scratch_mounts() {
	awk '$5 == "/run/moby-ab/patched/exec/checkpoint-scratch" { for (i = 7; $i != "-"; i++); print $(i + 1) }' /proc/self/mountinfo
}

@test "patched: checkpoint scratch is a tmpfs of the daemon's own, kept across a kill, unmounted at shutdown" {
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "64MiB"}}'
	run scratch_mounts
	assert_output tmpfs
	# a kill unmounts nothing; the next start takes the tmpfs it finds
	kill_daemon
	run scratch_mounts
	assert_output tmpfs
	restart_daemon
	run scratch_mounts
	assert_output tmpfs
	echo "# $(grep 'Checkpoint scratch space' /var/lib/moby-ab/patched/dockerd.log | tail -1)" >&3
	# a shutdown unmounts it
	local pid
	pid=$(cat /run/moby-ab/patched/dockerd.pid)
	kill -TERM "$pid"
	wait_for 30 bash -c "[ ! -e /proc/$pid ]"
	run scratch_mounts
	assert_output ""
}

@test "patched: a daemon killed during a checkpoint leaves nothing partial" {
	up_patched
	start_memholder mh 512
	local cps ctrpid
	cps=/var/lib/moby-ab/patched/data/containers/$(docker inspect -f '{{.Id}}' mh)/checkpoints
	ctrpid=$(docker inspect -f '{{.State.Pid}}' mh)
	docker checkpoint create --leave-running mh cp1 >/dev/null 2>&1 &
	wait_dump_running "$cps" "$ctrpid" cp1
	kill_daemon
	# The kill landed before the commit: cp1 is not there.
	[ ! -e "$cps/cp1" ] || fail "cp1 was committed before the kill"
	restart_daemon
	run docker inspect -f '{{.State.Status}}' mh
	assert_success
	assert_output --regexp '^(running|exited)$'
	# Listed only if whole: CRIU goes on after the kill, and a dump it
	# finished is committed at the start (0073); nothing else is left.
	run checkpoint_names mh
	assert_success
	[ -z "$output" ] || [ "$output" = cp1 ] || fail "listed after the restart: $output"
	if [ "$output" = cp1 ]; then
		[ -f "$cps/cp1/inventory.img" ] || fail "cp1 is listed without its inventory.img"
		run docker checkpoint rm mh cp1
		assert_success
	fi
	wait_for 5 no_staging "$cps" || fail "left after the restart: $(ls -A "$cps" | tr '\n' ' ')"
	run ls -A "$cps"
	assert_output ""
	# The name can be taken again, whole.
	[ "$(docker inspect -f '{{.State.Status}}' mh)" = running ] || docker start mh >/dev/null
	wait_for 60 bash -c "docker logs mh 2>&1 | grep -q 'verified_passes='"
	run docker checkpoint create --leave-running mh cp1
	assert_success
	[ -f "$cps/cp1/inventory.img" ] || fail "cp1 is listed without its inventory.img"
}

# dump_running checkpoints-dir container-pid: CRIU is dumping the container:
# a staging directory holds a pages image, or CRIU runs on its pid.
dump_running() {
	compgen -G "$1/.staging-*/pages-*.img" >/dev/null ||
		pgrep -f "^criu: dump .*-t $2( |\$)" >/dev/null
}

# wait_dump_running checkpoints-dir pid name: until CRIU dumps checkpoint
# name of the container whose process is pid (polled every 20 ms, for 20 s
# at most); the test fails if it never does.
wait_dump_running() {
	local i
	for ((i = 0; i < 1000; i++)); do
		dump_running "$1" "$2" && return 0
		sleep 0.02
	done
	fail "the dump of $3 was never seen running"
}

# no_staging checkpoints-dir: no staging directory in it.
no_staging() {
	! compgen -G "$1/.staging-*" >/dev/null
}

@test "patched: a daemon killed in the middle of a 384 MiB dump loses nothing" {
	up_patched
	start_memholder mh 384
	local id cps before ctrpid
	id=$(docker inspect -f '{{.Id}}' mh)
	cps=/var/lib/moby-ab/patched/data/containers/$id/checkpoints
	before=$(last_count mh)
	run docker checkpoint create --leave-running mh old
	assert_success
	ctrpid=$(docker inspect -f '{{.State.Pid}}' mh)
	docker checkpoint create --leave-running mh new >/dev/null 2>&1 &
	wait_dump_running "$cps" "$ctrpid" new
	kill_and_restart

	# old is listed; new only if it is whole; no staging directory is listed.
	run docker checkpoint ls mh
	assert_success
	assert_line old
	refute_output --partial staging
	local new_listed=0
	if [[ $output == *new* ]]; then
		new_listed=1
		[ -f "$cps/new/inventory.img" ] || fail "new is listed without its inventory.img"
	fi
	# The staging directory of the killed dump is swept after the restart.
	wait_for 5 no_staging "$cps" || fail "left after the restart: $(ls -A "$cps" | tr '\n' ' ')"

	# old restores with its memory intact (a restore needs the container
	# stopped: the daemon's restart stopped it, unless it kept it running).
	run docker inspect -f '{{.State.Status}}' mh
	assert_output --regexp '^(running|exited)$'
	[ "$output" = exited ] || docker stop mh >/dev/null
	restore_counts_on mh "$before" --checkpoint old

	# The name new can be taken again.
	if [ "$new_listed" = 1 ]; then
		run docker checkpoint rm mh new
		assert_success
	fi
	run docker checkpoint create --leave-running mh new
	assert_success
	run docker checkpoint ls mh
	assert_line new
	[ -f "$cps/new/inventory.img" ]
	run docker logs mh
	refute_output --partial CORRUPT
}

@test "patched: a daemon killed in a dump that stops the container: the checkpoint is finished at start and restores" {
	# Without --leave-running: CRIU goes on after the kill and the container
	# is stopped, so the dump is its only state.
	up_patched
	start_memholder mh 384
	local id cps before ctrpid
	id=$(docker inspect -f '{{.Id}}' mh)
	cps=/var/lib/moby-ab/patched/data/containers/$id/checkpoints
	before=$(last_count mh)
	ctrpid=$(docker inspect -f '{{.State.Pid}}' mh)
	docker checkpoint create mh new >/dev/null 2>&1 &
	wait_dump_running "$cps" "$ctrpid" new
	kill_daemon
	# CRIU finishes the dump the killed daemon asked for.
	wait_for 30 bash -c "compgen -G '$cps/.staging-new-*/inventory.img' >/dev/null" ||
		fail "CRIU did not finish the dump: $(ls -A "$cps"/.staging-new-* | tr '\n' ' ')"
	restart_daemon
	run checkpoint_names mh
	assert_success
	assert_output new
	wait_for 5 no_staging "$cps" || fail "left after the restart: $(ls -A "$cps" | tr '\n' ' ')"
	run grep -c 'Finished a checkpoint a killed daemon left' /var/lib/moby-ab/patched/dockerd.log
	assert_output 1
	run docker inspect -f '{{.State.Status}}' mh
	assert_output exited
	restore_counts_on mh "$before" --checkpoint new
}

@test "patched: a restored container answers on its bridge address and its published port" {
	# runc leaves the network namespace out of every dump; the restore gets a
	# fresh one, which the createRuntime hook hands to libnetwork (0002).
	up_patched
	docker run -d --name web -p 127.0.0.1::8080 ab/memholder \
		sh -c 'mkdir /w && echo "up $HOSTNAME" >/w/index.html && exec httpd -f -p 8080 -h /w' >/dev/null
	local port ip
	port=$(docker port web 8080/tcp | sed 's/.*://')
	ip=$(docker inspect -f '{{.NetworkSettings.IPAddress}}' web)
	# the daemon's own network namespace (hack/hosts/daemon.sh)
	local ns=(nsenter --net=/run/netns/ab-patched)
	wait_for 30 "${ns[@]}" curl -fs -o /dev/null "http://127.0.0.1:$port/"
	local flag
	for flag in "" --leave-running; do
		run docker checkpoint create $flag web "cp$flag"
		assert_success
		if [ -n "$flag" ]; then
			docker stop -t 1 web >/dev/null
		fi
		run docker start --checkpoint "cp$flag" web
		assert_success
		# (a start may publish on another ephemeral port)
		port=$(docker port web 8080/tcp | sed 's/.*://')
		run "${ns[@]}" curl -fsS --max-time 10 "http://127.0.0.1:$port/"
		assert_success
		assert_output --partial "up "
		run "${ns[@]}" curl -fsS --max-time 10 "http://$ip:8080/"
		assert_success
		assert_output --partial "up "
	done
}

@test "patched: checkpoint and restore on the graphdriver image store (overlay2)" {
	up_patched '{"features": {"containerd-snapshotter": false}}'
	run docker info --format '{{.Driver}}'
	assert_output overlay2
	start_memholder mh 16
	run docker checkpoint create mh cp1
	assert_success
	restore_resumes mh --checkpoint cp1
}

@test "patched: a checkpoint in a custom --checkpoint-dir restores from there" {
	up_patched
	start_memholder mh 16
	local dir=$BATS_TEST_TMPDIR/elsewhere
	run docker checkpoint create --checkpoint-dir "$dir" mh cp1
	assert_success
	run docker checkpoint ls --checkpoint-dir "$dir" mh
	assert_output --partial cp1
	# a directory without the checkpoint is an error naming it
	run docker start --checkpoint cp1 --checkpoint-dir "$BATS_TEST_TMPDIR" mh
	assert_failure
	assert_output --partial "checkpoint cp1 does not exist"
	restore_resumes mh --checkpoint cp1 --checkpoint-dir "$dir"
	docker rm -f mh >/dev/null
}

@test "patched: a checkpoint directory anybody but root can change, or a symlink, is refused" {
	up_patched
	start_memholder mh 16
	local dir=$BATS_TEST_TMPDIR/ck
	run docker checkpoint create --checkpoint-dir "$dir" mh cp1
	assert_success
	# A world-writable root: restore and rm refuse it, naming it.
	chmod 0777 "$dir"
	run docker start --checkpoint cp1 --checkpoint-dir "$dir" mh
	assert_failure
	assert_output --partial "$dir is writable by group or others (mode 0777)"
	run docker checkpoint rm --checkpoint-dir "$dir" mh cp1
	assert_failure
	assert_output --partial "writable by group or others"
	[ -d "$dir/cp1" ]
	chmod 0700 "$dir"
	# A root reached through a symbolic link, and a root owned by nobody.
	ln -s "$dir" "$BATS_TEST_TMPDIR/link"
	run docker start --checkpoint cp1 --checkpoint-dir "$BATS_TEST_TMPDIR/link" mh
	assert_failure
	assert_output --partial "$BATS_TEST_TMPDIR/link is a symbolic link"
	chown 65534:65534 "$dir"
	run docker start --checkpoint cp1 --checkpoint-dir "$dir" mh
	assert_failure
	assert_output --partial "is owned by uid 65534"
	chown 0:0 "$dir"
	# The container was never started; from the root as it should be, the
	# checkpoint restores.
	run docker inspect -f '{{.State.Status}}' mh
	assert_output exited
	restore_resumes mh --checkpoint cp1 --checkpoint-dir "$dir"
	docker rm -f mh >/dev/null
}

@test "patched: a bad restore request changes nothing (no exit code, an --rm container kept)" {
	up_patched
	docker create --rm --name rmc ab/memholder memholder 16 >/dev/null
	run docker start --checkpoint missing rmc
	assert_failure
	assert_output --partial "checkpoint missing does not exist"
	run docker start --checkpoint cp1 --checkpoint-dir relative/dir rmc
	assert_failure
	assert_output --partial "invalid checkpoint directory"
	# The container is still there, as it was: never started, no error.
	run docker inspect -f '{{.State.Status}} {{.State.ExitCode}} [{{.State.Error}}]' rmc
	assert_success
	assert_output "created 0 []"
	docker rm rmc >/dev/null
}

# fill dir: write zeros into dir/.fill until its file system is full.
fill() {
	dd if=/dev/zero of="$1/.fill" bs=1M status=none 2>/dev/null || true
}

@test "patched: a stopped container's images are kept when the disk fills during the paced write; a retry commits them" {
	# 32 MiB at 4 MiB/s: the write takes 8 s; the disk fills in it.
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "4MiB"}}'
	start_memholder mh 32
	local dir=$BATS_TEST_TMPDIR/small before cli
	mkdir "$dir"
	mount -t tmpfs -o size=64m,mode=0700 tmpfs "$dir"
	before=$(last_count mh)
	docker checkpoint create --checkpoint-dir "$dir" mh cp1 >"$BATS_TEST_TMPDIR/cp.out" 2>&1 &
	cli=$!
	wait_for 30 paced_write_running "$dir" cp1
	fill "$dir"
	local rc=0
	wait "$cli" || rc=$?
	[ "$rc" -ne 0 ] || fail "the create succeeded on a full disk"
	run cat "$BATS_TEST_TMPDIR/cp.out"
	assert_output --partial "no space left on device"
	assert_output --partial "the container is stopped and its checkpoint images are kept in /run/moby-ab/patched/exec/checkpoint-scratch/"
	# CRIU stopped the container; nothing is listed, nothing partial left.
	run docker inspect -f '{{.State.Status}}' mh
	assert_output exited
	run docker checkpoint ls --checkpoint-dir "$dir" mh
	refute_output --partial cp1
	run ls -A "$dir"
	assert_output .fill
	# Room again: the same create commits the kept images, without a dump.
	rm "$dir/.fill"
	run docker checkpoint create --checkpoint-dir "$dir" mh cp1
	assert_success
	run grep -c 'Committed the checkpoint images kept from an earlier create' /var/lib/moby-ab/patched/dockerd.log
	assert_output 1
	wait_for 10 scratch_empty || fail "left in scratch: $(ls -A /run/moby-ab/patched/exec/checkpoint-scratch | tr '\n' ' ')"
	restore_counts_on mh "$before" --checkpoint cp1 --checkpoint-dir "$dir"
}

@test "patched: a daemon killed in a paced write to an unmounted root keeps the images until the root is back" {
	# the checkpoint root is a file system of its own, on a loop device
	# that stays attached while it is unmounted (the same device again)
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "4MiB"}}'
	start_memholder mh 32
	local dir=$BATS_TEST_TMPDIR/small before loop
	truncate -s 128M "$BATS_TEST_TMPDIR/disk.img"
	loop=$(losetup -f --show "$BATS_TEST_TMPDIR/disk.img")
	echo "$loop" >"$BATS_TEST_TMPDIR/loop"
	mkfs.ext4 -q "$loop"
	mkdir "$dir"
	mount "$loop" "$dir"
	chmod 0700 "$dir"
	before=$(last_count mh)
	docker checkpoint create --checkpoint-dir "$dir" mh cp1 >/dev/null 2>&1 &
	wait_for 30 paced_write_running "$dir" cp1
	kill_daemon
	umount "$dir"
	# Started with the root unmounted: nothing goes to the disk beneath it;
	# the dump stays in scratch, and the log says why.
	restart_daemon
	run ls -A "$dir"
	assert_output ""
	run grep 'Failed to finish a checkpoint a killed daemon left' /var/lib/moby-ab/patched/dockerd.log
	assert_output --partial "not on"
	assert_output --partial "where the checkpoint was taken (not mounted?)"
	run docker inspect -f '{{.State.Status}}' mh
	assert_output exited
	# The root is back: the same create commits the images there.
	mount "$loop" "$dir"
	run docker checkpoint create --checkpoint-dir "$dir" mh cp1
	assert_success
	[ -f "$dir/cp1/inventory.img" ] || fail "cp1 committed without its inventory.img"
	restore_counts_on mh "$before" --checkpoint cp1 --checkpoint-dir "$dir"
	docker rm -f mh >/dev/null
}

@test "patched: a checkpoint directory that refuses RENAME_NOREPLACE, as NFS does: create, restore, delete" {
	up_patched '{"checkpoints": {"write-pace": "fixed", "write-bandwidth": "64MiB"}}'
	start_memholder mh 16
	local src=$BATS_TEST_TMPDIR/src dir=$BATS_TEST_TMPDIR/nfslike
	mkdir -m 0700 "$src" "$dir"
	bindfs "$src" "$dir"
	run python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
os.mkdir(sys.argv[1] + "/a")
r = libc.renameat2(-100, (sys.argv[1] + "/a").encode(), -100, (sys.argv[1] + "/b").encode(), 1)
os.rmdir(sys.argv[1] + "/a")
sys.exit(0 if r == -1 and ctypes.get_errno() == 22 else 1)' "$dir"
	assert_success
	before=$(last_count mh)
	run docker checkpoint create --checkpoint-dir "$dir" mh cp1
	assert_success
	run docker checkpoint ls --checkpoint-dir "$dir" mh
	assert_output --partial cp1
	restore_counts_on mh "$before" --checkpoint cp1 --checkpoint-dir "$dir"
	run docker checkpoint rm --checkpoint-dir "$dir" mh cp1
	assert_success
	run ls -A "$src"
	assert_output ""
	docker rm -f mh >/dev/null
}
