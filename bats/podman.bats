#!/usr/bin/env bats
# podman, a peer of the pull suites (hack/hosts/podman-host.sh, hack/ab/systems/podman.py):
# the harness's own pull and cold commands put an image's layers, byte for
# byte, into the test host's own storage and take them out again, and down
# leaves nothing, in the host or at podman's machine-wide defaults.

load helpers
bats_require_minimum_version 1.5.0

REF=10.199.0.1:5000/ab/podman-small:v1
SEED=28
LAYERS=3 # of 256 KiB each
# where podman keeps its state when nothing tells it otherwise
DEFAULTS="/var/lib/containers /run/containers /run/libpod /dev/shm/libpod_lock /var/lib/cni"

setup_file() {
	"$AB_ROOT/hack/hosts/registry.sh" up >/dev/null
	(cd "$AB_ROOT/hack" && /usr/bin/python3 -c "
import ab.hosts as h
h.push_random_image('ab/podman-small', 'v1', [256 << 10] * $LAYERS, seed=$SEED)") >/dev/null
}

teardown_file() {
	"$AB_ROOT/hack/hosts/podman-host.sh" down podman >/dev/null 2>&1 || true
	"$AB_ROOT/hack/hosts/registry.sh" down
}

setup() {
	load_libs
	# podman's defaults that exist already are not this test's to judge
	: >"$BATS_TEST_TMPDIR/defaults"
	local p
	for p in $DEFAULTS; do
		[ -e "$p" ] || echo "$p" >>"$BATS_TEST_TMPDIR/defaults"
	done
}

teardown() {
	"$AB_ROOT/hack/hosts/podman-host.sh" down podman >/dev/null 2>&1 || true
}

# system <python expression>: what hack/ab/systems/podman.py gives
system() {
	(cd "$AB_ROOT/hack" && /usr/bin/python3 -c "from ab.systems import podman as p; print($1)")
}

served() { # bytes the registry's namespace sent towards test host podman
	ip -n ab-reg -j -s link show ab-podman-reg | jq '.[0].stats64.tx.bytes'
}

# the sha256 of each layer's one file, as hack/hosts/testimages/mkimage.py made it
want_layer_sums() {
	/usr/bin/python3 -c "
import hashlib, random
for i in range($LAYERS):
    print(hashlib.sha256(random.Random('$SEED/%d' % i).randbytes(256 << 10)).hexdigest(), 'layer%03d.bin' % i)"
}

# the same of the files in podman's storage: every layer directory's
# data/layer*.bin
got_layer_sums() {
	local f
	for f in /var/lib/moby-ab/podman/storage/overlay/*/diff/data/layer*.bin; do
		[ -f "$f" ] || continue
		echo "$(sha256sum <"$f" | cut -d' ' -f1) $(basename "$f")"
	done | sort -k2
}

@test "podman: a cold pull through the harness stores every layer's bytes in the host's own storage" {
	run "$AB_ROOT/hack/hosts/podman-host.sh" up podman
	assert_success
	pull=$(system "p.pull_command(None, ['$REF'])")
	cold=$(system "p.cold_command(None, ['$REF'])")

	for round in 1 2; do
		before=$(served)
		run sh -c "$pull"
		assert_success
		# the registry sent the layers over the host's link: a cold pull
		[ $(($(served) - before)) -ge $((LAYERS * 256 * 1024)) ]
		# every layer, byte for byte, in the host's storage
		assert_equal "$(got_layer_sums)" "$(want_layer_sums)"
		run "$AB_ROOT/hack/hosts/podman-host.sh" podman podman image inspect --format '{{len .RootFS.Layers}}' "$REF"
		assert_output "$LAYERS"

		# the cold command leaves no image and no layer: the next round
		# pulls everything again
		run sh -c "$cold"
		assert_success
		assert_equal "$(got_layer_sums)" ""
		run "$AB_ROOT/hack/hosts/podman-host.sh" podman podman images --all --quiet
		assert_success
		assert_output ""
	done

	run "$AB_ROOT/hack/hosts/podman-host.sh" down podman
	assert_success
	[ ! -e /run/netns/ab-podman ]
	[ ! -e /run/moby-ab/podman ]
	[ ! -e /var/lib/moby-ab/podman ]
	run ip -n ab-reg link show ab-podman-reg
	assert_failure
	run grep -E ' /(run|var/lib)/moby-ab/podman[/ ]' /proc/self/mountinfo
	assert_failure
	# nothing at podman's defaults that was not there before
	local p
	while read -r p; do
		[ ! -e "$p" ] || fail "podman created $p"
	done <"$BATS_TEST_TMPDIR/defaults"
}

# host <python statement>: run it with p, the running host, and podman the
# system's module
host() {
	(cd "$AB_ROOT/hack" && /usr/bin/python3 -c "
from ab.systems import podman
p = podman.Podman('podman')
$1")
}

field_of() { # name: the memory holder's last report's value of it
	"$AB_ROOT/hack/hosts/podman-host.sh" podman podman logs --tail 1 abcp-mh | sed -n "s/.* $1=\\([0-9]*\\) .*/\\1/p"
}
passes_above() { [ "$(field_of verified_passes)" -gt "$1" ]; }

@test "podman: the harness's checkpoint and restore keep a memory holder's memory and count" {
	run "$AB_ROOT/hack/hosts/podman-host.sh" up podman
	assert_success
	run "$AB_ROOT/hack/hosts/podman-host.sh" podman podman load -q -i "$AB_ROOT/build/images/memholder.tar"
	assert_success
	host "podman.run_container(p, 'abcp-mh', 'ab/memholder', ['memholder', '-r', '200', '16'])"
	wait_for 30 passes_above -1
	count=$(field_of count)
	passes=$(field_of verified_passes)
	[ -n "$count" ]
	[ -n "$passes" ]

	run host "assert podman.checkpoint(p, 'abcp-mh', 'cp0', False, 120).returncode == 0"
	assert_success
	run "$AB_ROOT/hack/hosts/podman-host.sh" podman podman inspect --format '{{.State.Status}} {{.State.Checkpointed}}' abcp-mh
	assert_output "exited true"
	# CRIU's images of its memory, kept with the container
	run sh -c "ls /var/lib/moby-ab/podman/storage/overlay-containers/*/userdata/checkpoint/pages-*.img"
	assert_success

	run host "assert podman.restore(p, 'abcp-mh', 'cp0', 120).returncode == 0"
	assert_success
	run "$AB_ROOT/hack/hosts/podman-host.sh" podman podman inspect --format '{{.State.Status}} {{.State.Restored}}' abcp-mh
	assert_output "running true"
	# the same process goes on from its count, and verifies all of its
	# memory again after the restore
	wait_for 20 passes_above "$passes"
	run field_of count
	[ "$output" -gt "$count" ]
	run "$AB_ROOT/hack/hosts/podman-host.sh" podman podman logs abcp-mh
	refute_output --partial "CORRUPT"
	# one count all along: a process started afresh would count from 0
	sed -n 's/.* count=\([0-9]*\) .*/\1/p' <<<"$output" | sort -n -c

	host "podman.remove(p, ['abcp-mh'])"
	run "$AB_ROOT/hack/hosts/podman-host.sh" down podman
	assert_success
	run grep -E ' /(run|var/lib)/moby-ab/podman[/ ]' /proc/self/mountinfo
	assert_failure
}

@test "podman: a bad setting is refused naming the key, and nothing is created" {
	run "$AB_ROOT/hack/hosts/podman-host.sh" up podman --engine '{"image_parallel_copies": 0}'
	assert_failure
	assert_output --partial "image_parallel_copies: want an integer >= 1"
	[ ! -e /run/netns/ab-podman ]
	[ ! -e /run/moby-ab/podman ]
	[ ! -e /var/lib/moby-ab/podman ]
}
