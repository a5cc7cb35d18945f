#!/usr/bin/env bash
# checkpoints.io-weight under systemd, in the guest of `hack/zoned/zns-vm.sh
# run-root` (started by hack/zoned/test-zns.sh, in a root made by
# hack/zoned/zns-vm/docker-root.sh): where systemd owns the cgroup tree,
# each copy of checkpoint images runs in a transient scope of systemd's,
# not in a group the daemon makes at the hierarchy's root.
#
# The guest's init is busybox, so systemd (this machine's, copied into the
# root) runs as a container's would: PID 1 of its own PID namespace, with a
# cgroup namespace rooted at /sys/fs/cgroup/machine and a mount namespace
# in which that group is its /sys/fs/cgroup; its units are default.target
# and docker.service (Delegate=yes, KillMode=process, as moby ships it;
# IOAccounting=yes, so that what it writes can be read),
# nothing else. dockerd, started by it, uses the systemd cgroup driver (the
# default on cgroup v2 under systemd): runc puts the containers in scopes,
# and systemd's private socket is its bus.
#
# The conventional namespace (a disk of ZNS_SYSTEMD_DISK_BPS bytes a
# second, hack/zoned/test-zns.sh) holds the checkpoint directory; a memory
# holder of ZNS_SYSTEMD_MIB MiB is checkpointed into it, without
# --leave-running, with checkpoints.io-weight 10. What the system did, read
# from the cgroup tree and /proc, not from the daemon:
#
#   - while the create runs, a scope dockerd-checkpoint-copy-PID.scope
#     exists in system.slice, holds the process PID, the daemon's copy, and
#     has io.weight "default 1" (io-weight 10 mapped as runc maps
#     --blkio-weight; systemd wrote it);
#   - the create succeeds; the scope is gone after it; no group
#     dockerd-checkpoint-io exists anywhere in the hierarchy;
#   - the disk's writes during the create were not charged to
#     docker.service (the daemon's own group): at most a tenth of the
#     images' bytes;
#   - the holder, restored from the checkpoint, counts on and verifies its
#     memory (the systemd driver's restore).
#
# Environment: ZNS_PLAIN_DEVICE (set by hack/zoned/zns-vm.sh),
# ZNS_SYSTEMD_MIB [64].
set -euo pipefail

# shellcheck disable=SC2034 # read by docker-lib.sh
NAME=zns-systemd
# shellcheck source=hack/zoned/zns-vm/docker-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/docker-lib.sh"
MIB=${ZNS_SYSTEMD_MIB:-64}
PLAIN=${ZNS_PLAIN_DEVICE:?ZNS_PLAIN_DEVICE is not set: run this in hack/zoned/zns-vm.sh run-root}
MNT=/mnt/disk
MACHINE=/sys/fs/cgroup/machine
SLICE=$MACHINE/system.slice
SERVICE=$SLICE/docker.service
UNITS=$W/units
# systemd mounts a /run of its own; the daemon's sockets and state are in
# /tmp, which both sides see
EXEC=/tmp/docker-exec
DOCKER_HOST=unix:///tmp/docker.sock
export DOCKER_HOST
SD_PID=""

# sd CMD...: CMD in systemd's namespaces (its /run, its cgroup view)
sd() { /usr/bin/nsenter -t "$SD_PID" -m -p -C -- "$@"; }

sd_diagnostics() {
	[ -n "$SD_PID" ] || return 0
	echo "--- systemd's units"
	sd /usr/bin/systemctl list-units --all --no-pager --plain 2>&1 | head -n 30
	echo "--- the cgroup tree under $MACHINE"
	find "$MACHINE" -maxdepth 3 -type d 2>/dev/null
}
sd_on_exit() {
	local rc=$?
	[ "$rc" = 0 ] || sd_diagnostics >&2
	(exit "$rc")
	on_exit
}
trap sd_on_exit EXIT

# disk_written file: the bytes written to the plain disk charged to the
# group of the io.stat file
disk_written() {
	[ -f "$1" ] || fail "no $1: the io controller is not enabled there"
	awk -v d="$MAJMIN" '$1 == d {for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) {sub(/wbytes=/, "", $i); print $i; exit}} END {}' "$1" 2>/dev/null | grep . || echo 0
}

copy_scopes() { find "$SLICE" -maxdepth 1 -type d -name 'dockerd-checkpoint-copy-*.scope' 2>/dev/null; }
no_copy_scope() { [ -z "$(copy_scopes)" ]; }
systemd_up() { [ -n "$SD_PID" ] && [ -S "/proc/$SD_PID/root/run/systemd/private" ]; }
service_pid() { head -n 1 "$SERVICE/cgroup.procs" 2>/dev/null; }

step "the guest: cgroup v2 with io and memory delegated to a group for systemd"
guest_setup
mkdir -p "$EXEC" "$MNT" "$UNITS"
MAJMIN=$(cat "/sys/block/${PLAIN#/dev/}/dev")
mkfs.ext4 -q -F "$PLAIN" || fail "mkfs.ext4 $PLAIN failed"
mount "$PLAIN" "$MNT"
echo "+io +memory +pids" >/sys/fs/cgroup/cgroup.subtree_control
mkdir "$MACHINE"
: >/etc/machine-id

