#!/usr/bin/env bash
# The zoned checkpoint store's tests against a real kernel: each test binary is
# built static from the patched tree and run by hack/zoned/zns-vm.sh in a QEMU guest
# whose NVMe controller has an emulated ZNS namespace. The geometry is small
# (16 zones of 8 MiB, 6 MiB of capacity each, at most 4 open and 6 active) so
# that the device-full tests fill it in seconds, and its capacity is below the
# zone size on purpose.
#
# Then the patched daemon end to end on the same geometry: bin/dockerd-patched
# with containerd, runc and CRIU in a guest whose root hack/zoned/zns-vm/docker-root.sh
# makes, running hack/zoned/zns-vm/docker-e2e.sh (checkpoints of a memory holder
# written to zones, restored, removed; dockerd killed during a checkpoint's
# write). And a checkpoint whose disk fails under it in the middle of its
# paced copy (hack/zoned/zns-vm/docker-faults.sh: device-mapper's error
# target under the checkpoint directory's ext4), and a power cut at every
# flush of a checkpoint's create and delete (hack/zoned/zns-vm/docker-powercut.sh:
# device-mapper's log-writes target, replayed), and a checkpoint moved
# between two daemons through an NFS root served by the guest's kernel, that
# server's disk full in the middle of a copy (hack/zoned/zns-vm/docker-nfs.sh),
# and checkpoint-io-weight's copy in a scope of systemd's under the systemd
# cgroup driver, systemd run as a container's PID 1 (hack/zoned/zns-vm/docker-systemd.sh).
# The whole fault matrix is
# hack/zoned/test-faults.sh (make test-faults). It needs `make build` and
# `hack/hosts/images.sh build` (make test-zns does both).
#
# usage: hack/zoned/test-zns.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=hack/zoned/guest.sh
. "$AB_ROOT/hack/zoned/guest.sh"

test_geometry

need_series_build zns

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# package, then the tests of it to run in the guest
suites=(
	"./daemon/internal/zoned" "."
	"./daemon" "Zoned|ExtractCheckpointImages"
)
failed=0
for ((i = 0; i < ${#suites[@]}; i += 2)); do
	pkg=${suites[i]} run=${suites[i + 1]}
	bin=$out/$(basename "$pkg").test
	log "zns: building $pkg tests"
	(cd "$PATCHED_TREE" && CGO_ENABLED=0 go test -c -tags "$GO_BUILDTAGS" -o "$bin" "$pkg")
	log "zns: running $pkg tests ($run) on an emulated ZNS namespace"
	if ! vm run "$bin" -test.v -test.count=1 -test.run "$run"; then
		failed=$((failed + 1))
		echo "FAIL $pkg (zoned device)" >&2
	fi
done

# guest_case what script [NAME=VALUE...]: script run in the guest booted with
# the daemon's root, with NAME=VALUE in its environment; a failure counted
guest_case() {
	local what=$1 script=$2 kv
	shift 2
	for kv in "$@"; do
		local -x "${kv?}"
	done
	log "zns: $what"
	if ! ZNS_VM_MEM=${ZNS_E2E_MEM:-1536} ZNS_VM_TIMEOUT=${ZNS_E2E_TIMEOUT:-600} vm run-root "$out/root" "$script"; then
		failed=$((failed + 1))
		echo "FAIL $what" >&2
	fi
}

log "zns: the patched dockerd's guest root"
"$AB_ROOT/hack/zoned/zns-vm/docker-root.sh" "$out/root"
guest_case "the patched dockerd end to end on an emulated ZNS namespace" /docker-e2e.sh
guest_case "a checkpoint whose disk fails under it (device-mapper's error target)" /docker-faults.sh
guest_case "a power cut at every flush of a checkpoint's create and delete (device-mapper's log-writes target)" \
	/docker-powercut.sh ZNS_VM_PLAIN_SIZE=96M
guest_case "a checkpoint moved between two daemons through an NFS root; the NFS server's disk full in a copy" /docker-nfs.sh
guest_case "checkpoint-io-weight under systemd: the copy in a scope of systemd's" /docker-systemd.sh \
	ZNS_VM_PLAIN_SIZE=256M ZNS_VM_PLAIN_DRIVE=cache=unsafe,throttling.bps-total=16777216
[ "$failed" = 0 ] || die "zns: $failed of $((${#suites[@]} / 2 + 4)) guests failed"
log "zns: all passed on the zoned device"
