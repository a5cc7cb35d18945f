#!/usr/bin/env bash
# Run a test binary against a real zoned block device: a Linux guest under QEMU
# (TCG) with an emulated ZNS NVMe namespace, booted from Debian's kernel and a
# busybox initramfs.
#
# usage: hack/zoned/zns-vm.sh run TESTBIN [ARGS...]   boot, run TESTBIN ARGS, power off
#        hack/zoned/zns-vm.sh run-root ROOT CMD [ARGS...]
#                                                     boot with the tree ROOT as the guest's
#                                                     root, run CMD (a path in ROOT) ARGS, power off
#        hack/zoned/zns-vm.sh check                   run hack/zoned/zns-vm/probe in the guest
#        hack/zoned/zns-vm.sh fetch [--check]         put the guest kernel in the cache
#
# TESTBIN must be statically linked (CGO_ENABLED=0 go test -c). In the guest it
# runs as root in /tmp (a tmpfs) with ZNS_DEVICE=/dev/nvme0n1 (the zoned
# namespace), ZNS_PLAIN_DEVICE=/dev/nvme0n2 (a conventional namespace, 64 MiB
# unless ZNS_VM_PLAIN_SIZE says otherwise, beside it: refusals, ext4) and
# ZNS_TEST=1; its output is the
# console's, streamed. The exit
# status is TESTBIN's; 125 when the VM itself failed (setup, timeout, no exit
# status from the guest).
#
# run-root puts the files of ROOT (any programs with the libraries they need,
# in their places; no /init) into the initramfs beside busybox, which is in
# /bin, and runs CMD as it runs TESTBIN, with PATH=/usr/local/sbin:
# /usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin. The guest's root is then a
# bind mount of the initramfs rather than the initramfs itself, so that
# pivot_root works there (container runtimes need it).
#
# Every guest loads the kernel's modules for NVMe and for what containers and
# CRIU need (GUEST_MODULES below): overlayfs, the socket diagnostics, nf_tables
# and conntrack's netlink interface; and ext4 and the BFQ scheduler.
#
# Environment (defaults in brackets):
#   ZNS_VM_ZONE_SIZE      zone size [64M]
#   ZNS_VM_ZONE_CAPACITY  zone capacity [= zone size]
#   ZNS_VM_MAX_OPEN       max open zones [8]
#   ZNS_VM_MAX_ACTIVE     max active zones [8]
#   ZNS_VM_NS_SIZE        namespace size (a sparse file) [2G]
#   ZNS_VM_PLAIN_SIZE     the conventional namespace's size (a sparse file) [64M]
#   ZNS_VM_PLAIN_DRIVE    more QEMU -drive options for it ("cache=unsafe,
#                         throttling.bps-write=67108864": an emulated disk of
#                         64 MiB/s whose requests wait in one queue) []
#   ZNS_VM_LBS            logical (and physical) block size [4096]
#   ZNS_VM_ZASL           zone append size limit N: 2^N x 4 KiB (0 = the
#                         max data transfer size, 512 KiB) [0]
#   ZNS_VM_ENV            "NAME=VALUE ..." exported to TESTBIN (split on blanks)
#   ZNS_VM_TIMEOUT        seconds before QEMU is killed [240]
#   ZNS_VM_MEM            guest memory in MiB [1024]
#   ZNS_VM_SMP            guest CPUs [2]
#   ZNS_VM_CPU            QEMU's -cpu [qemu64,+rdrand]
#   ZNS_VM_VERBOSE        1: the guest kernel's boot messages too [0]
#   ZNS_VM_CACHE          where fetch puts the kernel [$AB_CACHE/zns]
#   ZNS_VM_KERNEL_PKG     the kernel package to fetch [what linux-image-amd64
#                         depends on]
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

