# What the scripts that boot the zoned guest with the patched daemon share
# (hack/zoned/test-zns.sh, hack/zoned/zns-trace-vm.sh); sourced after hack/lib.sh.
# It sets the traps for INT, TERM and HUP: a signal stops the guest (its
# QEMU) before the script's EXIT trap removes the files.
# shellcheck shell=bash

# need_series_build who: bin/dockerd-patched is the build of patches/ (an
# older one would pass or fail for the wrong reasons).
need_series_build() {
	local want have
	"$AB_ROOT/hack/stack/patches.sh" ensure
	want=$("$AB_ROOT/hack/stack/patches.sh" hash)
	[ -x "$AB_ROOT/bin/dockerd-patched" ] || die "$1: bin/dockerd-patched is missing: run make build"
	have=$("$AB_ROOT/bin/dockerd-patched" --version)
	[[ $have == *"+ab.$want,"* ]] ||
		die "$1: bin/dockerd-patched ($have) is not built from patches/ (+ab.$want): run make build"
}

VM_PID=""
vm_stop() {
	if [ -n "$VM_PID" ]; then
		kill -TERM "$VM_PID" 2>/dev/null || true
		wait "$VM_PID" 2>/dev/null || true
	fi
	exit "$1"
}
trap 'vm_stop 130' INT
trap 'vm_stop 143' TERM
trap 'vm_stop 129' HUP

# vm args...: hack/zoned/zns-vm.sh args in the background, so that a signal
# reaches it; its exit status.
vm() {
	local rc=0
	"$AB_ROOT/hack/zoned/zns-vm.sh" "$@" &
	VM_PID=$!
	wait "$VM_PID" || rc=$?
	VM_PID=""
	return "$rc"
}
