#!/usr/bin/env bats
# The Debian packages (hack/nodes/deb.sh) on a clean Debian 12 root: install, the
# units, the daemon started from its unit's command line, upgrade, downgrade
# to stock, moby-ab-switch, remove and purge. The tests run in order on one
# root, each from where the one before left it.
#
# The root is a debootstrap of bookworm that hack/nodes/deb-root.sh caches (the
# first run downloads it: a minute or two), unpacked on a tmpfs of its own.
# The daemon runs in the network namespace ab-deb-test and in a mount
# namespace of its own: it changes nothing of the host's network, firewall or
# mounts.

load helpers
bats_require_minimum_version 1.5.0

NS=ab-deb-test
UNITS=lib/systemd/system
AB_PREFIX=${AB_PREFIX:-/opt/moby-ab}

setup_file() {
	[ "$(id -u)" = 0 ] || {
		echo "bats/deb.bats needs root" >&2
		return 1
	}
	WORK=$(mktemp -d /var/tmp/moby-ab-deb-test.XXXXXX)
	echo "$WORK" >"$BATS_FILE_TMPDIR/work"
	ROOT=$WORK/root
	mkdir "$ROOT"
	mount -t tmpfs -o size=4g,mode=0755 moby-ab-deb-test "$ROOT"
	export WORK ROOT
	# Container cgroups go under /docker (cgroupfs): remove the ones this run makes.
	ls -d /sys/fs/cgroup/*/docker >"$WORK/cgroups-before" 2>/dev/null || true
	if [ -e "/run/netns/$NS" ]; then
		if [ -n "$(ip netns pids "$NS")" ]; then
			echo "network namespace $NS is in use (pids $(ip netns pids "$NS" | xargs)); an earlier run left it?" >&2
			return 1
		fi
		ip netns del "$NS"
	fi
	ip netns add "$NS"
	ip -n "$NS" link set lo up
	touch "$WORK/netns"

	# The packages, the fastest compression (the contents are the same), and
	# the same patched package again with a higher revision for the upgrade.
	DEB_XZ_LEVEL=0 "$AB_ROOT/hack/nodes/deb.sh" --out "$WORK/debs" >"$WORK/debs.list"
	DEB_XZ_LEVEL=0 "$AB_ROOT/hack/nodes/deb.sh" --out "$WORK/debs-next" --revision 2 patched >/dev/null
	"$AB_ROOT/hack/nodes/deb-root.sh" extract "$ROOT"
	mkdir "$ROOT/tmp/debs"
	cp "$WORK"/debs/*.deb "$WORK"/debs-next/*.deb "$ROOT/tmp/debs/"
}

teardown_file() {
	local work
	work=$(cat "$BATS_FILE_TMPDIR/work" 2>/dev/null) || return 0
	[ -d "$work" ] || return 0
	ROOT=$work/root WORK=$work stop_daemon || true
	"$AB_ROOT/hack/nodes/apt-repo.sh" stop "$work/apt" || true
	# Containers of a daemon that died: by the IDs in its data-root, in their cgroups.
	local id f
	for id in $(ls "$work/root/var/lib/moby-ab-docker/containers" 2>/dev/null); do
		for f in /sys/fs/cgroup/docker/"$id"/cgroup.procs /sys/fs/cgroup/*/docker/"$id"/cgroup.procs; do
			[ -f "$f" ] || continue
			xargs -r kill -KILL <"$f" 2>/dev/null || true
		done
	done
	sleep 0.5
	for id in $(ls "$work/root/var/lib/moby-ab-docker/containers" 2>/dev/null); do
		rmdir /sys/fs/cgroup/docker/"$id" /sys/fs/cgroup/*/docker/"$id" 2>/dev/null || true
	done
	# Whatever else runs in the test's network namespace is this test's.
	if [ -e "$work/netns" ]; then
		local p
		for p in $(ip netns pids "$NS" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
		ip netns del "$NS" 2>/dev/null || true
	fi
	if [ -f "$work/cgroups-before" ]; then
		local d
		for d in /sys/fs/cgroup/*/docker; do
			[ -d "$d" ] || continue
			grep -qxF "$d" "$work/cgroups-before" || rmdir "$d" 2>/dev/null || true
		done
	fi
	if mountpoint -q "$work/root"; then
		umount "$work/root" 2>/dev/null || umount -l "$work/root"
	fi
	rm -rf --one-file-system "$work"
}

