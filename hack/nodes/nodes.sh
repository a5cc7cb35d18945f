#!/usr/bin/env bash
# Test nodes on this machine, reached over ssh as real ones are: each one a
# Debian 12 root (hack/nodes/deb-root.sh's, plus sshd, Python and the packages'
# dependencies) on a tmpfs of its own, with its own network namespace
# (ab-node<i>, at 10.205.<i>.2 behind a veth from the host's 10.205.<i>.1),
# mount, UTS (host name ab-node<i>) and PID namespaces. Its init is tini, which
# runs sshd, or systemd (--systemd), which runs ssh.service; everything started
# on the node (dockerd, containers) lives in its PID namespace and dies with it.
#
#   hack/nodes/nodes.sh up DIR N [--systemd I[,I...]]
#                                    start nodes 1..N under DIR (empty or missing); writes
#                                    DIR/inventory.ini (Ansible), DIR/ssh_config, DIR/known_hosts
#                                    and DIR/id_ed25519; nodes I... boot systemd as their init
#   hack/nodes/nodes.sh down DIR     stop the nodes under DIR and remove everything they had:
#                                    processes, containers' cgroups, namespaces, veths, tmpfs, DIR
#   hack/nodes/nodes.sh ssh DIR I [CMD...]   a shell (or CMD) on node I
#   hack/nodes/nodes.sh image        make the nodes' root tarball unless it is cached; print its path
#
# No node has a route beyond the host: the tests talk only to addresses they
# made. Nodes therefore carry in their image what apt would fetch for the
# project's packages and for the A/B harness (NODE_PACKAGES). On a node whose
# init is tini, hack/nodes/unit-run (/usr/local/sbin/unit-run on the node)
# starts a unit's command line as systemd would, and the playbooks use it where
# the inventory names it (moby_ab_service_command, set for those nodes only).
# A systemd node is a container as systemd knows one (container=moby-ab-node):
# a cgroup namespace rooted at a group of its own in each of this machine's
# hierarchies (moby-ab-node<i>), where systemd and the node's dockerd make
# theirs; its units are the image's, less those that would change this
# machine (console, sysctls, modules, clock) and apt's timers.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

AB_CACHE=${AB_CACHE:-/var/cache/moby-ab}
# Reachable over ssh, run Ansible's modules (python3-apt for its apt module),
# and what the packages and the harness depend on (a node without a mirror
# cannot fetch them).
NODE_PACKAGES=(
	openssh-server python3 python3-apt tini iproute2 iptables nftables
	libbsd0 libgnutls30 libnet1 libnftables1 libnl-3-200 libprotobuf-c1 libseccomp2 libuuid1
	ca-certificates
)
# and what the A/B harness needs (hack/nodes/ansible/ab.yml)
read -ra RUN_PACKAGES < <("$AB_ROOT/hack/stack/install-deps.sh" --print-run-packages)
NODE_PACKAGES+=("${RUN_PACKAGES[@]}")
NODE_SUM=$(printf '%s\n' "${NODE_PACKAGES[@]}" "$(sha256sum "$AB_ROOT/hack/nodes/unit-run" | cut -c1-64)" | sha256sum | cut -c1-12)
TARBALL=$AB_CACHE/deb-root/bookworm-node-$NODE_SUM.tar.gz
NODE_NET=10.205
START_TIMEOUT=${AB_NODE_START_TIMEOUT:-60}

