#!/usr/bin/env bats
# Smoke suite: both flavors start, run containers, pull from the local registry,
# and checkpoint/restore a memory holder.

load helpers

# Restore with `docker start --checkpoint` is broken in stock (29.7.1 and
# 29.8.1), two ways:
# - the task of a restored container has pid 0 until runc restores it at Start,
#   and dockerd bind-mounts /proc/<pid>/ns/net before that (containerd#12141);
# - before that, uploading the checkpoint back into containerd's content store
#   fails with "already exists" while the blob from the checkpoint is still there.
# A flavor listed here must restore; the others must fail with that error
# (patched: daemon: give containers restored from a checkpoint their network).
RESTORE_WORKS=" patched "

setup_file() {
	export AB_IMAGES="busybox memholder"
	ab_up stock patched
}

teardown_file() {
	ab_down stock patched
}

setup() {
	load_libs
}

teardown() {
	remove_test_containers
}

check_version() {
	use "$1"
	run docker version --format '{{.Server.Version}}'
	assert_success
	assert_output "$2"
}

@test "stock: daemon starts and reports the pinned upstream version" {
	check_version stock "$UPSTREAM_VERSION"
}

@test "patched: daemon starts and reports <upstream version>+ab.<series hash>" {
	check_version patched "$UPSTREAM_VERSION+ab.$("$AB_ROOT/hack/stack/patches.sh" hash)"
}

check_run() {
	use "$1"
	run docker run --rm ab/busybox sh -c 'echo hello from $(hostname); ip -4 -o addr show eth0'
	assert_success
	assert_line --partial "hello from"
	# The container sits on this flavor's own bridge subnet.
	assert_output --regexp "inet 10\.20$2\.0\.[0-9]+/24"
}

@test "stock: runs a container on its own bridge" {
	check_run stock 1
}

@test "patched: runs a container on its own bridge" {
	check_run patched 2
}

check_pull() {
	use "$1"
	local ref="10.199.0.1:5000/smoke/busybox-$1:latest"
	run docker tag ab/busybox "$ref"
	assert_success
	run docker push -q "$ref"
	assert_success
	docker rmi "$ref" >/dev/null
	run docker pull -q "$ref"
	assert_success
	run docker run --rm "$ref" echo pulled
	assert_success
	assert_output pulled
	docker rmi "$ref" >/dev/null
}

@test "stock: pushes to and pulls from the local registry" {
	check_pull stock
}

@test "patched: pushes to and pulls from the local registry" {
	check_pull patched
}

# Start a memory holder and wait until it has verified its memory once.
start_memholder() {
	docker run -d --name "$1" ab/memholder memholder 16 >/dev/null
	wait_for 30 bash -c "docker logs $1 2>&1 | grep -q 'verified_passes=[1-9]'"
}

last_count() {
	docker logs "$1" 2>&1 | sed -n 's/.* count=\([0-9]*\) .*/\1/p' | tail -1
}

check_checkpoint() {
	use "$1"
	start_memholder mh
	run docker checkpoint create mh cp1
	assert_success
	run docker checkpoint ls mh
	assert_output --partial cp1
	# Without --leave-running the container is stopped by the checkpoint.
	run docker inspect -f '{{.State.Running}}' mh
	assert_output false
}

@test "stock: checkpoints a running memory holder" {
	check_checkpoint stock
}

@test "patched: checkpoints a running memory holder" {
	check_checkpoint patched
}

check_restore() {
	use "$1"
	start_memholder mh
	# Let the counter run well past what a fresh start would print first.
	wait_for 30 bash -c '[ "$(docker logs mh 2>&1 | sed -n "s/.* count=\([0-9]*\) .*/\1/p" | tail -1)" -ge 300 ]'
	run docker checkpoint create mh cp1
	assert_success
	# (not "lines": bats' run sets that)
	local before nlines
	before=$(last_count mh)
	nlines=$(docker logs mh 2>&1 | wc -l)
	run docker start --checkpoint cp1 mh
	if [[ $RESTORE_WORKS != *" $1 "* ]]; then
		# Expected failure, asserted: the known upstream bug, not anything else.
		echo "# $1: restore is expected to fail (known upstream bugs)" >&3
		assert_failure
		assert_output --regexp '/proc/0/ns/net|already exists'
		return 0
	fi
	assert_success
	wait_for 30 bash -c "[ \$(docker logs mh 2>&1 | wc -l) -gt $nlines ]"
	run docker logs mh
	refute_output --partial CORRUPT
	# The first report after the restore continues the count from before the
	# checkpoint (a fresh start would begin near zero), and memory still verifies.
	local first
	first=$(docker logs mh 2>&1 | tail -n +"$((nlines + 1))" | sed -n 's/.* count=\([0-9]*\) .*/\1/p' | head -1)
	[ "$first" -gt "$before" ]
	run docker inspect -f '{{.State.Running}}' mh
	assert_output true
}

@test "stock: restore from a checkpoint (expected to fail: known upstream bugs)" {
	check_restore stock
}

@test "patched: restore from a checkpoint" {
	check_restore patched
}
