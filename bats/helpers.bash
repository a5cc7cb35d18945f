# shellcheck shell=bash
# Shared set-up for the bats suites: both flavors and the registry, started
# once per file and always stopped.

AB_ROOT=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
export AB_ROOT
# The docker version of the upstream pin.
UPSTREAM_VERSION=$(sed -n 's/^VERSION=//p' "$AB_ROOT/hack/upstream.pin")

load_libs() {
	local d
	for d in /usr/lib/bats /usr/lib/bats-core /usr/share/bats; do
		if [ -f "$d/bats-support/load.bash" ]; then
			load "$d/bats-support/load.bash"
			load "$d/bats-assert/load.bash"
			return 0
		fi
	done
	echo "bats-support/bats-assert not found (hack/stack/install-deps.sh installs them)" >&2
	return 1
}

# Start the registry and the given flavors; record each DOCKER_HOST in
# $BATS_FILE_TMPDIR/<flavor>.env. Images named in AB_IMAGES are loaded.
ab_up() {
	"$AB_ROOT/hack/hosts/registry.sh" up >/dev/null
	local f
	for f in "$@"; do
		"$AB_ROOT/hack/hosts/daemon.sh" up "$f" >"$BATS_FILE_TMPDIR/$f.env"
		(
			. "$BATS_FILE_TMPDIR/$f.env"
			for img in ${AB_IMAGES:-}; do
				docker load -q -i "$AB_ROOT/build/images/$img.tar" >/dev/null
			done
		)
	done
}

ab_down() {
	local f rc=0
	for f in "$@"; do
		"$AB_ROOT/hack/hosts/daemon.sh" down "$f" || rc=1
	done
	"$AB_ROOT/hack/hosts/registry.sh" down || rc=1
	return $rc
}

# A test's teardown: remove the containers it left in the flavor it used.
remove_test_containers() {
	[ -n "${FLAVOR:-}" ] || return 0
	docker rm -f $(docker ps -aq) >/dev/null 2>&1 || true
}

# use <flavor>: point docker at that flavor's daemon for this test.
use() {
	. "$BATS_FILE_TMPDIR/$1.env"
	FLAVOR=$1
}

# in_ns <flavor> cmd...: run a command in the flavor's network namespace.
in_ns() {
	local f=$1
	shift
	nsenter --net="/run/netns/ab-$f" -- "$@"
}

# wait_for <seconds> cmd...: retry until the command succeeds (a hang guard,
# not a timing assertion).
wait_for() {
	local limit=$1 i
	shift
	for ((i = 0; i < limit * 5; i++)); do
		"$@" && return 0
		sleep 0.2
	done
	"$@"
}

# stop_faultreg: end the hack/hosts/faultreg.py a test started (its pid in
# $BATS_TEST_TMPDIR/faultreg.pid) and wait until it is gone; it writes its
# summary to its log on the way out.
stop_faultreg() {
	local pid
	pid=$(cat "$BATS_TEST_TMPDIR/faultreg.pid")
	kill -TERM "$pid"
	wait_for 10 bash -c "! kill -0 $pid 2>/dev/null"
	rm -f "$BATS_TEST_TMPDIR/faultreg.pid"
}
