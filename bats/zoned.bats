#!/usr/bin/env bats
# The zoned checkpoint store on the patched daemon, from the outside: what the
# daemon refuses at start. The store itself runs against a real zoned device in
# `make test-zns` (these hosts have none).

load helpers
bats_require_minimum_version 1.5.0

setup() {
	load_libs
}

teardown() {
	"$AB_ROOT/hack/hosts/daemon.sh" down patched >/dev/null 2>&1 || true
}

start_with_device() { # device: try to start the patched daemon on it
	jq -n --arg d "$1" '{"checkpoints": {"zoned-device": $d}}' >"$BATS_TEST_TMPDIR/zoned.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" up patched --config "$BATS_TEST_TMPDIR/zoned.json"
}

@test "zoned: a device that is missing, not a block device or not zoned is refused at start, naming the option" {
	jq -n '{"checkpoints": {"zoned-device": "nvme0n2"}}' >"$BATS_TEST_TMPDIR/bad.json"
	run "$AB_ROOT/bin/dockerd-patched" --validate --config-file "$BATS_TEST_TMPDIR/bad.json"
	assert_failure
	assert_output --partial 'invalid checkpoints.zoned-device: "nvme0n2": must be the absolute path of a block device'

	start_with_device /dev/ab-no-such-device
	assert_failure
	assert_output --partial 'checkpoints.zoned-device: zoned device /dev/ab-no-such-device does not exist'

	start_with_device /dev/null
	assert_failure
	assert_output --partial 'checkpoints.zoned-device: zoned device /dev/null is not a block device'

	# any conventional block device of the host: only its sysfs entry is read
	local q dev=""
	for q in /sys/block/*/queue/zoned; do
		if [ "$(cat "$q")" = none ] && [ -b "/dev/$(basename "${q%/queue/zoned}")" ]; then
			dev=/dev/$(basename "${q%/queue/zoned}")
			break
		fi
	done
	if [ -n "$dev" ]; then
		start_with_device "$dev"
		assert_failure
		assert_output --partial "checkpoints.zoned-device: $dev is not a host-managed zoned block device"
		assert_output --partial '/zoned is "none"'
	else
		echo "# no conventional block device on this host: that case runs in make test-zns" >&3
	fi
}
