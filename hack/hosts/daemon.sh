#!/usr/bin/env bash
# Start and stop one flavor of dockerd as an isolated test host.
#
#   hack/hosts/daemon.sh up <stock|patched> [--config FILE] [--binary stock|patched|commit-<12 hex>]
#                                                             start; prints `export DOCKER_HOST=...`;
#                                                             --binary: run bin/dockerd-<binary> in
#                                                             this host (an A/A run), its own by default
#   hack/hosts/daemon.sh down <stock|patched> [--keep-data]   stop and remove what `up` created
#   hack/hosts/daemon.sh reload <stock|patched> --config FILE  apply a new daemon.json (SIGHUP)
#   hack/hosts/daemon.sh stop <stock|patched>                 stop dockerd and its containerd only:
#                                                             namespace, link, config and data stay
#   hack/hosts/daemon.sh start <stock|patched>                start it again after stop, same config
#   hack/hosts/daemon.sh status [stock|patched]               what is running
#   hack/hosts/daemon.sh env <stock|patched>                  print the export line again
#
# Each flavor gets its own network namespace "ab-<flavor>" (dockerd programs the
# firewall and deletes its own nftables tables at start, so two daemons must not
# share one), its own dockerd-managed containerd, data-root, exec-root, socket,
# pidfile, bridge (ab-<flavor>0), address pools and cgroup parent. Both flavors
# can run at once. The namespace is linked to the registry's (hack/hosts/registry.sh),
# reachable from both as $REGISTRY. FILE is a daemon.json merged over the
# flavor's defaults; keys that define the flavor's identity are refused.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

START_TIMEOUT=${AB_DAEMON_START_TIMEOUT:-60}
IDENTITY_KEYS='["data-root","exec-root","pidfile","hosts","bridge","bip","cgroup-parent","containerd"]'

paths() { # sets the per-flavor paths
	F=$1
	# the dockerd hosts of lib.sh's TEST_HOSTS; the others are peers with
	# scripts of their own
	case "$F" in
	stock | patched) ;;
	*) die "unknown flavor '$F' (want stock or patched)" ;;
	esac
	I=$(flavor_index "$F")
	NS=$(flavor_ns "$F")
	RUNDIR=$AB_RUN/$F
	VARDIR=$AB_VAR/$F
	SOCK=$RUNDIR/docker.sock
	PIDFILE=$RUNDIR/dockerd.pid
	EXECROOT=$RUNDIR/exec
	DATAROOT=$VARDIR/data
	CONFIG=$RUNDIR/daemon.json
	LOG=$VARDIR/dockerd.log
	BRIDGE=ab-${F}0
	BRIDGE_CIDR=10.$((200 + I)).0.1/24
	POOL=10.$((210 + I)).0.0/16
	CGROUP_PARENT=/moby-ab-$F
	DOCKERD=$AB_ROOT/bin/dockerd-$F
	# the binary `up --binary` chose, while the host is up
	[ ! -f "$RUNDIR/dockerd" ] || DOCKERD=$(cat "$RUNDIR/dockerd")
}

running_pid() { # prints the pid of this flavor's dockerd if it runs
	pidfile_pid "$PIDFILE" "$DOCKERD"
}

log_tail() {
	if [ -f "$LOG" ]; then
		printf -- '--- last lines of %s ---\n' "$LOG" >&2
		tail -n 25 "$LOG" >&2
	fi
}

write_config() { # user-config-or-empty
	local user=$1 bad
	local defaults
	defaults=$(jq -n \
		--arg dataroot "$DATAROOT" --arg execroot "$EXECROOT" --arg pidfile "$PIDFILE" \
		--arg sock "unix://$SOCK" --arg bridge "$BRIDGE" --arg pool "$POOL" \
		--arg cgp "$CGROUP_PARENT" --arg reg "$REGISTRY" --arg proxy "$AB_ROOT/bin/docker-proxy" \
		'{"data-root":$dataroot,"exec-root":$execroot,"pidfile":$pidfile,"hosts":[$sock],
		  "bridge":$bridge,"default-address-pools":[{"base":$pool,"size":24}],
		  "cgroup-parent":$cgp,"insecure-registries":[$reg,"10.199.0.0/16"],"experimental":true,
		  "userland-proxy-path":$proxy,"shutdown-timeout":3}')
	if [ -n "$user" ]; then
		[ -r "$user" ] || die "daemon config $user: cannot read it"
		jq -e 'type == "object"' "$user" >/dev/null 2>&1 ||
			die "daemon config $user: not a JSON object"
		bad=$(jq -r --argjson id "$IDENTITY_KEYS" '[keys[] | select(. as $k | $id | index($k))] | join(", ")' "$user")
		[ -z "$bad" ] || die "daemon config $user: $bad cannot be set here: hack/hosts/daemon.sh sets it per flavor"
		jq -s '.[0] * .[1]' <(echo "$defaults") "$user" >"$CONFIG.tmp"
	else
		echo "$defaults" >"$CONFIG.tmp"
	fi
	mv "$CONFIG.tmp" "$CONFIG"
}

