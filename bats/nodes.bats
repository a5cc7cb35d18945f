#!/usr/bin/env bats
# Test nodes end to end ("Install on test nodes" in docs/test-nodes.md): two
# nodes made by hack/nodes/nodes.sh (Debian 12 roots with sshd, each in network,
# mount, UTS and PID namespaces of its own, reached over ssh at 10.205.<i>.2),
# driven by Ansible as real nodes are: node 1's init is tini (the playbooks run
# the units with unit-run), node 2's is systemd (they go through systemctl).
# The rollout playbook installs the packages from a signed apt repository on
# both and checks them; a build that fails its check is rolled
# back on the first node and never reaches the second; the A/B playbook runs
# a small suite on both and writes one report; a node goes back to stock. The tests run in order, each
# from where the one before left the nodes; every node goes at the end.

load helpers
bats_require_minimum_version 1.5.0

setup_file() {
	[ "$(id -u)" = 0 ] || {
		echo "bats/nodes.bats needs root" >&2
		return 1
	}
	command -v ansible-playbook >/dev/null || {
		echo "ansible-playbook is missing (hack/stack/install-deps.sh installs ansible-core)" >&2
		return 1
	}
	WORK=$(mktemp -d /var/tmp/moby-ab-nodes-test.XXXXXX)
	echo "$WORK" >"$BATS_FILE_TMPDIR/work"
	export WORK
	DEB_XZ_LEVEL=0 "$AB_ROOT/hack/nodes/deb.sh" --out "$WORK/debs" >/dev/null
	# A build that cannot start: the patched package, its dockerd replaced, one revision up.
	dpkg-deb -R "$(ls "$WORK"/debs/moby-ab-dockerd_*+ab.*-1_amd64.deb)" "$WORK/broken"
	# (it passes --validate, as a build whose flaw shows only at run time does)
	printf '#!/bin/sh\ncase " $* " in *" --validate "*) exit 0 ;; esac\necho "this build cannot start" >&2\nexit 1\n' >"$WORK/broken/usr/lib/moby-ab/bin/dockerd"
	sed -i 's/^\(Version: .*\)-1$/\1-3/' "$WORK/broken/DEBIAN/control"
	mkdir "$WORK/broken-deb"
	dpkg-deb -Zgzip -b "$WORK/broken" "$WORK/broken-deb/" >/dev/null
	"$AB_ROOT/hack/nodes/bundle.sh" --out "$WORK/bundle" >/dev/null
	"$AB_ROOT/hack/nodes/nodes.sh" up "$WORK/nodes" 2 --systemd 2
	# The packages as a signed apt repository, served over HTTP to each node
	# at its gateway address (its only route): its index and pool, not the
	# signing key beside them.
	"$AB_ROOT/hack/nodes/apt-repo.sh" add "$WORK/apt" "$WORK"/debs/*.deb >/dev/null
	mkdir "$WORK/www"
	cp -a "$WORK/apt/dists" "$WORK/apt/pool" "$WORK/www/"
	local i
	for i in 1 2; do
		setsid python3 -u -m http.server --bind "10.205.$i.1" --directory "$WORK/www" "$APT_PORT" \
			</dev/null >"$WORK/www-$i.log" 2>&1 &
		echo $! >"$WORK/www-$i.pid"
	done
	for i in 1 2; do
		wait_for 20 curl -sf -o /dev/null "http://10.205.$i.1:$APT_PORT/dists/bookworm/InRelease" || {
			cat "$WORK/www-$i.log" >&2
			return 1
		}
	done
}

teardown_file() {
	local work
	work=$(cat "$BATS_FILE_TMPDIR/work" 2>/dev/null) || return 0
	[ -d "$work" ] || return 0
	local d f
	for f in "$work"/www-*.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
	done
	"$AB_ROOT/hack/nodes/apt-repo.sh" stop "$work/apt"
	for d in nodes left again third; do
		"$AB_ROOT/hack/nodes/nodes.sh" down "$work/$d"
	done
	rm -rf --one-file-system "$work"
}

setup() {
	load_libs
}

# the apt repository's port on each node's gateway address
APT_PORT=8707

patched_version() { "$AB_ROOT/bin/dockerd-patched" --version | sed -n 's/^Docker version \([^,]*\),.*/\1/p'; }

play() { # playbook args...: ansible-playbook against the test nodes
	local book=$1
	shift
	ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 ansible-playbook -i "$WORK/nodes/inventory.ini" \
		"$AB_ROOT/hack/nodes/ansible/$book" "$@"
}

on_node() { "$AB_ROOT/hack/nodes/nodes.sh" ssh "$WORK/nodes" "$@"; }

# check_edited FILTER: the post-install check on node 1 with its daemon.json
# edited by jq's FILTER and not reloaded (bats' run: $status, $output), the
# file put back afterwards
check_edited() {
	on_node 1 "cp /etc/moby-ab/daemon.json /var/tmp/daemon.json.good && jq '$1' /var/tmp/daemon.json.good >/etc/moby-ab/daemon.json"
	run play check.yml -l ab-node1 -e moby_ab_check_image_tar="$AB_ROOT/build/images/busybox.tar"
	on_node 1 'mv /var/tmp/daemon.json.good /etc/moby-ab/daemon.json'
}

# The package version on node I, and the version its daemon answers with.
installed() { on_node "$1" "dpkg-query -W -f '\${Version}' moby-ab-dockerd"; }
serving() { on_node "$1" 'curl -sf --unix-socket /run/moby-ab-docker.sock http://localhost/version' | jq -r .Version; }

@test "nodes: two nodes answer over ssh, each its own machine" {
	run on_node 1 hostname
	assert_output ab-node1
	run on_node 2 'hostname; ip -4 -o addr show dev eth0'
	assert_line ab-node2
	assert_output --partial "inet 10.205.2.2/30"
	# the node's init is its own: nothing of the host's processes is visible
	run on_node 1 'cat /proc/1/comm; ls /proc | grep -c "^[0-9]"'
	assert_line --index 0 tini
	[ "${lines[1]}" -lt 20 ]
	# node 2 boots systemd, which runs sshd, in a cgroup tree of the node's own
	run on_node 2 'cat /proc/1/comm; systemctl is-system-running; systemctl is-active ssh.service; cat /proc/self/cgroup'
	assert_line --index 0 systemd
	assert_line --index 1 running
	assert_line --index 2 active
	# (systemd's own hierarchy: the named one beside cgroup v1, else the unified one)
	assert_line --regexp '^[0-9]+:(name=systemd)?:/system[.]slice/ssh[.]service$'
	run ls -d /sys/fs/cgroup/systemd/moby-ab-node2/system.slice/ssh.service /sys/fs/cgroup/moby-ab-node2/system.slice/ssh.service
	assert_line --regexp '^/sys/fs/cgroup/(systemd/)?moby-ab-node2/system[.]slice/ssh[.]service$'
}

@test "nodes: the rollout installs the patched build from the apt repository on every node and checks it" {
	# each node reaches the repository at its own gateway (10.205.<i>.1)
	run play rollout.yml -e "moby_ab_apt_repo='http://{{ ansible_host | regex_replace(\"[.]2\$\", \".1\") }}:$APT_PORT'" \
		-e moby_ab_apt_keyring="$("$AB_ROOT/hack/nodes/apt-repo.sh" key "$WORK/apt")" \
		-e moby_ab_check_image_tar="$AB_ROOT/build/images/busybox.tar" \
		-e "moby_ab_drain_command='echo drain \$(date +%s.%N) >>/var/tmp/moby-ab-drain.log'" \
		-e "moby_ab_undrain_command='echo undrain \$(date +%s.%N) >>/var/tmp/moby-ab-drain.log'"
	assert_success
	assert_output --partial "The restored process went on from its checkpoint"
	# as the packaged daemon.json sets them, read back from each daemon
	assert_output --partial "the checkpoint options took effect: max-concurrent=2, max-waiting=64, queue-order=smallest-first, write-pace=off"
	assert_output --partial "the pull options took effect: limits default=1-10, resume=1, ranges=1"
	assert_output --partial "the checkpoint I/O options took effect: io-weight=0, zoned-device off"
	assert_output --regexp 'ab-node1 +: ok=[0-9]+ +changed=[0-9]+ +unreachable=0 +failed=0'
	assert_output --regexp 'ab-node2 +: ok=[0-9]+ +changed=[0-9]+ +unreachable=0 +failed=0'
	local deb
	deb=moby-ab-dockerd_$(patched_version)-1_amd64.deb
	# node 2's daemon is systemd's service, restarted by the rollout
	run on_node 2 'systemctl show -p ActiveState,SubState,NRestarts moby-ab-docker.service; systemctl show -p MainPID --value moby-ab-docker.service; cat /run/moby-ab-docker.pid'
	assert_line ActiveState=active
	assert_line SubState=running
	assert_line NRestarts=0
	[ "${lines[3]}" = "${lines[4]}" ]
	[ "${lines[3]}" != 0 ]
	for i in 1 2; do
		[ "$(installed "$i")" = "$(patched_version)-1" ]
		[ "$(serving "$i")" = "$(patched_version)" ]
		# from the repository: each node fetched the package from its
		# server, and keeps the repository's bytes for a rollback
		grep -F "\"GET /pool/main/m/moby-ab-dockerd/${deb//+/%2b} HTTP/1.1\" 200" "$WORK/www-$i.log" | grep "^10[.]205[.]$i[.]2 "
		[ "$(on_node "$i" "sha256sum /var/cache/moby-ab/debs/$deb" | cut -d' ' -f1)" = \
			"$(sha256sum "$WORK"/apt/pool/*/*/*/"$deb" | cut -d' ' -f1)" ]
		run on_node "$i" 'cat /etc/apt/sources.list.d/moby-ab.list'
		assert_output --partial "deb [signed-by=/usr/share/keyrings/moby-ab-archive-keyring.gpg] http://10.205.$i.1:$APT_PORT bookworm main stock"
		# drained, then put back to work, once each
		run on_node "$i" "cut -d' ' -f1 /var/tmp/moby-ab-drain.log | tr '\n' ' '"
		assert_output "drain undrain "
	done
	# the canary first: node 2 was drained after node 1 was back at work
	back1=$(on_node 1 "awk '\$1 == \"undrain\" {print \$2}' /var/tmp/moby-ab-drain.log")
	drain2=$(on_node 2 "awk '\$1 == \"drain\" {print \$2}' /var/tmp/moby-ab-drain.log")
	awk -v a="$back1" -v b="$drain2" 'BEGIN { exit !(a < b) }'
	for i in 1 2; do on_node "$i" 'rm -f /var/tmp/moby-ab-drain.log'; done
}

@test "nodes: the check finds a daemon.json option the daemon does not run with" {
	pid=$(on_node 1 'cat /run/moby-ab-docker.pid')
	# edited, and not reloaded: the daemon still runs max-concurrent 2
	check_edited '.checkpoints["max-concurrent"] = 3'
	assert_failure
	assert_output --partial "the daemon runs checkpoints.max-concurrent=2"
	assert_output --partial "daemon.json sets 3, 64, smallest-first"
	# the write pace too: fixed at 200 MiB/s in the file, unpaced in the daemon
	check_edited '.checkpoints["write-pace"] = "fixed" | .checkpoints["write-bandwidth"] = "200MiB"'
	assert_failure
	assert_output --partial "writes held to 0 bytes/s"
	assert_output --partial "write-pace fixed at 209715200 bytes/s"
	# the pull options too: a registry's own limit and resume off in the
	# file, the daemon still on the packaged ones
	check_edited '.["registry-downloads"].limits["Registry.Test:443"] = {"mode": "fixed", "limit": 4} | .["registry-downloads"].resume = false'
	assert_failure
	assert_output --partial "the daemon runs registry-downloads.limits default=1-10, resume=1, ranges=1"
	assert_output --partial "daemon.json sets default=1-10 registry.test=4-4, 0, 1"
	# and an I/O weight, which only a restart takes
	check_edited '.checkpoints["io-weight"] = 500'
	assert_failure
	assert_output --partial "the daemon writes checkpoint images with io-weight 0 without a zoned device"
	assert_output --partial "daemon.json sets io-weight 500, no zoned-device"
	# the check changed nothing: the same daemon, which passes it again
	[ "$(on_node 1 'cat /run/moby-ab-docker.pid')" = "$pid" ]
	run play check.yml -l ab-node1 -e moby_ab_check_image_tar="$AB_ROOT/build/images/busybox.tar"
	assert_success
	assert_output --partial "the checkpoint options took effect: max-concurrent=2"
}

@test "nodes: a daemon.json the new build refuses stops the rollout before the node changes" {
	pid=$(on_node 1 'cat /run/moby-ab-docker.pid')
	on_node 1 'cp /etc/moby-ab/daemon.json /var/tmp/daemon.json.good && jq ".checkpoints = {\"max-concurent\": 1}" /var/tmp/daemon.json.good >/etc/moby-ab/daemon.json'
	run play rollout.yml -e moby_ab_debs="$WORK/debs" -e moby_ab_check_image_tar="$AB_ROOT/build/images/busybox.tar" \
		-e "moby_ab_drain_command='touch /var/tmp/moby-ab-drained'"
	on_node 1 'mv /var/tmp/daemon.json.good /etc/moby-ab/daemon.json'
	assert_failure
	assert_output --partial 'unknown field \"max-concurent\"'
	assert_output --partial "failed on ab-node1"
	assert_output --partial "the node is still on $(patched_version)-1"
	# nothing on node 1 changed: not drained, the daemon not restarted;
	# node 2 never saw the rollout
	run on_node 1 'test -e /var/tmp/moby-ab-drained'
	assert_failure
	[ "$(on_node 1 'cat /run/moby-ab-docker.pid')" = "$pid" ]
	[ "$(serving 1)" = "$(patched_version)" ]
	[ "$(serving 2)" = "$(patched_version)" ]
	run on_node 2 'test -e /var/tmp/moby-ab-drained'
	assert_failure
}

@test "nodes: a build that fails its check is rolled back and stops the rollout" {
	run play rollout.yml -e moby_ab_dockerd_deb="$(ls "$WORK"/broken-deb/*.deb)" \
		-e moby_ab_runtime_deb="$(ls "$WORK"/debs/moby-ab-runtime_*.deb)" \
		-e moby_ab_check_image_tar="$AB_ROOT/build/images/busybox.tar" -e moby_ab_start_timeout=15
	assert_failure
	assert_output --partial "failed on ab-node1"
	assert_output --partial "the node is back on $(patched_version)-1"
	# node 1 runs and serves what it ran before; node 2 never saw the broken build
	[ "$(installed 1)" = "$(patched_version)-1" ]
	[ "$(serving 1)" = "$(patched_version)" ]
	[ "$(installed 2)" = "$(patched_version)-1" ]
	[ "$(serving 2)" = "$(patched_version)" ]
	run on_node 2 'ls /var/cache/moby-ab/debs'
	refute_output --partial -- "-3_amd64.deb"
}

@test "nodes: the A/B playbook runs a suite on every node and writes one report" {
	cat >"$WORK/nodes-smoke.toml" <<-'EOF2'
		name = "nodes-smoke"
		kind = "overhead"
		description = "Container start, stock against patched, on each test node."
		repetitions = 3
		workloads = ["run"]

		[flavor.stock]
		daemon = {}

		[flavor.patched]
		daemon = {}
	EOF2
	# the test nodes share this machine's kernel: one node at a time
	run play ab.yml -f 1 -e moby_ab_bundle="$(ls "$WORK"/bundle/*.tar.gz)" \
		-e moby_ab_suite="$WORK/nodes-smoke.toml" -e moby_ab_results="$WORK/results"
	assert_success
	local i
	for i in 1 2; do
		[ "$(jq -r .machine.hostname "$WORK/results/ab-node$i/results.json")" = "ab-node$i" ]
		[ "$(jq -r .provenance.series "$WORK/results/ab-node$i/results.json")" = "$("$AB_ROOT/hack/stack/patches.sh" hash)" ]
		[ -f "$WORK/results/ab-node$i/report.md" ]
	done
	run jq -r '.nodes | join(" ")' "$WORK/results/report/nodes.json"
	assert_output "ab-node1 ab-node2"
	run grep '^| nodes-smoke | run: busybox true |' "$WORK/results/report/report.md"
	assert_success
	assert_output --regexp '\| [0-9.]+ \(n=6, 2 nodes\) \|'
}

@test "nodes: the rollout takes a node back to stock, with the stock package's daemon.json" {
	run play rollout.yml --limit ab-node2 -e moby_ab_debs="$WORK/debs" -e moby_ab_build=stock -e moby_ab_conffile=package \
		-e moby_ab_check_image_tar="$AB_ROOT/build/images/busybox.tar"
	assert_success
	[ "$(installed 2)" = "$UPSTREAM_VERSION-1" ]
	[ "$(serving 2)" = "$UPSTREAM_VERSION" ]
	run on_node 2 cat /etc/moby-ab/daemon.json
	refute_output --partial checkpoint-
	refute_output --partial registry-download
	refute_output --partial "\"checkpoints\""
	[ "$(installed 1)" = "$(patched_version)-1" ]
}

@test "nodes: down removes every node, its namespaces, links and mounts" {
	"$AB_ROOT/hack/nodes/nodes.sh" down "$WORK/nodes"
	[ ! -e "$WORK/nodes" ]
	run ip netns list
	refute_output --partial ab-node
	run ip link show
	refute_output --partial ab-node
	run grep moby-ab-node /proc/mounts
	assert_output ""
	# nor the systemd node's cgroups, with what systemd and dockerd made in them
	run find /sys/fs/cgroup -maxdepth 2 -name 'moby-ab-node*'
	assert_output ""
}

@test "nodes: nodes left by a run that ended without down do not stop the next" {
	"$AB_ROOT/hack/nodes/nodes.sh" up "$WORK/left" 1
	# the run ends without down: its node's init and everything in it die
	kill -KILL "$(cat "$WORK/left/node1/pid")"
	local t
	for ((t = 0; t < 100; t++)); do
		[ -n "$(ip netns pids ab-node1)" ] || break
		sleep 0.1
	done
	[ -e /run/netns/ab-node1 ]
	run "$AB_ROOT/hack/nodes/nodes.sh" up "$WORK/again" 1
	assert_success
	assert_output --partial "removing the nodes of a run that ended without down: $WORK/left"
	[ ! -e "$WORK/left" ]
	run "$AB_ROOT/hack/nodes/nodes.sh" ssh "$WORK/again" 1 hostname
	assert_output ab-node1
	# a live node is never taken: a second run refuses
	run "$AB_ROOT/hack/nodes/nodes.sh" up "$WORK/third" 1
	assert_failure
	assert_output --partial "ab-node1 of $WORK/again is running"
	"$AB_ROOT/hack/nodes/nodes.sh" down "$WORK/again"
	run ip netns list
	refute_output --partial ab-node
	run grep moby-ab-node /proc/mounts
	assert_output ""
}