ZONED=0 write_config '"io-weight": 10'
cat >"$UNITS/default.target" <<EOF
[Unit]
Description=The checkpoint copy under systemd
Wants=docker.service
EOF
cat >"$UNITS/docker.service" <<EOF
[Unit]
Description=Docker Application Container Engine (patched)

[Service]
Environment=PATH=$PATH
ExecStart=/usr/local/bin/dockerd --config-file $CONFIG
StandardOutput=append:$LOG
StandardError=append:$LOG
Delegate=yes
KillMode=process
IOAccounting=yes
MemoryAccounting=yes
EOF

step "systemd as PID 1 of its own namespaces, dockerd its service"
# PID 1 of a new PID namespace moves itself into $MACHINE and only then
# takes a cgroup namespace (rooted where it is); unshare's own process,
# which waits, stays outside: a group with a process in it could not
# give its controllers to systemd's children.
/usr/bin/unshare --pid --mount --fork --mount-proc -- sh -c '
	echo 0 >"$1/cgroup.procs" &&
	exec /usr/bin/unshare --cgroup -- sh -c "umount /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup &&
		exec env container=moby-ab SYSTEMD_UNIT_PATH=$2 /lib/systemd/systemd --system --log-target=console --log-level=notice"' sh "$MACHINE" "$UNITS" &
# systemd_pid: SD_PID gets the PID of the systemd started above
systemd_pid() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = systemd ] && SD_PID=${p#/proc/} && return 0
	done
	return 1
}
wait_for 60 systemd_pid || fail "systemd did not start"
wait_for 60 systemd_up || fail "systemd (pid $SD_PID) did not open its private socket"
wait_for 180 eval '[ -n "$(service_pid)" ] && timeout 20 docker version >/dev/null 2>&1' ||
	fail "dockerd did not answer as docker.service within 180 s"
DOCKERD_PID=$(service_pid)
note "systemd pid $SD_PID, dockerd pid $DOCKERD_PID in $SERVICE"
# the weight the copies are set up with, as the daemon serves it (0100)
served=$(wget -qO- "http://$METRICS/metrics" | awk '/^engine_daemon_checkpoint_io_weight / {print $2}')
[ "$served" = 10 ] || fail "engine_daemon_checkpoint_io_weight is '$served', not 10 (checkpoints.io-weight 10)"

docker load -q -i /images/memholder.tar >/dev/null || fail "docker load of the memory holder failed"
start_holder "$MIB"
[ -d "$SLICE/docker-$ID.scope" ] || fail "the holder is not in a scope of systemd's ($SLICE/docker-$ID.scope): the daemon does not use the systemd cgroup driver"
after=$(last_count)

step "a checkpoint of $MIB MiB with checkpoints.io-weight 10, its copy watched"
svc0=$(disk_written "$SERVICE/io.stat")
docker checkpoint create --checkpoint-dir "$MNT/cps" "$MH" cp1 >"$W/create.out" 2>&1 &
create=$!
scope="" copy_pid="" weight=""
POLL=0.05 wait_for 120 eval '[ -n "$(copy_scopes)" ] || gone $create' || true
scope=$(copy_scopes | head -n 1)
if [ -n "$scope" ]; then
	weight=$(cat "$scope/io.weight" 2>/dev/null || true)
	copy_pid=$(head -n 1 "$scope/cgroup.procs" 2>/dev/null || true)
	cmd=$(tr '\0' ' ' <"/proc/$copy_pid/cmdline" 2>/dev/null || true)
fi
wait "$create" || fail "the checkpoint failed: $(cat "$W/create.out")"
svc1=$(disk_written "$SERVICE/io.stat")
[ -n "$scope" ] || fail "no scope dockerd-checkpoint-copy-*.scope appeared in $SLICE while the checkpoint ran"
note "the copy ran in ${scope#"$MACHINE"/} (pid $copy_pid: $cmd), io.weight $weight"
[[ $cmd == dockerd-checkpoint-copy* ]] || fail "$scope holds pid ${copy_pid:-none} ($cmd), not the daemon's copy"
[ "$weight" = "default 1" ] || fail "$scope has io.weight '$weight', not 'default 1' (io-weight 10, as runc maps --blkio-weight 10)"
wait_for 30 no_copy_scope || fail "the copy's scope is still there after the checkpoint: $(copy_scopes)"
stray=$(find /sys/fs/cgroup -type d -name dockerd-checkpoint-io)
[ -z "$stray" ] || fail "the daemon made a group of its own beside systemd's tree: $stray"
images=$(du -sb "$MNT/cps/cp1" | cut -f1)
note "images $((images >> 20)) MiB; charged to docker.service during the create: $(((svc1 - svc0) >> 10)) KiB"
[ "$((svc1 - svc0))" -le "$((images / 10))" ] ||
	fail "$((svc1 - svc0)) bytes of the disk's writes were charged to docker.service: the copy did not write in its scope"
wait_for 30 state_is exited || fail "the holder is $(state) after a checkpoint without --leave-running"

step "restore under the systemd driver"
RESTORE_DIR=$MNT/cps restore_verified cp1 "$after"
docker rm -f "$MH" >/dev/null

step "systemd stops dockerd"
sd /usr/bin/systemctl stop docker.service || fail "systemctl stop docker.service failed"
wait_for 60 gone "$DOCKERD_PID" || fail "dockerd (pid $DOCKERD_PID) did not stop"
note "PASS"