AB_CACHE=${AB_CACHE:-/var/cache/moby-ab}
ZNS_CACHE=${ZNS_VM_CACHE:-$AB_CACHE/zns}
GUEST=$ZNS_CACHE/guest
# The guest's exit status line and its setup failure line.
EXIT_MARK=ZNS-VM-EXIT=
FAIL_MARK=ZNS-VM-SETUP-FAILED:
VM_FAIL=125
# The guest kernel's modules the guests load (with what they depend on), as
# module:CONFIG_ option, when the kernel has them as modules: the NVMe driver;
# for run-root guests that run containers, overlayfs, and what CRIU needs: the
# socket diagnostics it dumps sockets with, nf_tables (it probes nftables at
# start and locks a container's network with it) and conntrack's netlink
# interface (it dumps a network namespace's conntrack entries through it).
GUEST_MODULES="nvme:BLK_DEV_NVME overlay:OVERLAY_FS unix_diag:UNIX_DIAG netlink_diag:NETLINK_DIAG"
GUEST_MODULES+=" af_packet_diag:PACKET_DIAG inet_diag:INET_DIAG tcp_diag:INET_TCP_DIAG udp_diag:INET_UDP_DIAG nf_tables:NF_TABLES"
GUEST_MODULES+=" nf_conntrack_netlink:NF_CT_NETLINK"
# ext4 and BFQ: the I/O controller's runs on the conventional namespace
# (hack/zoned/zns-vm/docker-iocost.sh).
GUEST_MODULES+=" ext4:EXT4_FS bfq:IOSCHED_BFQ"
# device-mapper (its linear and error targets): faults injected under a
# checkpoint directory's file system (hack/zoned/zns-vm/docker-faults.sh).
GUEST_MODULES+=" dm_mod:BLK_DEV_DM"
# its log-writes and snapshot targets: a power cut at every flush, replayed
# (hack/zoned/zns-vm/docker-powercut.sh).
GUEST_MODULES+=" dm_log_writes:DM_LOG_WRITES dm_snapshot:DM_SNAPSHOT"
# the NFS server and client, and veth: an NFS checkpoint root, and a second
# daemon in a network namespace of its own that mounts it too
# (hack/zoned/zns-vm/docker-nfs.sh).
GUEST_MODULES+=" nfsd:NFSD nfsv4:NFS_V4 veth:VETH"

ZONE_SIZE=${ZNS_VM_ZONE_SIZE:-64M}
ZONE_CAP=${ZNS_VM_ZONE_CAPACITY:-$ZONE_SIZE}
MAX_OPEN=${ZNS_VM_MAX_OPEN:-8}
MAX_ACTIVE=${ZNS_VM_MAX_ACTIVE:-8}
NS_SIZE=${ZNS_VM_NS_SIZE:-2G}
PLAIN_SIZE=${ZNS_VM_PLAIN_SIZE:-64M}
PLAIN_DRIVE=${ZNS_VM_PLAIN_DRIVE:-}
[[ $PLAIN_DRIVE =~ ^[A-Za-z0-9_.=,-]*$ ]] || die "zns-vm: ZNS_VM_PLAIN_DRIVE: '$PLAIN_DRIVE' is not a list of QEMU -drive options (name=value,...)"
LBS=${ZNS_VM_LBS:-4096}
ZASL=${ZNS_VM_ZASL:-0}
TIMEOUT=${ZNS_VM_TIMEOUT:-240}
MEM=${ZNS_VM_MEM:-1024}
SMP=${ZNS_VM_SMP:-2}
# The baseline x86-64 CPU, which TCG emulates best, with RDRAND: the guest
# kernel trusts it to seed its random pool at once, so that getrandom (Go's
# crypto/rand) does not block for seconds.
CPU=${ZNS_VM_CPU:-qemu64,+rdrand}

TMP=""
FETCH_TMP=""
QEMU_PID=""
SLEEP_PID=""
VM_RC=""

vm_fail() {
	printf 'error: zns-vm: %s\n' "$*" >&2
	exit "$VM_FAIL"
}

