#!/usr/bin/env bash
# The zoned checkpoint store's tests against a real kernel: each test binary is
# built static from the patched tree and run by hack/zns-vm.sh in a QEMU guest
# whose NVMe controller has an emulated ZNS namespace. The geometry is small
# (16 zones of 8 MiB, 6 MiB of capacity each, at most 4 open and 6 active) so
# that the device-full tests fill it in seconds, and its capacity is below the
# zone size on purpose.
#
# usage: hack/test-zns.sh
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export ZNS_VM_ZONE_SIZE=${ZNS_VM_ZONE_SIZE:-8M}
export ZNS_VM_ZONE_CAPACITY=${ZNS_VM_ZONE_CAPACITY:-6M}
export ZNS_VM_NS_SIZE=${ZNS_VM_NS_SIZE:-128M}
export ZNS_VM_MAX_OPEN=${ZNS_VM_MAX_OPEN:-4}
export ZNS_VM_MAX_ACTIVE=${ZNS_VM_MAX_ACTIVE:-6}

"$AB_ROOT/hack/patches.sh" ensure
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
	if ! "$AB_ROOT/hack/zns-vm.sh" run "$bin" -test.v -test.count=1 -test.run "$run"; then
		failed=$((failed + 1))
		echo "FAIL $pkg (zoned device)" >&2
	fi
done
[ "$failed" = 0 ] || die "zns: $failed test binaries failed on the zoned device"
log "zns: all passed on the zoned device"
