# What the scripts that boot the zoned guest with the patched daemon share
# (hack/zoned/test-zns.sh, hack/zoned/test-faults.sh, hack/zoned/zns-trace-vm.sh,
# hack/zoned/zns-iocost-vm.sh);
# sourced after hack/lib.sh.
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

# test_geometry: the tests' emulated namespace, unless the environment says
# otherwise: 16 zones of 8 MiB, 6 MiB of capacity each (below the zone size
# on purpose), at most 4 open and 6 active, so that filling it takes seconds.
test_geometry() {
	export ZNS_VM_ZONE_SIZE=${ZNS_VM_ZONE_SIZE:-8M}
	export ZNS_VM_ZONE_CAPACITY=${ZNS_VM_ZONE_CAPACITY:-6M}
	export ZNS_VM_NS_SIZE=${ZNS_VM_NS_SIZE:-128M}
	export ZNS_VM_MAX_OPEN=${ZNS_VM_MAX_OPEN:-4}
	export ZNS_VM_MAX_ACTIVE=${ZNS_VM_MAX_ACTIVE:-6}
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

# guest_run who root script mark out want: runs script in the guest booted
# with the tree root (hack/zoned/zns-vm.sh run-root), its console also in
# out/console.log; unpacks the results the guest printed, a base64 tar.gz
# between the lines MARK-RESULTS-BEGIN and MARK-RESULTS-END, into out, and
# leaves a line in the console log in their place. Dies, as who, when the
# guest failed or printed no out/want.
guest_run() {
	local who=$1 root=$2 script=$3 mark=$4 out=$5 want=$6 rc=0 con tee_pid
	# the console through tee, which is waited for: the results are the
	# console's last lines
	exec {con}> >(tee "$out/console.log")
	tee_pid=$!
	vm run-root "$root" "$script" >&"$con" 2>&1 || rc=$?
	exec {con}>&-
	wait "$tee_pid" || true
	# the guest's results, if it got as far as printing them
	tr -d '\r' <"$out/console.log" | sed -n "/^$mark-RESULTS-BEGIN\$/,/^$mark-RESULTS-END\$/p" |
		sed '1d;$d' | base64 -d 2>/dev/null | tar -xzf - -C "$out" 2>/dev/null || true
	[ "$rc" = 0 ] || die "$who: the guest's run failed (status $rc): $out/console.log"
	[ -s "$out/$want" ] || die "$who: the guest printed no results: $out/console.log"
	sed -i "/^$mark-RESULTS-BEGIN\r\{0,1\}\$/,/^$mark-RESULTS-END\r\{0,1\}\$/c\\[the results archive, unpacked beside this file]" "$out/console.log"
}