usage() {
	sed -n '/^# usage:/,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

# --- the guest kernel ------------------------------------------------------

cache_ok() {
	[ -s "$GUEST/stamp" ] && [ -s "$GUEST/vmlinuz" ] && [ -f "$GUEST/modules.load" ] || return 1
	[ "$(cat "$GUEST/modules.want" 2>/dev/null)" = "$GUEST_MODULES" ] || return 1
	if [ -n "${ZNS_VM_KERNEL_PKG:-}" ]; then
		[ "$(awk '{print $1}' "$GUEST/stamp")" = "$ZNS_VM_KERNEL_PKG" ] || return 1
	fi
	local m
	while read -r m; do
		[ -z "$m" ] || [ -s "$GUEST/modules/$m" ] || return 1
	done <"$GUEST/modules.load"
}

# The versioned kernel package behind Debian's metapackage.
kernel_pkg() {
	if [ -n "${ZNS_VM_KERNEL_PKG:-}" ]; then
		echo "$ZNS_VM_KERNEL_PKG"
		return
	fi
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}'
}

apt_update() {
	[ "$(id -u)" = 0 ] || return 1
	log "apt-get update"
	apt-get update >>"$1" 2>&1
}

# A module's file under the kernel's module tree, from modules.order (whose
# names may lack the compression suffix); - and _ are the same in names.
module_file() { # moddir name
	local rel f
	rel=$(awk -v n="${2//-/_}" '{
		f = $0; sub(/.*\//, "", f); sub(/\.ko(\.[a-z]+)?$/, "", f); gsub(/-/, "_", f)
		if (f == n) { print $0; exit }
	}' "$1/modules.order")
	[ -n "$rel" ] || return 1
	rel=${rel%.ko*}.ko
	for f in "$1/$rel" "$1/$rel.xz" "$1/$rel.zst" "$1/$rel.gz"; do
		[ -f "$f" ] && echo "$f" && return 0
	done
	return 1
}

# Copy a module and, first, the modules it depends on into $out/modules
# (uncompressed: busybox insmod reads plain .ko), appending each to
# $out/modules.load in the order to load them.
add_module() { # moddir out name
	local moddir=$1 out=$2 name=${3//-/_} src dst deps dep
	grep -qx "$name.ko" "$out/modules.load" && return 0
	src=$(module_file "$moddir" "$name") || die "zns-vm: module $name is not in the kernel package"
	dst=$out/modules/$name.ko
	case $src in
	*.xz) xz -dc "$src" >"$dst" ;;
	*.zst) zstd -qdc "$src" >"$dst" ;;
	*.gz) gzip -dc "$src" >"$dst" ;;
	*) cp "$src" "$dst" ;;
	esac
	deps=$(modinfo -F depends "$dst")
	for dep in ${deps//,/ }; do
		add_module "$moddir" "$out" "$dep"
	done
	# Soft dependencies to load first ("softdep: pre: crc32c", or an
	# algorithm's alias, "crypto-crc32c"): a module of that name, or (a
	# crypto algorithm) its generic implementation, unless the kernel has it
	# built in.
	deps=$(modinfo -F softdep "$dst" | awk '{ for (i = 1; i <= NF; i++) { if ($i == "pre:") p = 1; else if ($i ~ /:$/) p = 0; else if (p) print $i } }')
	for dep in $deps; do
		dep=${dep//-/_}
		dep=${dep#crypto_}
		if grep -qE "/${dep}\.ko\$" "$moddir/modules.builtin" 2>/dev/null; then
			continue
		elif module_file "$moddir" "$dep" >/dev/null; then
			add_module "$moddir" "$out" "$dep"
		elif module_file "$moddir" "${dep}_generic" >/dev/null; then
			add_module "$moddir" "$out" "${dep}_generic"
		else
			die "zns-vm: $name wants $dep loaded first, which is not in the kernel package"
		fi
	done
	echo "$name.ko" >>"$out/modules.load"
}

cmd_fetch() {
	local check=0
	case ${1:-} in
	--check) check=1 ;;
	"") ;;
	*) usage ;;
	esac
	if cache_ok; then
		cat "$GUEST/stamp"
		return 0
	fi
	[ "$check" = 0 ] || vm_fail "no guest kernel in $GUEST: run hack/zoned/zns-vm.sh fetch"
	local c
	for c in apt-get apt-cache dpkg-deb modinfo xz flock; do
		command -v "$c" >/dev/null || die "zns-vm: fetch needs $c"
	done
	mkdir -p "$ZNS_CACHE"
	exec 9>"$ZNS_CACHE/.lock"
	flock 9
	if cache_ok; then # fetched by another run meanwhile
		cat "$GUEST/stamp"
		return 0
	fi
	find "$ZNS_CACHE" -maxdepth 1 -name '.fetch.*' -exec rm -rf {} +
	local work aptlog pkg deb
	work=$(mktemp -d "$ZNS_CACHE/.fetch.XXXXXX")
	FETCH_TMP=$work
	aptlog=$work/apt.log
	pkg=$(kernel_pkg)
	if [ -z "$pkg" ] && apt_update "$aptlog"; then
		pkg=$(kernel_pkg)
	fi
	[ -n "$pkg" ] || die "zns-vm: apt knows no linux-image-amd64 (run apt-get update)"
	log "zns-vm: downloading $pkg"
	chmod 0755 "$work" # apt-get download writes as the _apt user
	if ! (cd "$work" && apt-get download "$pkg") >>"$aptlog" 2>&1; then
		# a stale package list names a file the mirror no longer has
		apt_update "$aptlog" || die "zns-vm: apt-get download $pkg failed (log: $aptlog)"
		pkg=$(kernel_pkg)
		(cd "$work" && apt-get download "$pkg") >>"$aptlog" 2>&1 ||
			die "zns-vm: apt-get download $pkg failed (log: $aptlog)"
	fi
	deb=$(find "$work" -maxdepth 1 -name "${pkg}_*.deb" | head -n 1)
	[ -n "$deb" ] || die "zns-vm: apt-get download left no $pkg .deb (log: $aptlog)"
	dpkg-deb -x "$deb" "$work/x"

	local moddir kver out
	moddir=$(find "$work/x/lib/modules" "$work/x/usr/lib/modules" -mindepth 2 -maxdepth 2 \
		-name modules.order -printf '%h\n' 2>/dev/null | head -n 1) || true
	[ -n "$moddir" ] || die "zns-vm: $pkg has no module tree"
	kver=${moddir##*/}
	out=$work/guest
	mkdir -p "$out/modules"
	: >"$out/modules.load"
	cp "$work/x/boot/vmlinuz-$kver" "$out/vmlinuz"
	cp "$work/x/boot/config-$kver" "$out/config"
	grep -qx 'CONFIG_BLK_DEV_ZONED=y' "$out/config" || die "zns-vm: $kver is built without BLK_DEV_ZONED"
	local mo m opt
	for mo in $GUEST_MODULES; do
		m=${mo%%:*} opt=${mo#*:}
		case $(grep "^CONFIG_$opt=" "$out/config") in
		*=y) ;;
		*=m) add_module "$moddir" "$out" "$m" ;;
		*) die "zns-vm: $kver has no $m (CONFIG_$opt)" ;;
		esac
	done
	echo "$GUEST_MODULES" >"$out/modules.want"
	printf '%s %s %s\n' "$pkg" "$(dpkg-deb -f "$deb" Version)" "$kver" >"$out/stamp"
	rm -rf "$GUEST"
	mv "$out" "$GUEST"
	rm -rf "$work"
	FETCH_TMP=""
	log "zns-vm: guest kernel $kver in $GUEST (modules: $(tr '\n' ' ' <"$GUEST/modules.load"))"
	cat "$GUEST/stamp"
}

