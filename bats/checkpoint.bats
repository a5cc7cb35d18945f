#!/usr/bin/env bats
# Checkpoints on the patched daemon: configuration of the checkpoint queue,
# and faults (a full disk, a daemon killed mid-checkpoint).

load helpers
bats_require_minimum_version 1.5.0

setup_file() {
	"$AB_ROOT/hack/registry.sh" up >/dev/null
}

teardown_file() {
	"$AB_ROOT/hack/registry.sh" down
}

setup() {
	load_libs
}

teardown() {
	if mountpoint -q "$BATS_TEST_TMPDIR/small" 2>/dev/null; then
		umount "$BATS_TEST_TMPDIR/small"
	fi
	"$AB_ROOT/hack/daemon.sh" down patched >/dev/null 2>&1 || true
}

up_patched() { # [config json]
	local cfg=$BATS_TEST_TMPDIR/daemon.json
	echo "${1:-{\}}" >"$cfg"
	"$AB_ROOT/hack/daemon.sh" up patched --config "$cfg" >"$BATS_TEST_TMPDIR/env"
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

# restore_resumes name [docker start args...]: restores the memory holder
# (checkpointed with --exit) and checks that it counts on from where the
# checkpoint took it, with its memory intact.
restore_resumes() {
	local name=$1 before nlines first
	shift
	before=$(docker logs "$name" 2>&1 | sed -n 's/.* count=\([0-9]*\) .*/\1/p' | tail -1)
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
	echo '{"checkpoint-max-concurrent": -1}' >"$BATS_TEST_TMPDIR/bad.json"
	run "$AB_ROOT/hack/daemon.sh" up patched --config "$BATS_TEST_TMPDIR/bad.json"
	assert_failure
	assert_output --partial "invalid checkpoint-max-concurrent: -1"
	echo '{"checkpoint-queue-order": "lifo"}' >"$BATS_TEST_TMPDIR/bad.json"
	run "$AB_ROOT/hack/daemon.sh" up patched --config "$BATS_TEST_TMPDIR/bad.json"
	assert_failure
	assert_output --partial 'invalid checkpoint-queue-order: "lifo"'
}

@test "patched: a reload with a bad checkpoint option is refused, the daemon keeps running" {
	up_patched '{"checkpoint-queue-order": "fifo"}'
	echo '{"checkpoint-queue-order": "lifo"}' >"$BATS_TEST_TMPDIR/bad.json"
	run "$AB_ROOT/hack/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/bad.json"
	assert_failure
	assert_output --partial "reload refused"
	assert_output --partial 'invalid checkpoint-queue-order'
	echo '{"checkpoint-write-bandwidth": "100KiB"}' >"$BATS_TEST_TMPDIR/bad.json"
	run "$AB_ROOT/hack/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/bad.json"
	assert_failure
	assert_output --partial 'invalid checkpoint-write-bandwidth: \"100KiB\": must be 0 (no cap) or at least 1MiB per second'
	run docker version --format '{{.Server.Version}}'
	assert_success
	# A good reload after the bad one applies.
	echo '{"checkpoint-max-concurrent": 2}' >"$BATS_TEST_TMPDIR/good.json"
	run "$AB_ROOT/hack/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/good.json"
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

@test "patched: checkpoint-write-bandwidth paces the image writes; the checkpoint restores" {
	# 8 MiB/s: a 32 MiB memory holder's images (about 33 MiB) need at least
	# (33 - 1 MiB burst) / 8 = 4 s to be written; without the cap, 0.1 s.
	up_patched '{"checkpoint-write-bandwidth": "8MiB"}'
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

@test "patched: a checkpoint that runs out of space fails cleanly" {
	up_patched
	start_memholder mh 64
	mkdir "$BATS_TEST_TMPDIR/small"
	mount -t tmpfs -o size=8m tmpfs "$BATS_TEST_TMPDIR/small"
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
	# The memory holder keeps counting with its memory intact.
	sleep 1.5
	run docker logs mh
	refute_output --partial CORRUPT
}

@test "patched: a daemon killed during a checkpoint leaves nothing partial" {
	up_patched
	start_memholder mh 512
	docker checkpoint create --leave-running mh cp1 >/dev/null 2>&1 &
	sleep 0.5
	pid=$(cat /run/moby-ab/patched/dockerd.pid)
	kill -KILL "$pid"
	wait || true
	wait_for 10 bash -c "[ ! -e /proc/$pid ]"
	"$AB_ROOT/hack/daemon.sh" up patched --config "$BATS_TEST_TMPDIR/daemon.json" >"$BATS_TEST_TMPDIR/env"
	use_env
	run docker inspect -f '{{.State.Status}}' mh
	assert_success
	assert_output --regexp '^(running|exited)$'
	run docker checkpoint ls mh
	assert_success
	refute_output --partial staging
	# If the checkpoint finished before the kill, it is whole.
	if [[ $output == *cp1* ]]; then
		ls /var/lib/moby-ab/patched/data/containers/*/checkpoints/cp1/inventory.img
	fi
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