cmd_image() {
	if [ -s "$TARBALL" ]; then
		echo "$TARBALL"
		return
	fi
	local tmp
	# (a fresh machine has no cache yet)
	mkdir -p "$AB_CACHE/deb-root"
	tmp=$(mktemp -d "$AB_CACHE/deb-root/.node.XXXXXX")
	# shellcheck disable=SC2064 # expand now: the path is fixed
	trap "rm -rf --one-file-system '$tmp'" EXIT
	"$AB_ROOT/hack/nodes/deb-root.sh" extract "$tmp/root"
	log "nodes: installing ${#NODE_PACKAGES[@]} packages into the node image (once; cached in $TARBALL)"
	# No package starts a service in the image.
	printf '#!/bin/sh\nexit 101\n' >"$tmp/root/usr/sbin/policy-rc.d"
	chmod +x "$tmp/root/usr/sbin/policy-rc.d"
	if ! IN_ROOT_TIMEOUT=900 "$AB_ROOT/hack/nodes/deb-root.sh" run "$tmp/root" \
		apt-get install -y -q --no-install-recommends "${NODE_PACKAGES[@]}" >"$tmp/apt.log" 2>&1; then
		IN_ROOT_TIMEOUT=300 "$AB_ROOT/hack/nodes/deb-root.sh" run "$tmp/root" apt-get update -q >>"$tmp/apt.log" 2>&1 || true
		IN_ROOT_TIMEOUT=900 "$AB_ROOT/hack/nodes/deb-root.sh" run "$tmp/root" \
			apt-get install -y -q --no-install-recommends "${NODE_PACKAGES[@]}" >>"$tmp/apt.log" 2>&1 || {
			tail -n 20 "$tmp/apt.log" >&2
			die "nodes: apt-get install in the node image failed"
		}
	fi
	rm -f "$tmp/root/usr/sbin/policy-rc.d" "$tmp/root"/etc/ssh/ssh_host_*
	install -m 0755 "$AB_ROOT/hack/nodes/unit-run" "$tmp/root/usr/local/sbin/unit-run"
	tar --numeric-owner -C "$tmp/root" -czf "$tmp/node.tar.gz" .
	mv "$tmp/node.tar.gz" "$TARBALL"
	log "nodes: $TARBALL"
	echo "$TARBALL"
}

node_ns() { echo "ab-node$1"; }

cmd_up() {
	local usage="usage: hack/nodes/nodes.sh up DIR N [--systemd I[,I...]]"
	local dir=${1:?$usage} n=${2:?$usage} i systemd=
	[[ $n =~ ^[1-9]$ ]] || die "nodes: N is 1 to 9, not $n"
	shift 2
	while [ $# -gt 0 ]; do
		case $1 in
		--systemd)
			[ $# -ge 2 ] || die "$usage"
			systemd=,$2,
			shift 2
			;;
		*) die "nodes: unknown argument '$1' ($usage)" ;;
		esac
	done
	[[ $systemd =~ ^(,[1-9])*,?$ ]] || die "nodes: --systemd takes node numbers, comma separated (got '${systemd//,/ }')"
	for i in $(tr ',' ' ' <<<"$systemd"); do
		[ "$i" -le "$n" ] || die "nodes: --systemd $i: there are $n nodes"
	done
	mkdir -p "$dir"
	[ -z "$(ls -A "$dir")" ] || die "nodes: $dir is not empty"
	dir=$(cd "$dir" && pwd)
	for ((i = 1; i <= n; i++)); do
		reclaim "$i"
	done
	cmd_image >/dev/null
	ssh-keygen -q -t ed25519 -N '' -C moby-ab-nodes -f "$dir/id_ed25519"
	: >"$dir/known_hosts"
	: >"$dir/ssh_config"
	{
		echo "# Test nodes made by hack/nodes/nodes.sh up; hack/nodes/nodes.sh down $dir removes them."
		echo "[nodes]"
	} >"$dir/inventory.ini"
	for ((i = 1; i <= n; i++)); do
		if [[ $systemd == *,$i,* ]]; then
			node_up "$dir" "$i" systemd
		else
			node_up "$dir" "$i" tini
		fi
	done
	cat >>"$dir/inventory.ini" <<-EOF

		[nodes:vars]
		ansible_user=root
		ansible_ssh_private_key_file=$dir/id_ed25519
		ansible_ssh_common_args='-F $dir/ssh_config'
		ansible_python_interpreter=/usr/bin/python3
	EOF
	for ((i = 1; i <= n; i++)); do
		wait_ssh "$dir" "$i"
	done
	log "nodes: $n up; inventory $dir/inventory.ini"
}