# --- the VM ----------------------------------------------------------------

pid_alive() { # not gone and not a zombie
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	[ "${s%% *}" != Z ]
}

stop_pid() {
	local pid=$1
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 50); do
		pid_alive "$pid" || break
		sleep 0.1
	done
	pid_alive "$pid" && kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	stop_pid "$QEMU_PID"
	QEMU_PID=""
	stop_pid "$SLEEP_PID"
	SLEEP_PID=""
	[ -z "$TMP" ] || rm -rf "$TMP"
	[ -z "$FETCH_TMP" ] || rm -rf "$FETCH_TMP"
}

setup() {
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/zns-vm.XXXXXX")
}

is_static() { # an ELF file without a program interpreter
	[ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ] || return 1
	local out
	out=$(LC_ALL=C ldd "$1" 2>&1) || true
	[[ $out == *"not a dynamic executable"* || $out == *"statically linked"* ]]
}

sq() { # shell-quote for the guest's sh
	local a=$1
	printf "'%s'" "${a//\'/\'\\\'\'}"
}

check_env() {
	local v
	for v in MAX_OPEN MAX_ACTIVE LBS ZASL TIMEOUT MEM SMP; do
		[[ ${!v} =~ ^[0-9]+$ ]] || die "zns-vm: ZNS_VM_$v must be a number (got '${!v}')"
	done
	for v in ZONE_SIZE ZONE_CAP NS_SIZE; do
		[[ ${!v} =~ ^[0-9]+[KMGT]?$ ]] || die "zns-vm: size '${!v}' is not N[KMGT]"
	done
}