setup() {
	load_libs
	export DOCKER_HOST=unix://$ROOT/run/moby-ab-docker.sock
}

teardown() {
	# A failed test leaves no daemon for the next one.
	stop_daemon || true
}

in_root() { "$AB_ROOT/hack/nodes/deb-root.sh" run "$ROOT" "$@"; }

# Processes whose root directory is the test's root (chroot).
root_pids() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$ROOT" ] && echo "${p#/proc/}"
	done
	return 0
}

deb() { # patched|stock|runtime|next: the package file
	case $1 in
	patched) ls "$WORK"/debs/moby-ab-dockerd_*+ab.*-1_amd64.deb ;;
	stock) ls "$WORK"/debs/moby-ab-dockerd_"$UPSTREAM_VERSION"-1_amd64.deb ;;
	runtime) ls "$WORK"/debs/moby-ab-runtime_*_amd64.deb ;;
	next) ls "$WORK"/debs-next/moby-ab-dockerd_*+ab.*-2_amd64.deb ;;
	esac
}

patched_version() { "$AB_ROOT/bin/dockerd-patched" --version | sed -n 's/^Docker version \([^,]*\),.*/\1/p'; }

# Values of KEY= in a unit file, in order.
unit_values() { # file key
	awk -v k="$2" 'index($0, k "=") == 1 { print substr($0, length(k) + 2) }' "$1"
}