# Node I of a run that ended without down (its machine rebooted its processes
# away, or the run was killed) leaves its root's tmpfs, its namespace and veth
# behind with nothing running in them: take those away. A node whose init still
# runs, or a namespace some process is in, belongs to a live run: refuse.
reclaim() { # i
	local i=$1 ns mnt old pid
	ns=$(node_ns "$i")
	while read -r mnt; do
		[[ $mnt == */node$i/root ]] || continue
		old=${mnt%/node"$i"/root}
		pid=$(cat "$old/node$i/pid" 2>/dev/null) || pid=
		if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] &&
			tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "node-init $old/node$i/root "; then
			die "nodes: ab-node$i of $old is running (hack/nodes/nodes.sh down $old)"
		fi
		log "nodes: removing the nodes of a run that ended without down: $old"
		cmd_down "$old"
	done < <(findmnt -rn -t tmpfs -S "moby-ab-node$i" -o TARGET)
	if [ -e "/run/netns/$ns" ]; then
		[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] ||
			die "nodes: network namespace $ns is in use (nodes of another run? hack/nodes/nodes.sh down its DIR)"
		log "nodes: removing network namespace $ns, left with nothing running in it"
		ip netns del "$ns"
	fi
	# a veth goes with its peer's namespace; one still here has a live peer
	! ip link show "ab-node$i" >/dev/null 2>&1 || die "nodes: link ab-node$i exists"
}

# The hierarchies of this machine's cgroups (cgroup v1 controllers, the
# named systemd one, the unified one): "dir mount-options" lines.
cgroup_hierarchies() {
	findmnt -rn -R -o TARGET,FSTYPE,OPTIONS /sys/fs/cgroup | while read -r t fs o; do
		case $fs in
		cgroup) echo "$t $(tr ',' '\n' <<<"$o" | grep -vxE 'rw|ro|relatime|noatime|nosuid|nodev|noexec' | paste -sd,)" ;;
		cgroup2) echo "$t -" ;;
		esac
	done
}