write_init() {
	cat >"$1" <<'EOF'
#!/bin/busybox sh
# /init of the zoned-device test VM (hack/zoned/zns-vm.sh)
if [ -e /zns-vm-root ] && [ -z "${ZNS_VM_MOVED:-}" ]; then
	# run-root: the initramfs (rootfs) cannot be pivot_root's old root, a
	# bind mount of it can: make one the root and start again there.
	/bin/busybox mkdir -p /.root
	/bin/busybox mount --bind / /.root
	cd /.root
	/bin/busybox mount --move . /
	exec /bin/busybox chroot . /bin/busybox env ZNS_VM_MOVED=1 /init
fi
/bin/busybox mkdir -p /proc /sys /dev /tmp /run
/bin/busybox mount -t devtmpfs devtmpfs /dev
exec </dev/console >/dev/console 2>&1
/bin/busybox --install -s /bin
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
# what udev would add to /dev: bash's process substitution needs /dev/fd
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr
mount -t tmpfs tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run

fail() {
	echo "ZNS-VM-SETUP-FAILED: $*"
	poweroff -f
}

while read -r m; do
	[ -z "$m" ] || insmod "/lib/modules/$m" || fail "insmod $m"
done </modules.load

# the first NVMe namespace that is zoned
dev=""
i=0
while [ -z "$dev" ] && [ $i -lt 300 ]; do
	for q in /sys/block/nvme*/queue/zoned; do
		if [ -e "$q" ] && [ "$(cat "$q")" != none ]; then
			dev=${q%/queue/zoned}
			dev=${dev##*/}
			break
		fi
	done
	[ -n "$dev" ] || sleep 0.1
	i=$((i + 1))
done
[ -n "$dev" ] || fail "no zoned NVMe namespace after 30 s"
i=0
while [ ! -b "/dev/$dev" ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -b "/dev/$dev" ] || fail "/dev/$dev did not appear"

attrs=""
for a in zoned chunk_sectors nr_zones max_open_zones max_active_zones logical_block_size \
	physical_block_size max_hw_sectors_kb zone_append_max_bytes; do
	attrs="$attrs $a=$(cat "/sys/block/$dev/queue/$a" 2>/dev/null)"
done
echo "zns-vm: /dev/$dev$attrs"

. /env.sh
. /args.sh
# a conventional (not zoned) namespace beside it, for tests of refusals
plain=""
for q in /sys/block/nvme*/queue/zoned; do
	if [ -e "$q" ] && [ "$(cat "$q")" = none ]; then
		plain=${q%/queue/zoned}
		plain=/dev/${plain##*/}
		break
	fi
done
export ZNS_DEVICE="/dev/$dev" ZNS_PLAIN_DEVICE="$plain" ZNS_TEST=1 HOME=/tmp TMPDIR=/tmp
cd /tmp
"$@"
echo "ZNS-VM-EXIT=$?"
sync
poweroff -f
EOF
	chmod 0755 "$1"
}

# The initramfs: busybox, the guest kernel's modules, /init, and the command
# line and environment for the test; then, for run-root, the tree ROOT as a
# second archive (the kernel unpacks both, in order).
build_initramfs() { # root-or-empty cmd args...
	local tree=$1 root=$TMP/root busybox a kv kvs=()
	shift
	busybox=$(command -v busybox) || die "zns-vm: busybox missing (Debian package busybox-static)"
	is_static "$busybox" || die "zns-vm: $busybox is not static (install busybox-static)"
	mkdir -p "$root/bin" "$root/lib/modules" "$root/dev" "$root/proc" "$root/sys" "$root/tmp" "$root/run"
	cp "$busybox" "$root/bin/busybox"
	cp "$GUEST/modules.load" "$root/modules.load"
	[ ! -s "$GUEST/modules.load" ] || cp "$GUEST"/modules/*.ko "$root/lib/modules/"
	write_init "$root/init"
	[ -z "$tree" ] || : >"$root/zns-vm-root"
	{
		printf 'set --'
		for a in "$@"; do
			printf ' %s' "$(sq "$a")"
		done
		printf '\n'
	} >"$root/args.sh"
	: >"$root/env.sh"
	read -r -a kvs <<<"${ZNS_VM_ENV:-}"
	for kv in "${kvs[@]}"; do
		[[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "zns-vm: ZNS_VM_ENV: '$kv' is not NAME=VALUE"
		printf 'export %s\n' "$(sq "$kv")" >>"$root/env.sh"
	done
	(cd "$root" && find . | busybox cpio -o -H newc -R 0:0 2>/dev/null) >"$TMP/initrd.cpio"
	if [ -n "$tree" ]; then
		(cd "$tree" && find . ! -name . | busybox cpio -o -H newc -R 0:0 2>/dev/null) >>"$TMP/initrd.cpio" ||
			die "zns-vm: packing $tree failed"
	fi
}

# Boot the initramfs in $TMP; sets VM_RC to the guest command's exit status.
run_vm() {
	command -v qemu-system-x86_64 >/dev/null || die "zns-vm: qemu-system-x86_64 missing (run hack/stack/install-deps.sh)"
	truncate -s "$NS_SIZE" "$TMP/zns.img"
	truncate -s "$PLAIN_SIZE" "$TMP/plain.img"

	local append="console=ttyS0 panic=-1 rdinit=/init"
	[ "${ZNS_VM_VERBOSE:-0}" = 1 ] || append="$append quiet"
	local zasl=""
	[ "$ZASL" = 0 ] || zasl=",zoned.zasl=$ZASL"
	local console=$TMP/console.log
	log "zns-vm: $(awk '{print $3}' "$GUEST/stamp"), zones $ZONE_SIZE (capacity $ZONE_CAP), $NS_SIZE, lbs $LBS, open/active $MAX_OPEN/$MAX_ACTIVE"
	# stdin is not the terminal's: QEMU must not take it (raw mode, Ctrl-C).
	qemu-system-x86_64 -accel tcg -machine q35 -cpu "$CPU" -m "$MEM" -smp "$SMP" \
		-nodefaults -no-user-config -display none -no-reboot \
		-chardev "stdio,id=con,signal=off,logfile=$console" -serial chardev:con \
		-kernel "$GUEST/vmlinuz" -initrd "$TMP/initrd.cpio" -append "$append" \
		-drive "file=$TMP/zns.img,id=nvm,format=raw,if=none" \
		-device "nvme,serial=zns0,id=nvme0$zasl" \
		-device "nvme-ns,drive=nvm,nsid=1,logical_block_size=$LBS,physical_block_size=$LBS,zoned=true,zoned.zone_size=$ZONE_SIZE,zoned.zone_capacity=$ZONE_CAP,zoned.max_open=$MAX_OPEN,zoned.max_active=$MAX_ACTIVE" \
		-drive "file=$TMP/plain.img,id=plain,format=raw,if=none${PLAIN_DRIVE:+,$PLAIN_DRIVE}" \
		-device "nvme-ns,drive=plain,nsid=2,logical_block_size=$LBS,physical_block_size=$LBS" \
		</dev/null &
	QEMU_PID=$!
	sleep "$TIMEOUT" &
	SLEEP_PID=$!
	local done_pid="" st=0
	wait -n -p done_pid "$QEMU_PID" "$SLEEP_PID" || st=$?
	if [ "$done_pid" = "$SLEEP_PID" ]; then
		SLEEP_PID=""
		stop_pid "$QEMU_PID"
		QEMU_PID=""
		echo >&2
		vm_fail "timed out after $TIMEOUT s (ZNS_VM_TIMEOUT): QEMU killed"
	fi
	QEMU_PID=""
	stop_pid "$SLEEP_PID"
	SLEEP_PID=""
	[ "$st" = 0 ] || vm_fail "QEMU exited with status $st"

	local line
	line=$(tr -d '\r' <"$console" | grep -a -E "^(${EXIT_MARK}[0-9]+|${FAIL_MARK}.*)\$" | tail -n 1) || true
	case $line in
	"$EXIT_MARK"*)
		VM_RC=${line#"$EXIT_MARK"}
		return 0
		;;
	"$FAIL_MARK"*)
		vm_fail "guest setup failed: ${line#"$FAIL_MARK" }"
		;;
	esac
	{
		echo "error: zns-vm: the guest powered off without an exit status ($EXIT_MARK). Last console lines:"
		tr -d '\r' <"$console" | tail -n 25 | sed 's/^/  | /'
	} >&2
	exit "$VM_FAIL"
}

need_kernel() {
	if ! cache_ok; then
		log "zns-vm: no guest kernel in $GUEST, or not with the modules.wanted: fetching it"
		cmd_fetch >/dev/null
	fi
}

run_static() { # testbin args...
	local bin=$1
	shift
	[[ -f $bin && -x $bin ]] || die "zns-vm: $bin is not an executable file"
	is_static "$bin" || die "zns-vm: $bin is not a static ELF binary (build it with CGO_ENABLED=0)"
	check_env
	need_kernel
	build_initramfs "" /testbin "$@"
	# the binary goes in as /testbin, in an archive of its own
	mkdir "$TMP/bin"
	cp "$bin" "$TMP/bin/testbin"
	chmod 0755 "$TMP/bin/testbin"
	(cd "$TMP/bin" && echo testbin | busybox cpio -o -H newc -R 0:0 2>/dev/null) >>"$TMP/initrd.cpio"
	run_vm
}

cmd_run() {
	[ $# -ge 1 ] || usage
	local bin=$1
	shift
	setup
	run_static "$(realpath "$bin")" "$@"
	exit "$VM_RC"
}

cmd_run_root() {
	[ $# -ge 2 ] || usage
	local tree=$1 cmd=$2
	shift 2
	[ -d "$tree" ] || die "zns-vm: run-root: $tree is not a directory"
	tree=$(realpath "$tree")
	[[ $cmd == /* ]] || die "zns-vm: run-root: CMD must be an absolute path in ROOT (got '$cmd')"
	[[ -f $tree$cmd && -x $tree$cmd ]] || die "zns-vm: run-root: $tree$cmd is not an executable file"
	[ ! -e "$tree/init" ] || die "zns-vm: run-root: $tree/init would replace the guest's /init"
	check_env
	need_kernel
	setup
	build_initramfs "$tree" "$cmd" "$@"
	run_vm
	exit "$VM_RC"
}

cmd_check() {
	[ $# = 0 ] || usage
	local go
	go=$(command -v go || echo /usr/local/go/bin/go)
	[ -x "$go" ] || die "zns-vm: go missing"
	setup
	log "zns-vm: building the probe"
	(cd "$AB_ROOT/hack/zoned/zns-vm/probe" &&
		CGO_ENABLED=0 GOWORK=off GOFLAGS=-buildvcs=false "$go" build -trimpath -o "$TMP/zns-probe" .) ||
		die "zns-vm: building the probe failed"
	run_static "$TMP/zns-probe"
	[ "$VM_RC" = 0 ] || printf 'error: zns-vm: the probe failed (status %s)\n' "$VM_RC" >&2
	exit "$VM_RC"
}

trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
case ${1:-} in
fetch) shift && cmd_fetch "$@" ;;
run) shift && cmd_run "$@" ;;
run-root) shift && cmd_run_root "$@" ;;
check) shift && cmd_check "$@" ;;
*) usage ;;
esac