setup_netns() {
	ensure_flavor_ns "$F"
	if ! ip -n "$NS" link show "$BRIDGE" >/dev/null 2>&1; then
		ip -n "$NS" link add "$BRIDGE" type bridge
		ip -n "$NS" addr add "$BRIDGE_CIDR" dev "$BRIDGE"
		ip -n "$NS" link set "$BRIDGE" up
	fi
}

cmd_up() {
	local user_config=
	paths "$1"
	shift
	if pid=$(running_pid); then
		die "$F is already running (pid $pid); 'hack/hosts/daemon.sh down $F' first"
	fi
	DOCKERD=$AB_ROOT/bin/dockerd-$F
	while [ $# -gt 0 ]; do
		case "$1" in
		--config) user_config=${2:?--config needs a file}; shift 2 ;;
		--binary)
			case "${2:-}" in
			stock | patched) DOCKERD=$AB_ROOT/bin/dockerd-$2 ;;
			commit-[0-9a-f]*)
				[[ $2 =~ ^commit-[0-9a-f]{12}$ ]] || die "up: --binary: want commit-<12 hex digits>, got '$2'"
				DOCKERD=$AB_ROOT/bin/dockerd-$2
				[ -x "$DOCKERD" ] || die "$DOCKERD is missing: hack/stack/build-commit.sh ${2#commit-} builds it"
				;;
			*) die "up: --binary: want stock, patched or commit-<12 hex digits>, got '${2:-}'" ;;
			esac
			shift 2
			;;
		*) die "up: unknown option '$1'" ;;
		esac
	done
	[ -x "$DOCKERD" ] || die "$DOCKERD is missing: run 'make build'"
	mkdir -p "$RUNDIR" "$VARDIR"
	echo "$DOCKERD" >"$RUNDIR/dockerd"
	write_config "$user_config"
	setup_netns
	: >"$LOG"
	start_dockerd
}

start_dockerd() { # the configured daemon, in the flavor's namespace; waits for its API
	log "daemon $F: starting $("$DOCKERD" --version) in netns $NS"
	# nsenter --net only: `ip netns exec` would remount /sys and hide the cgroup
	# mounts from dockerd.
	# TMPDIR under the run dir: containerd unpacks checkpoints into temporary
	# directories it does not always remove (stock restores); down removes it.
	mkdir -p "$RUNDIR/tmp"
	TMPDIR=$RUNDIR/tmp PATH=$(ab_path) setsid nsenter --net="/run/netns/$NS" -- \
		"$DOCKERD" --config-file "$CONFIG" </dev/null >>"$LOG" 2>&1 &
	local child=$! waited=0
	while :; do
		if DOCKER_HOST=unix://$SOCK timeout 5 docker version >/dev/null 2>&1; then
			break
		fi
		if ! kill -0 "$child" 2>/dev/null; then
			wait "$child" || true
			log_tail
			die "daemon $F: dockerd exited during start-up (log: $LOG)"
		fi
		if [ "$waited" -ge $((START_TIMEOUT * 5)) ]; then
			log_tail
			die "daemon $F: no answer on $SOCK after ${START_TIMEOUT}s (log: $LOG)"
		fi
		sleep 0.2
		waited=$((waited + 1))
	done
	log "daemon $F: up (pid $(cat "$PIDFILE"), $(DOCKER_HOST=unix://$SOCK docker version --format '{{.Server.Version}}'))"
	echo "export DOCKER_HOST=unix://$SOCK"
}