# start_daemon: run moby-ab-docker.service's ExecStartPre= and ExecStart= as
# systemd would: its Environment=, ${VAR} expanded, the socket of
# moby-ab-docker.socket passed as socket activation; wait for the API.
start_daemon() {
	local unit=$ROOT/$UNITS/moby-ab-docker.service sock line v name vars=() pre cmd i
	local -A uenv=()
	sock=$(unit_values "$ROOT/$UNITS/moby-ab-docker.socket" ListenStream)
	while read -r line; do
		for v in $line; do
			name=${v%%=*}
			uenv[$name]=${v#*=}
			vars+=("$v")
		done
	done < <(unit_values "$unit" Environment)
	expand() {
		local s=$1 n
		for n in "${!uenv[@]}"; do s=${s//\$\{$n\}/${uenv[$n]}}; done
		[[ $s != *'$'* ]] || {
			echo "unexpanded variable in: $s" >&2
			return 1
		}
		echo "$s"
	}
	while read -r line; do
		pre=$(expand "$line")
		# shellcheck disable=SC2086 # a unit's command line splits on blanks
		"$AB_ROOT/hack/nodes/deb-root.sh" unit-exec "$ROOT" "$NS" "" "${vars[@]}" -- $pre </dev/null
	done < <(unit_values "$unit" ExecStartPre)
	cmd=$(expand "$(unit_values "$unit" ExecStart)")
	# shellcheck disable=SC2086
	"$AB_ROOT/hack/nodes/deb-root.sh" unit-exec "$ROOT" "$NS" "$sock" "${vars[@]}" -- $cmd </dev/null >>"$WORK/dockerd.log" 2>&1 3>&- &
	echo $! >"$WORK/dockerd.pid"
	for ((i = 0; i < 300; i++)); do
		timeout 5 docker version >/dev/null 2>&1 && return 0
		kill -0 "$(cat "$WORK/dockerd.pid")" 2>/dev/null || break
		sleep 0.2
	done
	tail -n 20 "$WORK/dockerd.log" >&2
	return 1
}

# stop_daemon: SIGTERM to the PID start_daemon started, as systemd stops it.
stop_daemon() {
	local pid i
	[ -f "$WORK/dockerd.pid" ] || return 0
	pid=$(cat "$WORK/dockerd.pid")
	rm -f "$WORK/dockerd.pid"
	kill -0 "$pid" 2>/dev/null || return 0
	if timeout 5 docker version >/dev/null 2>&1; then
		docker rm -f $(docker ps -aq) >/dev/null 2>&1 || true
	fi
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 150; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.2
	done
	kill -KILL "$pid" 2>/dev/null || true
	return 1
}

# The files in the root that systemd reads for docker.service and units of
# this package, with their contents: equal before and after means unchanged.
systemd_state() {
	(cd "$ROOT" && find etc/systemd lib/systemd/system -name '*docker*' -print0 | sort -z |
		xargs -0 -r stat -c '%n %F %a %N')
	(cd "$ROOT" && find etc/systemd lib/systemd/system -path '*docker*' -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

@test "deb: the same inputs give the same package" {
	DEB_XZ_LEVEL=0 "$AB_ROOT/hack/nodes/deb.sh" --out "$WORK/debs-again" patched
	cmp "$(deb patched)" "$WORK"/debs-again/moby-ab-dockerd_*+ab.*-1_amd64.deb
}

@test "deb: lintian finds no errors" {
	command -v lintian >/dev/null || skip "lintian is missing (hack/stack/install-deps.sh installs it)"
	# Without binaries/spelling: its tags are informational, and on 100 MB of
	# Go binaries it takes half of lintian's time.
	run lintian --fail-on error -X binaries/spelling "$(deb patched)" "$(deb stock)" "$(deb runtime)"
	assert_success
	refute_output --regexp '^E: '
}

@test "deb: packages are versioned from the upstream release and the series hash" {
	run dpkg-deb -f "$(deb patched)" Package Version
	assert_output "Package: moby-ab-dockerd
Version: $(patched_version)-1"
	assert_output --regexp "Version: $UPSTREAM_VERSION\+ab\.[0-9a-f]{10}(\.dirty)?-1"
	run dpkg-deb -f "$(deb stock)" Package Version
	assert_output "Package: moby-ab-dockerd
Version: $UPSTREAM_VERSION-1"
	run dpkg-deb -f "$(deb runtime)" Package Version
	assert_output --regexp $'^Package: moby-ab-runtime\nVersion: [0-9.]+\+runc\.[0-9.]+\+criu\.4\.2\.[0-9]+-1$'
	# stock < patched < patched, revision 2
	dpkg --compare-versions "$UPSTREAM_VERSION-1" lt "$(patched_version)-1"
	dpkg --compare-versions "$(patched_version)-1" lt "$(patched_version)-2"
}

@test "deb: dpkg -i into a clean Debian 12 root, apt-get -f brings the dependencies, nothing starts" {
	run in_root dpkg -i "/tmp/debs/$(basename "$(deb runtime)")" "/tmp/debs/$(basename "$(deb patched)")"
	assert_failure
	assert_output --partial "dependency problems"
	if ! IN_ROOT_TIMEOUT=300 in_root apt-get install -f -y -q --no-install-recommends >"$WORK/apt.log" 2>&1; then
		# package lists older than the mirror: refresh them once
		IN_ROOT_TIMEOUT=300 in_root apt-get update -q >>"$WORK/apt.log" 2>&1
		IN_ROOT_TIMEOUT=300 in_root apt-get install -f -y -q --no-install-recommends >>"$WORK/apt.log" 2>&1 ||
			{ tail -n 20 "$WORK/apt.log"; false; }
	fi
	run in_root dpkg-query -W -f '${Package} ${Version} ${Status}\n' moby-ab-dockerd moby-ab-runtime
	assert_line "moby-ab-dockerd $(patched_version)-1 install ok installed"
	assert_line --regexp '^moby-ab-runtime .* install ok installed$'
	# no systemd runs in a chroot: the maintainer scripts start nothing
	run ip netns pids "$NS"
	assert_output ""
	run root_pids
	assert_output ""
}

@test "deb: files in place: the tested binaries, the runtime, daemon.json, the enabled units" {
	cmp "$AB_ROOT/bin/dockerd-patched" "$ROOT/usr/lib/moby-ab/bin/dockerd"
	cmp "$AB_ROOT/bin/docker-proxy" "$ROOT/usr/lib/moby-ab/bin/docker-proxy"
	local b
	for b in containerd containerd-shim-runc-v2 runc criu; do
		cmp "$AB_PREFIX/bin/$b" "$ROOT/usr/lib/moby-ab/bin/$b"
	done
	run in_root readlink -e /usr/lib/moby-ab/bin/docker-init
	assert_output /usr/bin/tini-static
	run in_root /usr/lib/moby-ab/bin/dockerd --version
	assert_output --partial "Docker version $(patched_version),"
	diff "$AB_ROOT/hack/nodes/deb/daemon.json" "$ROOT/etc/moby-ab/daemon.json"
	run in_root dpkg-query -W -f '${Conffiles}' moby-ab-dockerd
	assert_output --regexp '^ /etc/moby-ab/daemon.json [0-9a-f]{32}$'
	[ -f "$ROOT/$UNITS/moby-ab-docker.service" ]
	[ -f "$ROOT/$UNITS/moby-ab-docker.socket" ]
	[ "$(readlink "$ROOT/etc/systemd/system/multi-user.target.wants/moby-ab-docker.service")" = /lib/systemd/system/moby-ab-docker.service ]
	[ "$(readlink "$ROOT/etc/systemd/system/sockets.target.wants/moby-ab-docker.socket")" = /lib/systemd/system/moby-ab-docker.socket ]
	run in_root getent group docker
	assert_success
	[ -x "$ROOT/usr/sbin/moby-ab-switch" ]
	[ -f "$ROOT/usr/share/man/man8/moby-ab-switch.8.gz" ]
	[ -f "$ROOT/usr/share/doc/moby-ab-dockerd/copyright" ]
	cmp "$AB_ROOT/hack/nodes/deb/monitoring/moby-ab-dashboard.json" "$ROOT/usr/share/moby-ab/monitoring/moby-ab-dashboard.json"
	cmp "$AB_ROOT/hack/nodes/deb/monitoring/moby-ab-alerts.yml" "$ROOT/usr/share/moby-ab/monitoring/moby-ab-alerts.yml"
	# nothing of a system Docker's
	[ ! -e "$ROOT/usr/sbin/dockerd" ]
	[ ! -e "$ROOT/usr/bin/dockerd" ]
	[ ! -e "$ROOT/etc/docker" ]
}

@test "deb: systemd-analyze verify accepts the units" {
	run in_root systemd-analyze verify moby-ab-docker.service moby-ab-docker.socket
	assert_success
	assert_output ""
}

@test "deb: the daemon starts from its unit's command line and answers on its socket" {
	start_daemon
	run docker version --format '{{.Server.Version}}'
	assert_output "$(patched_version)"
	run docker info --format '{{.DockerRootDir}} {{.ExperimentalBuild}}'
	assert_output "/var/lib/moby-ab-docker true"
	run ip -n "$NS" -4 -o addr show dev moby-ab0
	assert_output --partial "inet 10.203.0.1/24"
	# beside a system Docker: no firewall rules, nothing in Docker's paths
	run nsenter --net="/run/netns/$NS" nft list ruleset
	assert_output ""
	[ ! -e "$ROOT/var/lib/docker" ]
	[ ! -e "$ROOT/run/docker.sock" ]
	[ ! -e "$ROOT/run/docker.pid" ]
	[ -S "$ROOT/run/moby-ab-docker/containerd/containerd.sock" ]
}

@test "deb: the packaged runtime runs, checkpoints and restores a container" {
	[ -f "$AB_ROOT/build/images/busybox.tar" ] || skip "build/images/busybox.tar is missing (hack/hosts/images.sh build)"
	start_daemon
	docker load -q -i "$AB_ROOT/build/images/busybox.tar"
	# docker-init, the default bridge moby-ab0, a network from the address pool
	run docker run --rm --init ab/busybox sh -c 'cat /proc/1/cmdline | tr "\0" " "; ip -4 -o addr show eth0'
	assert_success
	assert_output --partial "/sbin/docker-init --"
	assert_output --partial "inet 10.203.0."
	docker network create pool >/dev/null
	run docker run --rm --network pool ab/busybox ip -4 -o addr show eth0
	docker network rm pool >/dev/null
	assert_output --partial "inet 10.213."
	docker run -d --name counter ab/busybox sh -c 'i=0; while :; do i=$((i+1)); echo $i >/tmp/n; sleep 0.1; done'
	sleep 1
	docker checkpoint create counter c1
	docker start --checkpoint c1 counter
	sleep 0.5
	run docker exec counter cat /tmp/n
	assert_success
	[ "$output" -gt 5 ]
	[ -d "$ROOT/var/lib/moby-ab-docker/containers/$(docker inspect -f '{{.Id}}' counter)/checkpoints/c1" ]
}

@test "deb: the daemon stops by its PID and leaves nothing running" {
	start_daemon
	pid=$(cat "$WORK/dockerd.pid")
	[ "$(cat "$ROOT/run/moby-ab-docker.pid")" = "$pid" ]
	stop_daemon
	run ip netns pids "$NS"
	assert_output ""
}

@test "deb: an upgrade under 20 running containers keeps them running, and a checkpoint taken before it restores after" {
	[ -f "$AB_ROOT/build/images/busybox.tar" ] || skip "build/images/busybox.tar is missing (hack/hosts/images.sh build)"
	grep -q '"live-restore": true' "$ROOT/etc/moby-ab/daemon.json"
	start_daemon
	docker load -q -i "$AB_ROOT/build/images/busybox.tar"
	local i pids=() pid
	for i in $(seq 1 20); do
		docker run -d --name "up$i" ab/busybox sleep 100000 >/dev/null
	done
	for i in $(seq 1 20); do
		pids+=("$(docker inspect -f '{{.State.Pid}}' "up$i")")
	done
	docker run -d --name counter ab/busybox sh -c 'i=0; while :; do i=$((i+1)); echo $i >/tmp/n; sleep 0.1; done' >/dev/null
	sleep 1
	docker checkpoint create --leave-running counter before-upgrade
	# The service restarts on upgrade: dockerd ends (SIGTERM, as systemd
	# stops it), the new package goes in, the new dockerd starts.
	pid=$(cat "$WORK/dockerd.pid")
	rm -f "$WORK/dockerd.pid"
	kill -TERM "$pid"
	for i in $(seq 1 150); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	! kill -0 "$pid" 2>/dev/null
	run in_root dpkg -i "/tmp/debs/$(basename "$(deb next)")"
	assert_success
	start_daemon
	run docker version --format '{{.Server.Version}}'
	assert_output "$(patched_version)"
	# every container kept running, the same process, never restarted
	for i in $(seq 1 20); do
		run docker inspect -f '{{.State.Running}} {{.State.Pid}} {{.RestartCount}}' "up$i"
		assert_output "true ${pids[$((i - 1))]} 0"
		kill -0 "${pids[$((i - 1))]}"
	done
	# the checkpoint taken before the upgrade restores under the new daemon
	docker stop -t 1 counter >/dev/null
	run docker start --checkpoint before-upgrade counter
	assert_success
	sleep 0.5
	run docker exec counter cat /tmp/n
	assert_success
	[ "$output" -gt 5 ]
	# back to revision 1 for the tests that follow
	stop_daemon
	run in_root dpkg -i "/tmp/debs/$(basename "$(deb patched)")"
	assert_success
}

@test "deb: an upgrade keeps the administrator's daemon.json and the data" {
	sed -i 's/"experimental": true/"debug": true,\n  "experimental": true/' "$ROOT/etc/moby-ab/daemon.json"
	run in_root dpkg -i "/tmp/debs/$(basename "$(deb next)")"
	assert_success
	run in_root dpkg-query -W -f '${Version}' moby-ab-dockerd
	assert_output "$(patched_version)-2"
	grep -q '"debug": true' "$ROOT/etc/moby-ab/daemon.json"
	start_daemon
	run docker info --format '{{.Debug}}'
	assert_output true
	if [ -f "$AB_ROOT/build/images/busybox.tar" ]; then
		run docker image ls -q ab/busybox
		refute_output ""
	fi
}

@test "deb: a downgrade to stock installs the stock daemon and its daemon.json, and keeps the data" {
	# The administrator's daemon.json names options of the series, which the
	# stock daemon refuses: take the package's (dpkg keeps the other as .dpkg-old).
	run in_root dpkg -i --force-confnew "/tmp/debs/$(basename "$(deb stock)")"
	assert_success
	assert_output --partial "warning: downgrading moby-ab-dockerd from $(patched_version)-2 to $UPSTREAM_VERSION-1"
	run in_root dpkg-query -W -f '${Version}' moby-ab-dockerd
	assert_output "$UPSTREAM_VERSION-1"
	cmp "$AB_ROOT/bin/dockerd-stock" "$ROOT/usr/lib/moby-ab/bin/dockerd"
	diff "$AB_ROOT/hack/nodes/deb/daemon.stock.json" "$ROOT/etc/moby-ab/daemon.json"
	grep -q '"debug": true' "$ROOT/etc/moby-ab/daemon.json.dpkg-old"
	start_daemon
	run docker version --format '{{.Server.Version}}'
	assert_output "$UPSTREAM_VERSION"
	if [ -f "$AB_ROOT/build/images/busybox.tar" ]; then
		run docker image ls -q ab/busybox
		refute_output ""
	fi
}

@test "deb: moby-ab-switch makes docker.service run the package's dockerd, and back exactly" {
	# A system Docker's units, with the command line of Debian's docker.io,
	# and an administrator's drop-in.
	cat >"$ROOT/$UNITS/docker.service" <<-'EOF'
		[Unit]
		Description=Docker Application Container Engine
		After=network-online.target docker.socket containerd.service
		Wants=network-online.target containerd.service
		Requires=docker.socket

		[Service]
		Type=notify
		EnvironmentFile=-/etc/default/docker
		ExecStart=/usr/sbin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock $DOCKER_OPTS
		ExecReload=/bin/sh -c 'kill -s HUP "$MAINPID"'
		Delegate=yes
		KillMode=process

		[Install]
		WantedBy=multi-user.target
	EOF
	printf '[Socket]\nListenStream=/run/docker.sock\nSocketMode=0660\n\n[Install]\nWantedBy=sockets.target\n' >"$ROOT/$UNITS/docker.socket"
	mkdir -p "$ROOT/etc/systemd/system/docker.service.d"
	printf '[Service]\nExecStart=\nExecStart=/usr/sbin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock --log-level=warn $DOCKER_OPTS\n' \
		>"$ROOT/etc/systemd/system/docker.service.d/10-admin.conf"
	before=$(systemd_state)

	run in_root moby-ab-switch system
	assert_success
	run grep '^ExecStart=\|^Environment=' "$ROOT/etc/systemd/system/docker.service.d/moby-ab.conf"
	assert_output 'Environment=PATH=/usr/lib/moby-ab/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ExecStart=
ExecStart=/usr/lib/moby-ab/bin/dockerd -H fd:// --log-level=warn $DOCKER_OPTS'
	run in_root systemd-analyze verify docker.service
	assert_success
	run in_root moby-ab-switch status
	assert_output --partial "system: docker.service runs /usr/lib/moby-ab/bin/dockerd"
	run in_root moby-ab-switch system --keep-containerd
	assert_success
	grep -qxF 'ExecStart=/usr/lib/moby-ab/bin/dockerd -H fd:// --containerd=/run/containerd/containerd.sock --log-level=warn $DOCKER_OPTS' \
		"$ROOT/etc/systemd/system/docker.service.d/moby-ab.conf"

	# The system's dockerd would refuse the series' options: not while they
	# are set. Without a system dockerd here, by the package's list of them.
	mkdir "$ROOT/etc/docker"
	echo '{"checkpoint-max-concurrent": 2}' >"$ROOT/etc/docker/daemon.json"
	run in_root moby-ab-switch stock
	assert_failure
	assert_output --partial "/etc/docker/daemon.json: checkpoint-max-concurrent"
	# With one (the stock build, as the unit's /usr/sbin/dockerd), by its
	# own --validate: the series' options and anything else it refuses.
	install -m 0755 "$AB_ROOT/bin/dockerd-stock" "$ROOT/usr/sbin/dockerd"
	install -m 0755 "$AB_ROOT/bin/docker-proxy" "$ROOT/usr/sbin/docker-proxy"
	echo '{"checkpoints": {"max-concurrent": 2}}' >"$ROOT/etc/docker/daemon.json"
	run in_root moby-ab-switch stock
	assert_failure
	assert_output --partial "/usr/sbin/dockerd --validate: "
	assert_output --partial "the following directives don't match any configuration option: max-concurrent"
	echo '{"max-concurrent-downloads": -1}' >"$ROOT/etc/docker/daemon.json"
	run in_root moby-ab-switch stock
	assert_failure
	assert_output --partial "invalid max concurrent downloads: -1"
	rm "$ROOT/usr/sbin/dockerd" "$ROOT/usr/sbin/docker-proxy"
	rm -r "$ROOT/etc/docker"

	run in_root moby-ab-switch stock
	assert_success
	[ "$(systemd_state)" = "$before" ]
	# without an administrator's drop-in directory, stock removes the one system made
	rm -r "$ROOT/etc/systemd/system/docker.service.d"
	before=$(systemd_state)
	in_root moby-ab-switch system
	[ -d "$ROOT/etc/systemd/system/docker.service.d" ]
	in_root moby-ab-switch stock
	[ "$(systemd_state)" = "$before" ]
}

@test "deb: remove switches docker.service back and keeps data-root and daemon.json" {
	in_root moby-ab-switch system
	run in_root dpkg -r moby-ab-dockerd
	assert_success
	[ ! -e "$ROOT/etc/systemd/system/docker.service.d/moby-ab.conf" ]
	[ ! -e "$ROOT/usr/lib/moby-ab/bin/dockerd" ]
	[ ! -e "$ROOT/$UNITS/moby-ab-docker.service" ]
	[ -d "$ROOT/var/lib/moby-ab-docker/containers" ]
	[ -f "$ROOT/etc/moby-ab/daemon.json" ]
	run in_root dpkg-query -W -f '${Status}' moby-ab-dockerd
	assert_output "deinstall ok config-files"
}

@test "deb: purge deletes data-root, /etc/moby-ab and the units' state; the system's units stay" {
	before=$(systemd_state | grep -v moby-ab)
	run in_root dpkg -P moby-ab-dockerd moby-ab-runtime
	assert_success
	[ ! -e "$ROOT/var/lib/moby-ab-docker" ]
	[ ! -e "$ROOT/etc/moby-ab" ]
	[ ! -e "$ROOT/usr/lib/moby-ab" ]
	run find "$ROOT/etc/systemd" "$ROOT/var/lib/systemd" -name '*moby-ab*'
	assert_output ""
	[ "$(systemd_state | grep -v moby-ab)" = "$before" ]
	run in_root dpkg-query -W moby-ab-dockerd moby-ab-runtime
	assert_failure
}

# The signed apt repository (hack/nodes/apt-repo.sh), published into the root
# at /srv/moby-ab-apt as a server would serve it (the signing key stays out).
publish_repo() {
	"$AB_ROOT/hack/nodes/apt-repo.sh" add "$WORK/apt" "$@" >/dev/null
	rm -rf "$ROOT/srv/moby-ab-apt"
	mkdir -p "$ROOT/srv/moby-ab-apt"
	cp -a "$WORK/apt/dists" "$WORK/apt/pool" "$ROOT/srv/moby-ab-apt/"
}

# apt-get update of the repository's source alone (the root's Debian lists stay).
repo_update() {
	in_root apt-get update -q -o Dir::Etc::sourcelist=sources.list.d/moby-ab.list \
		-o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0
}

@test "deb: from the signed apt repository: apt-get install, upgrade, and roll back to stock" {
	publish_repo "$(deb patched)" "$(deb stock)" "$(deb runtime)"
	install -m 0644 "$("$AB_ROOT/hack/nodes/apt-repo.sh" key "$WORK/apt")" "$ROOT/usr/share/keyrings/moby-ab-archive-keyring.gpg"
	echo 'deb [signed-by=/usr/share/keyrings/moby-ab-archive-keyring.gpg] file:/srv/moby-ab-apt bookworm main stock' \
		>"$ROOT/etc/apt/sources.list.d/moby-ab.list"
	run repo_update
	assert_success
	refute_output --regexp '^(W|E): '
	run in_root apt-get install -y -q --no-install-recommends moby-ab-dockerd
	assert_success
	run in_root dpkg-query -W -f '${Package} ${Version}\n' moby-ab-dockerd moby-ab-runtime
	assert_line "moby-ab-dockerd $(patched_version)-1"
	assert_line --regexp '^moby-ab-runtime [^ ]+-1$'
	cmp "$AB_ROOT/bin/dockerd-patched" "$ROOT/usr/lib/moby-ab/bin/dockerd"

	# the next release replaces the patched one in main: a plain upgrade takes it
	publish_repo "$(deb next)"
	run repo_update
	assert_success
	run in_root apt-get install -y -q --only-upgrade moby-ab-dockerd
	assert_success
	run in_root dpkg-query -W -f '${Version}' moby-ab-dockerd
	assert_output "$(patched_version)-2"

	# rolling back is the stock package, the lower version in component stock
	run in_root apt-get install -y -q --allow-downgrades "moby-ab-dockerd=$UPSTREAM_VERSION-1"
	assert_success
	run in_root dpkg-query -W -f '${Version}' moby-ab-dockerd
	assert_output "$UPSTREAM_VERSION-1"
	cmp "$AB_ROOT/bin/dockerd-stock" "$ROOT/usr/lib/moby-ab/bin/dockerd"
	diff "$AB_ROOT/hack/nodes/deb/daemon.stock.json" "$ROOT/etc/moby-ab/daemon.json"
	start_daemon
	run docker version --format '{{.Server.Version}}'
	assert_output "$UPSTREAM_VERSION"
}

@test "deb: apt takes nothing from the repository once its signed index is changed" {
	# Release changed after signing, as a mirror or a proxy in the way could;
	# the lists apt had of the repository are gone (a node new to it).
	sed -i 's/^Label: moby-ab$/Label: moby-ab-altered/' "$ROOT/srv/moby-ab-apt/dists/bookworm/InRelease"
	rm -f "$ROOT/srv/moby-ab-apt/dists/bookworm/Release" "$ROOT/srv/moby-ab-apt/dists/bookworm/Release.gpg"
	rm -f "$ROOT"/var/lib/apt/lists/*moby-ab-apt*
	run repo_update
	assert_output --partial "BADSIG"
	# apt warns and goes on; what it must not do is offer the packages
	run in_root apt-cache policy moby-ab-dockerd
	refute_output --partial /srv/moby-ab-apt
	run in_root apt-get install -y -q "moby-ab-dockerd=$(patched_version)-2"
	assert_failure
	run in_root dpkg-query -W -f '${Version}' moby-ab-dockerd
	assert_output "$UPSTREAM_VERSION-1"
}
