#!/usr/bin/env bash
# The whole fault matrix of checkpoints, in the QEMU guest of
# hack/zoned/zns-vm.sh, whose kernel has device-mapper (this host's has not):
#
#   faults eio      the disk fails (dm-error) in the middle of a paced copy
#   faults enospc   the file system fills in the middle of a paced copy
#   powercut        a power cut at every flush of a create and a delete
#                   (dm-log-writes, replayed)
#   nfs             a checkpoint moved between two daemons through an NFS
#                   root, and the NFS server stopped in the middle of a copy
#   kills           dockerd killed in the queue, the dump and the copy, with
#                   and without --leave-running, and in the copy into a
#                   custom directory unmounted before the restart
#
# Each prints a line of counts (lost, phantom, ...) and fails unless every
# count of lost state and phantom checkpoints is 0; see each script's header
# (hack/zoned/zns-vm/docker-*.sh). make test runs faults eio, powercut and
# nfs (hack/zoned/test-zns.sh); this runs all, about 10 minutes under TCG. It
# needs `make build` and `hack/hosts/images.sh build` (make test-faults does
# both).
#
# usage: hack/zoned/test-faults.sh [case...]   (default: all)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=hack/zoned/guest.sh
. "$AB_ROOT/hack/zoned/guest.sh"

test_geometry
export ZNS_VM_PLAIN_SIZE=${ZNS_VM_PLAIN_SIZE:-96M}

all=(eio enospc powercut nfs kills)
cases=("$@")
[ "${#cases[@]}" -gt 0 ] || cases=("${all[@]}")
for c in "${cases[@]}"; do
	[[ " ${all[*]} " == *" $c "* ]] || die "faults: no case '$c' (cases: ${all[*]})"
done

need_series_build faults

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$AB_ROOT/hack/zoned/zns-vm/docker-root.sh" "$out/root"

failed=()
for c in "${cases[@]}"; do
	case $c in
	eio | enospc) script=/docker-faults.sh guest_env="FAULTS_FAULT=$c" ;;
	*) script=/docker-$c.sh guest_env= ;;
	esac
	log "faults: $c"
	if ! ZNS_VM_ENV="$guest_env${ZNS_VM_ENV:+ $ZNS_VM_ENV}" ZNS_VM_MEM=${ZNS_E2E_MEM:-1536} \
		ZNS_VM_TIMEOUT=${ZNS_E2E_TIMEOUT:-900} vm run-root "$out/root" "$script"; then
		failed+=("$c")
	fi
done
[ "${#failed[@]}" = 0 ] || die "faults: ${#failed[@]} of ${#cases[@]} failed: ${failed[*]}"
log "faults: all ${#cases[@]} passed"