# Kill the shims (and their containers) that this flavor's containerd started;
# they are found by the containerd address on their command line.
kill_shims() {
	local addr=$EXECROOT/containerd/containerd.sock pid
	for pid in $(pgrep -x containerd-shim 2>/dev/null; pgrep -f '^[^ ]*containerd-shim-runc-v2 ' 2>/dev/null); do
		if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-address $addr "; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}

remove_cgroups() {
	local d
	for d in /sys/fs/cgroup/*"$CGROUP_PARENT" /sys/fs/cgroup/*/"${CGROUP_PARENT#/}"; do
		[ -d "$d" ] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
}

stop_processes() { # dockerd, its containerd and their shims
	local pid
	if pid=$(running_pid); then
		log "daemon $F: stopping pid $pid"
		stop_pid "$pid" "daemon $F" 30
	fi
	# A dockerd-managed containerd outlives a killed dockerd: stop it by its pidfile.
	if [ -f "$EXECROOT/containerd/containerd.pid" ]; then
		pid=$(cat "$EXECROOT/containerd/containerd.pid")
		if [ -n "$pid" ] && [ "$(basename "$(pid_exe "$pid")")" = containerd ]; then
			kill -TERM "$pid" 2>/dev/null || true
			for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.2; done
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	kill_shims
}

cmd_stop() {
	paths "$1"
	running_pid >/dev/null || die "daemon $F is not running"
	stop_processes
	unmount_under "$EXECROOT"
	log "daemon $F: stopped (namespace, link and data kept)"
}

cmd_start() {
	paths "$1"
	if pid=$(running_pid); then
		die "$F is already running (pid $pid)"
	fi
	[ -f "$CONFIG" ] || die "daemon $F was never started here: 'hack/hosts/daemon.sh up $F' first"
	ns_exists "$NS" || die "daemon $F: no namespace $NS: 'hack/hosts/daemon.sh up $F' first"
	start_dockerd
}

cmd_down() {
	local keep=0 pid
	paths "$1"
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--keep-data) keep=1; shift ;;
		*) die "down: unknown option '$1'" ;;
		esac
	done
	stop_processes
	host_links_down "$F"
	unmount_under "$EXECROOT"
	unmount_under "$DATAROOT"
	host_ns_down "$NS"
	remove_cgroups
	rm -rf "$RUNDIR"
	if [ "$keep" = 0 ]; then
		unmount_under "$VARDIR"
		rm -rf "$VARDIR"
	fi
	log "daemon $F: down"
}

cmd_reload() {
	local user_config="" pid before
	paths "$1"
	shift
	[ "${1:-}" = --config ] && user_config=${2:?--config needs a file}
	pid=$(running_pid) || die "daemon $F is not running"
	cp "$CONFIG" "$CONFIG.prev"
	write_config "$user_config"
	before=$(wc -l <"$LOG")
	kill -HUP "$pid"
	for _ in $(seq 1 50); do
		if tail -n +"$((before + 1))" "$LOG" | grep -q 'Reloaded configuration'; then
			log "daemon $F: configuration reloaded"
			return 0
		fi
		if tail -n +"$((before + 1))" "$LOG" | grep -qi 'error reloading\|error reconfiguring\|unable to configure the Docker daemon'; then
			mv "$CONFIG.prev" "$CONFIG"
			tail -n +"$((before + 1))" "$LOG" >&2
			die "daemon $F: reload refused; the running configuration is unchanged"
		fi
		sleep 0.2
	done
	die "daemon $F: no answer to the reload in 10s (log: $LOG)"
}

cmd_status() {
	local f
	for f in ${1:-stock patched}; do
		paths "$f"
		if pid=$(running_pid); then
			echo "$f: running (pid $pid, netns $NS, DOCKER_HOST=unix://$SOCK)"
		else
			echo "$f: stopped"
		fi
	done
}

[ "$(id -u)" = 0 ] || die "hack/hosts/daemon.sh needs root (network namespaces, mounts, cgroups)"
cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
up | down | reload | env | stop | start)
	[ $# -ge 1 ] || die "usage: hack/hosts/daemon.sh $cmd <stock|patched>"
	case "$cmd" in
	env) paths "$1"; echo "export DOCKER_HOST=unix://$SOCK" ;;
	*) "cmd_$cmd" "$@" ;;
	esac
	;;
status) cmd_status "$@" ;;
*) die "usage: hack/hosts/daemon.sh up|down|reload|stop|start|status|env <stock|patched> [options]" ;;
esac
