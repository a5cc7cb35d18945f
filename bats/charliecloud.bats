#!/usr/bin/env bats
# charliecloud, seed 002's HPC runtime as a peer of the overhead suites
# (hack/ab/systems/charliecloud.py): a short cpu and pingpong through the
# harness measure in ch-run, from root file systems unpacked from the
# project's own image archives, and leave no root file system, namespace or
# process behind.

load helpers
bats_require_minimum_version 1.5.0

AB_VAR=${AB_VAR:-/var/lib/moby-ab}

setup_file() {
	"$AB_ROOT/hack/hosts/images.sh" build busybox memholder pingpong >/dev/null 2>&1
}

setup() {
	load_libs
	[ -x /usr/bin/ch-run ] || skip "ch-run is not installed (hack/stack/install-deps.sh)"
}

teardown() {
	# what a failed run could have left: the host's namespace and directory
	ip netns del ab-charliecloud 2>/dev/null || true
	rm -rf "$AB_VAR/charliecloud"
}

# the PIDs of the programs a charliecloud run starts: ch-run and what it execs
ours() {
	ps -eo pid=,comm= | awk '$2 == "ch-run" || $2 == "pingpong" {print $1}' | sort
}

@test "charliecloud: cpu and pingpong through the harness, nothing left after" {
	local out=$BATS_TEST_TMPDIR/results before
	before=$(ours)
	cat >"$BATS_TEST_TMPDIR/cc.toml" <<'EOF'
name = "bats-charliecloud"
kind = "overhead"
repetitions = 1
workloads = ["cpu", "pingpong"]

[pingpong]
networks = ["native", "bridge", "host"]
round_trips = 2000
warmup = 100

[flavor.charliecloud]
EOF
	run env PYTHONPATH="$AB_ROOT/hack" /usr/bin/python3 -m ab run "$BATS_TEST_TMPDIR/cc.toml" --results "$out"
	assert_success
	local doc=$out/results.json
	# what ch-run ran: the archive the dockerd hosts load, unpacked
	[ "$(jq -r '.daemons.charliecloud.version' "$doc")" = 0.31 ]
	[ "$(jq -r '.daemons.charliecloud.rootfs["ab/pingpong"].sha256' "$doc")" = \
		"sha256:$(sha256sum "$AB_ROOT/build/images/pingpong.tar" | cut -d' ' -f1)" ]
	# the round trips, in ch-run on the host network and natively; no bridge
	run jq -c '[.results[] | select(.scenario == "pingpong") | [.container, .round_trips[0], .failed,
		(.p50_us[0] > 0), (.p99_us[0] >= .p50_us[0])]] | sort' "$doc"
	assert_output '[["host",2000,0,true,true],["native",2000,0,true,true]]'
	# the hash, natively and in ch-run
	run jq -c '[.results[] | select(.scenario == "cpu") | [.container, .image, .failed, (.times_s[0] > 0)]] | sort' "$doc"
	assert_output '[["container","ab/busybox",0,true],["native",null,0,true]]'
	# the report puts it beside native
	run grep -c '^| charliecloud (ch-run) | ' "$out/report.md"
	assert_output 1
	# nothing left: root file systems, namespace, processes
	local rootfs
	rootfs=$(jq -r '.daemons.charliecloud.rootfs["ab/pingpong"].path' "$doc")
	[[ $rootfs == "$AB_VAR/charliecloud/"* ]]
	[ ! -e "$rootfs" ]
	[ ! -e "$AB_VAR/charliecloud" ]
	[ ! -e /run/netns/ab-charliecloud ]
	[ "$(ours)" = "$before" ]
}