node_up() { # dir i tini|systemd
	local dir=$1 i=$2 init=$3 ns root addr h o u
	ns=$(node_ns "$i")
	root=$dir/node$i/root
	addr=$NODE_NET.$i.2
	mkdir -p "$root"
	mount -t tmpfs -o size=6g,mode=0755 "moby-ab-node$i" "$root"
	tar --numeric-owner -C "$root" -xzf "$TARBALL"
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	echo "ab-node$i" >"$root/etc/hostname"
	printf '127.0.0.1 localhost\n%s ab-node%s\n' "$addr" "$i" >"$root/etc/hosts"
	chroot "$root" ssh-keygen -A >/dev/null
	install -d -m 0700 "$root/root/.ssh"
	install -m 0600 "$dir/id_ed25519.pub" "$root/root/.ssh/authorized_keys"
	echo "$addr $(cut -d' ' -f1,2 "$root/etc/ssh/ssh_host_ed25519_key.pub")" >>"$dir/known_hosts"
	cat >>"$dir/ssh_config" <<-EOF
		Host ab-node$i $addr
		  HostName $addr
		  User root
		  IdentityFile $dir/id_ed25519
		  IdentitiesOnly yes
		  UserKnownHostsFile $dir/known_hosts
		  StrictHostKeyChecking yes
		  HostKeyAlgorithms ssh-ed25519
		  BatchMode yes
		  ConnectTimeout 5
	EOF
	if [ "$init" = systemd ]; then
		echo "ab-node$i ansible_host=$addr" >>"$dir/inventory.ini"
		# Units that would change this machine, which the node shares
		# (its console, kernel settings, modules, binfmt handlers, clock),
		# are masked; so are apt's timers, which would take apt's lock
		# from under a rollout, and the image's registry, whose port the
		# harness's own takes.
		for u in console-getty.service getty.target systemd-sysctl.service systemd-modules-load.service \
			systemd-binfmt.service proc-sys-fs-binfmt_misc.automount systemd-timesyncd.service \
			systemd-remount-fs.service apt-daily.timer apt-daily-upgrade.timer docker-registry.service; do
			ln -sf /dev/null "$root/etc/systemd/system/$u"
		done
		ln -sf /lib/systemd/system/multi-user.target "$root/etc/systemd/system/default.target"
		# A group of the node's own in every hierarchy: its cgroup namespace's root.
		: >"$dir/node$i/cgroups"
		while read -r h o; do
			mkdir -p "$h/moby-ab-node$i"
			if [ -f "$h/cpuset.cpus" ]; then
				cat "$h/cpuset.cpus" >"$h/moby-ab-node$i/cpuset.cpus"
				cat "$h/cpuset.mems" >"$h/moby-ab-node$i/cpuset.mems"
			fi
			echo "$h $o" >>"$dir/node$i/cgroups"
		done < <(cgroup_hierarchies)
	else
		# no systemd runs as this node's init
		echo "ab-node$i ansible_host=$addr moby_ab_service_command=/usr/local/sbin/unit-run" >>"$dir/inventory.ini"
	fi

	ip netns add "$ns"
	touch "$dir/node$i/netns"
	ip -n "$ns" link set lo up
	ip link add "ab-node$i" type veth peer name eth0 netns "$ns"
	ip addr add "$NODE_NET.$i.1/30" dev "ab-node$i"
	ip link set "ab-node$i" up
	ip -n "$ns" addr add "$addr/30" dev eth0
	ip -n "$ns" link set eth0 up
	# Containers' cgroups go under /docker (cgroupfs), shared with the host's.
	ls -d /sys/fs/cgroup/*/docker >"$dir/node$i/cgroups-before" 2>/dev/null || true
	# --kill-child: the node's init (and so its PID namespace) dies with unshare.
	setsid nsenter --net="/run/netns/$ns" -- unshare --mount --uts --pid --fork --kill-child --propagation slave -- \
		"$0" node-init "$root" "ab-node$i" "$init" "$dir/node$i/cgroups" </dev/null >"$dir/node$i/init.log" 2>&1 &
	echo $! >"$dir/node$i/pid"
}

# node-init, inside the node's namespaces (PID 1 until it execs its init):
# mounts, the host name, the new root; tini and sshd, or systemd.
cmd_node_init() { # root hostname tini|systemd cgroups-file
	local root=$1 init=$3 h o
	hostname "$2"
	if [ "$init" = systemd ]; then
		# Into the node's group of every hierarchy, then a cgroup
		# namespace rooted there.
		while read -r h o; do
			echo $$ >"$h/${2/ab-node/moby-ab-node}/cgroup.procs"
		done <"$4"
		exec unshare --cgroup -- "$0" node-init-root "$root" "$init" "$4"
	fi
	cmd_node_init_root "$root" "$init" "$4"
}

cmd_node_init_root() { # root tini|systemd cgroups-file
	local root=$1 init=$2 h o
	mount --bind "$root" "$root"
	mount -t proc proc "$root/proc"
	mount --rbind /sys "$root/sys"
	mount --rbind /dev "$root/dev"
	mkdir -p "$root/run/sshd" "$root/run/lock"
	if [ "$init" = systemd ]; then
		# The hierarchies again, as the cgroup namespace sees them: the
		# node's groups are their roots.
		umount -R "$root/sys/fs/cgroup"
		mount -t tmpfs -o mode=0755,nosuid,nodev,noexec cgroup "$root/sys/fs/cgroup"
		while read -r h o; do
			mkdir -p "$root$h"
			if [ "$o" = - ]; then
				mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$root$h"
			else
				mount -t cgroup -o "nosuid,nodev,noexec,$o" cgroup "$root$h"
			fi
		done <"$3"
	fi
	cd "$root"
	mkdir -p .host
	pivot_root . .host
	if [ "$init" = systemd ]; then
		# shellcheck disable=SC2016 # expanded by the inner shell
		exec chroot . /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 container=moby-ab-node \
			/bin/sh -c 'umount -l /.host && rmdir /.host && exec /lib/systemd/systemd --system'
	fi
	# shellcheck disable=SC2016 # expanded by the inner shell
	exec chroot . /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
		/bin/sh -c 'umount -l /.host && rmdir /.host && exec /usr/bin/tini -s -g -- /usr/sbin/sshd -D -e'
}

wait_ssh() { # dir i
	local dir=$1 i=$2 t
	for ((t = 0; t < START_TIMEOUT * 5; t++)); do
		ssh -F "$dir/ssh_config" "ab-node$i" true 2>/dev/null && return 0
		kill -0 "$(cat "$dir/node$i/pid")" 2>/dev/null || break
		sleep 0.2
	done
	tail -n 20 "$dir/node$i/init.log" >&2
	die "nodes: ab-node$i did not answer on ssh within ${START_TIMEOUT}s"
}

cmd_down() {
	local dir=${1:?usage: hack/nodes/nodes.sh down DIR} d i pid t id f c
	[ -d "$dir" ] || return 0
	dir=$(cd "$dir" && pwd)
	for d in "$dir"/node[0-9]; do
		[ -d "$d" ] || continue
		i=${d##*node}
		if [ -f "$d/pid" ]; then
			pid=$(cat "$d/pid")
			# only the unshare this script started (its command line names node-init)
			if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "node-init $d/root "; then
				kill -KILL "$pid" 2>/dev/null || true
				for ((t = 0; t < 100; t++)); do
					[ -d "/proc/$pid" ] || break
					sleep 0.1
				done
			fi
		fi
		# Containers of the node's daemons: their cgroups, by the IDs in its data-roots.
		for c in "$d"/root/var/lib/*/containers/* "$d"/root/var/lib/moby-ab/*/data/containers/*; do
			[ -d "$c" ] || continue
			id=${c##*/}
			for f in /sys/fs/cgroup/docker/"$id" /sys/fs/cgroup/*/docker/"$id" /sys/fs/cgroup/*/moby-ab-*/"$id"; do
				[ -d "$f" ] || continue
				xargs -r kill -KILL <"$f/cgroup.procs" 2>/dev/null || true
				rmdir "$f" 2>/dev/null || true
			done
		done
		# A systemd node's groups (its cgroup namespace's roots), deepest
		# first: what systemd and the node's dockerd made in them.
		if [ -f "$d/cgroups" ]; then
			while read -r f c; do
				[ -d "$f/moby-ab-node$i" ] || continue
				for ((t = 0; t < 50; t++)); do
					find "$f/moby-ab-node$i" -depth -type d -exec rmdir {} + 2>/dev/null || true
					[ -d "$f/moby-ab-node$i" ] || break
					find "$f/moby-ab-node$i" -name cgroup.procs -print0 2>/dev/null | xargs -0r cat 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
					sleep 0.1
				done
				[ ! -d "$f/moby-ab-node$i" ] || warn "nodes: $f/moby-ab-node$i could not be removed"
			done <"$d/cgroups"
		fi
		if [ -f "$d/cgroups-before" ]; then
			for f in /sys/fs/cgroup/*/docker; do
				[ -d "$f" ] || continue
				grep -qxF "$f" "$d/cgroups-before" || rmdir "$f" 2>/dev/null || true
			done
		fi
		if [ -e "$d/netns" ]; then
			ip link del "ab-node$i" 2>/dev/null || true
			ip netns del "$(node_ns "$i")" 2>/dev/null || true
		fi
		if mountpoint -q "$d/root"; then
			umount "$d/root" 2>/dev/null || umount -l "$d/root"
		fi
	done
	rm -rf --one-file-system "$dir"
}

cmd_ssh() {
	local dir=${1:?usage: hack/nodes/nodes.sh ssh DIR I [CMD...]} i=${2:?usage: hack/nodes/nodes.sh ssh DIR I [CMD...]}
	shift 2
	exec ssh -F "$dir/ssh_config" "ab-node$i" "$@"
}

[ "$(id -u)" = 0 ] || die "hack/nodes/nodes.sh needs root"
cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
image) cmd_image ;;
up) cmd_up "$@" ;;
down) cmd_down "$@" ;;
ssh) cmd_ssh "$@" ;;
node-init) cmd_node_init "$@" ;;
node-init-root) cmd_node_init_root "$@" ;;
*) die "usage: hack/nodes/nodes.sh up DIR N | down DIR | ssh DIR I [CMD...] | image" ;;
esac
