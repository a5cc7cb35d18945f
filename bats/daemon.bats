#!/usr/bin/env bats
# hack/hosts/daemon.sh: the life cycle every suite depends on.

load helpers
bats_require_minimum_version 1.5.0

setup() {
	load_libs
}

teardown() {
	"$AB_ROOT/hack/hosts/daemon.sh" down stock >/dev/null 2>&1 || true
}

@test "daemon.sh: an unknown flavor is refused by name" {
	run "$AB_ROOT/hack/hosts/daemon.sh" up nightly
	assert_failure
	assert_output --partial "unknown flavor 'nightly' (want stock or patched)"
	# a peer's test host is no dockerd flavor
	run "$AB_ROOT/hack/hosts/daemon.sh" up ctrd
	assert_failure
	assert_output --partial "unknown flavor 'ctrd' (want stock or patched)"
	[ ! -e /run/netns/ab-ctrd ]
}

@test "daemon.sh: a config key that defines the flavor is refused" {
	echo '{"data-root": "/tmp/elsewhere"}' >"$BATS_TEST_TMPDIR/daemon.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" up stock --config "$BATS_TEST_TMPDIR/daemon.json"
	assert_failure
	assert_output --partial "data-root cannot be set here"
	[ ! -e /run/netns/ab-stock ]
}

@test "daemon.sh: a daemon that refuses its config fails with its reason and log" {
	echo '{"max-concurrent-downloads": -1}' >"$BATS_TEST_TMPDIR/daemon.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" up stock --config "$BATS_TEST_TMPDIR/daemon.json"
	assert_failure
	assert_output --partial "dockerd exited during start-up"
	assert_output --partial "invalid max concurrent downloads: -1"
}

@test "daemon.sh: up prints DOCKER_HOST; down removes what up created" {
	run --separate-stderr "$AB_ROOT/hack/hosts/daemon.sh" up stock
	assert_success
	assert_output --regexp '^export DOCKER_HOST=unix:///run/moby-ab/stock/docker.sock$'
	eval "$output"
	# A running container leaves mounts, a shim and cgroups for down to remove.
	docker load -q -i "$AB_ROOT/build/images/busybox.tar"
	docker run -d --name sleeper ab/busybox sleep 600
	[ -e /run/netns/ab-stock ]
	run "$AB_ROOT/hack/hosts/daemon.sh" down stock
	assert_success
	[ ! -e /run/netns/ab-stock ]
	[ ! -e /run/moby-ab/stock ]
	[ ! -e /var/lib/moby-ab/stock ]
	run grep -c ' /run/moby-ab/stock\| /var/lib/moby-ab/stock' /proc/self/mountinfo
	assert_output 0
	run bash -c "ls -d /sys/fs/cgroup/*/moby-ab-stock 2>/dev/null"
	assert_output ""
}

@test "daemon.sh: a second up of a running flavor is refused" {
	"$AB_ROOT/hack/hosts/daemon.sh" up stock >/dev/null
	run "$AB_ROOT/hack/hosts/daemon.sh" up stock
	assert_failure
	assert_output --partial "stock is already running"
}

@test "daemon.sh: down stops a daemon whose binary was rebuilt while it ran" {
	"$AB_ROOT/hack/hosts/daemon.sh" up stock >/dev/null
	pid=$(cat /run/moby-ab/stock/dockerd.pid)
	# a rebuild puts a new file in place; the running daemon's is "(deleted)"
	cp "$AB_ROOT/bin/dockerd-stock" "$BATS_TEST_TMPDIR/dockerd"
	mv "$BATS_TEST_TMPDIR/dockerd" "$AB_ROOT/bin/dockerd-stock"
	run readlink "/proc/$pid/exe"
	assert_output --partial "(deleted)"
	run "$AB_ROOT/hack/hosts/daemon.sh" status stock
	assert_output --partial "running (pid $pid"
	"$AB_ROOT/hack/hosts/daemon.sh" down stock
	wait_for 10 bash -c "! kill -0 $pid 2>/dev/null"
}
