#!/usr/bin/env bats
# The run-time overhead workloads' programs (seeds 002-004) in containers of
# the patched daemon: the TCP ping-pong timer, seed 004's Node.js server and
# seed 003's file reader under a CPU limit. The A/B suites time them; these
# tests check that they answer what the harness parses.

load helpers

setup_file() {
	export AB_IMAGES="node pingpong"
	ab_up patched
}

teardown_file() {
	ab_down patched
}

setup() {
	load_libs
	use patched
}

teardown() {
	remove_test_containers
}

ip_of() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }

@test "pingpong: a client container times round trips to a server container on the bridge" {
	docker run -d --name pp ab/pingpong pingpong server >/dev/null
	run docker run --rm ab/pingpong pingpong client -connect "$(ip_of pp):7000" -n 500 -warmup 10
	assert_success
	assert_output --regexp '^\{"round_trips":500,"size":64,"mean_us":[0-9.]+,"p50_us":[0-9.]+,"p90_us":[0-9.]+,"p99_us":[0-9.]+,'
}

@test "pingpong: the native binary reaches a server on the host network" {
	docker run -d --name pp --network host ab/pingpong pingpong server -listen 127.0.0.1:7001 >/dev/null
	run in_ns patched "$AB_ROOT/build/pingpong" client -connect 127.0.0.1:7001 -n 200 -warmup 10
	assert_success
	assert_output --partial '"round_trips":200'
}

@test "node: seed 004's server answers /network, /disk-io and /cpu on the bridge" {
	docker run -d --name app -w /tmp ab/node >/dev/null
	wait_for 20 in_ns patched curl -fs -o /dev/null "http://$(ip_of app):3000/network"
	run in_ns patched curl -fs "http://$(ip_of app):3000/network"
	assert_output 'Network endpoint response'
	run in_ns patched curl -fs "http://$(ip_of app):3000/disk-io"
	assert_output 'File content: Some content to write to the file'
	run in_ns patched curl -fs "http://$(ip_of app):3000/cpu"
	assert_output --regexp '^CPU intensive task completed in [0-9]+ ms$'
}

@test "node: seed 003's reader reads every file in each mode, and reports CFS throttling under --cpus" {
	local dir=$BATS_TEST_TMPDIR/files i
	mkdir -p "$dir"
	for i in $(seq 0 199); do printf '%s\n' "file $i" >"$dir/file-$i.txt"; done
	for mode in sequential async "workers 3"; do
		# shellcheck disable=SC2086 # the mode and its worker count
		run docker run --rm --cpus 0.5 -v "$dir:/data:ro" ab/node node /app/readfiles.js /data $mode
		assert_success
		assert_output --regexp "^\{\"mode\":\"${mode%% *}\",\"workers\":[0-9]+,\"files\":200,\"bytes\":1690,"
		assert_output --regexp '"throttled_s":[0-9.]+,"nr_throttled":[0-9]+'
	done
	# Throttling as the cgroup counted it: Node.js takes far more than 5 ms
	# of CPU to start, so under a 5 ms quota per 100 ms period it is
	# throttled, for tenths of a second at least; without a limit, never.
	run docker run --rm --cpus 0.05 -v "$dir:/data:ro" ab/node node /app/readfiles.js /data sequential
	assert_success
	[[ "$output" =~ \"throttled_s\":([0-9.]+),\"nr_throttled\":([0-9]+) ]]
	echo "# --cpus 0.05: throttled ${BASH_REMATCH[1]} s, ${BASH_REMATCH[2]} times" >&3
	[ "${BASH_REMATCH[2]}" -ge 1 ]
	awk -v s="${BASH_REMATCH[1]}" 'BEGIN { exit !(s >= 0.1) }'
	run docker run --rm -v "$dir:/data:ro" ab/node node /app/readfiles.js /data sequential
	assert_success
	assert_output --regexp '"throttled_s":0,"nr_throttled":0'
}
