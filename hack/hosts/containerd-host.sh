#!/usr/bin/env bash
# containerd's own daemon as a test host: a peer of the dockerd hosts, pulling
# through its transfer service, in a network namespace of its own linked to
# the registry like theirs (so hack/hosts/link.sh's emulated links apply to it the
# same way) and driven with ctr.
#
#   hack/hosts/containerd-host.sh up <host> [--transfer JSON]   start; prints the socket's path
#   hack/hosts/containerd-host.sh restart <host> [--transfer JSON]
#                                           stop and start with another transfer config
#                                           (containerd does not reload its config);
#                                           namespace, link and data stay
#   hack/hosts/containerd-host.sh down <host>   stop it (by its PID) and remove what up created
#   hack/hosts/containerd-host.sh ctr <host> ARGS...   ctr against this host's daemon
#   hack/hosts/containerd-host.sh status <host>
#
# <host> is a test host of hack/lib.sh's TEST_HOSTS that no dockerd runs in:
# ctrd. JSON is the transfer service's settings
# ([plugins."io.containerd.transfer.v1.local"]), e.g.
# '{"max_concurrent_downloads": 10, "concurrent_layer_fetch_buffer": 1048576}';
# keys not given keep containerd's defaults (3 downloads, chunked fetch off).
#
# The daemon is $AB_PREFIX/bin/containerd (hack/stack/install-deps.sh: the runtime
# stack's containerd) and ctr is $AB_PREFIX/bin/ctr of the same version. Its
# root is under $AB_VAR/<host>, its state, socket and temporary files under
# $AB_RUN/<host>; CRI and NRI are off (nothing here runs pods, and NRI's
# socket would be the machine's), as are the debug and metrics listeners.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

CONTAINERD=${AB_CONTAINERD:-$AB_PREFIX/bin/containerd}
CTR=${AB_CTR:-$AB_PREFIX/bin/ctr}
START_TIMEOUT=${AB_DAEMON_START_TIMEOUT:-60}
TRANSFER_KEYS='["max_concurrent_downloads","concurrent_layer_fetch_buffer","max_concurrent_unpacks"]'

paths() {
	H=$1
	case "$H" in
	ctrd) ;;
	*) die "containerd-host: '$H' is not a containerd test host (want ctrd)" ;;
	esac
	NS=$(flavor_ns "$H")
	RUNDIR=$AB_RUN/$H
	VARDIR=$AB_VAR/$H
	SOCK=$RUNDIR/containerd.sock
	PIDFILE=$RUNDIR/containerd.pid
	CONFIG=$RUNDIR/config.toml
	LOG=$VARDIR/containerd.log
}

running_pid() {
	pidfile_pid "$PIDFILE" "$(readlink -f "$CONTAINERD")"
}

# write_config JSON: the daemon's config.toml, its transfer service's keys
# from JSON (each a non-negative integer, or refused naming the key).
write_config() {
	local transfer=${1:-"{}"}
	check_settings "containerd-host: --transfer" "$transfer" "$TRANSFER_KEYS" 0
	{
		cat <<-TOML
			version = 4
			root = '$VARDIR/root'
			state = '$RUNDIR/state'
			temp = '$RUNDIR/tmp'
			disabled_plugins = ['io.containerd.grpc.v1.cri', 'io.containerd.cri.v1.images', 'io.containerd.cri.v1.runtime', 'io.containerd.podsandbox.controller.v1.podsandbox', 'io.containerd.nri.v1.nri']

			[plugins.'io.containerd.server.v1.grpc']
			  address = '$SOCK'
			[plugins.'io.containerd.server.v1.ttrpc']
			  address = '$SOCK.ttrpc'
			[plugins.'io.containerd.server.v1.debug']
			  address = ''
			[plugins.'io.containerd.server.v1.metrics']
			  address = ''
			[plugins.'io.containerd.internal.v1.opt']
			  path = '$VARDIR/opt'
			[plugins.'io.containerd.transfer.v1.local']
		TOML
		jq -r 'to_entries[] | "  \(.key) = \(.value)"' <<<"$transfer"
	} >"$CONFIG.tmp"
	mv "$CONFIG.tmp" "$CONFIG"
}

start() {
	mkdir -p "$RUNDIR/tmp" "$VARDIR"
	log "containerd $H: starting $("$CONTAINERD" --version | awk '{print $3}') in netns $NS"
	setsid nsenter --net="/run/netns/$NS" -- "$CONTAINERD" --config "$CONFIG" </dev/null >>"$LOG" 2>&1 &
	local child=$! waited=0
	echo "$child" >"$PIDFILE"
	while ! timeout 5 "$CTR" --address "$SOCK" version >/dev/null 2>&1; do
		if ! kill -0 "$child" 2>/dev/null; then
			tail -n 25 "$LOG" >&2
			die "containerd $H: exited during start-up (log: $LOG)"
		fi
		if [ "$waited" -ge $((START_TIMEOUT * 5)) ]; then
			tail -n 25 "$LOG" >&2
			die "containerd $H: no answer on $SOCK after ${START_TIMEOUT}s (log: $LOG)"
		fi
		sleep 0.2
		waited=$((waited + 1))
	done
	log "containerd $H: up (pid $child)"
	echo "$SOCK"
}

stop() {
	local pid
	pid=$(running_pid) || return 0
	stop_pid "$pid" "containerd $H" 10
	rm -f "$PIDFILE"
}

transfer_arg() { # options...: the value of --transfer, {} when none
	local t="{}"
	while [ $# -gt 0 ]; do
		case "$1" in
		--transfer) t=${2:?--transfer needs a JSON object}; shift 2 ;;
		*) die "containerd-host: unknown option '$1'" ;;
		esac
	done
	echo "$t"
}

cmd_up() {
	local transfer pid
	paths "$1"
	shift
	transfer=$(transfer_arg "$@")
	if pid=$(running_pid); then
		die "containerd $H is already running (pid $pid); 'hack/hosts/containerd-host.sh down $H' first"
	fi
	[ -x "$CONTAINERD" ] || die "$CONTAINERD is missing: run hack/stack/install-deps.sh"
	[ -x "$CTR" ] || die "$CTR is missing: run hack/stack/install-deps.sh"
	mkdir -p "$RUNDIR" "$VARDIR"
	write_config "$transfer"
	ensure_flavor_ns "$H"
	: >"$LOG"
	start
}

cmd_restart() {
	local transfer
	paths "$1"
	shift
	transfer=$(transfer_arg "$@")
	ns_exists "$NS" || die "containerd $H: no namespace $NS: 'hack/hosts/containerd-host.sh up $H' first"
	write_config "$transfer"
	stop
	start
}

cmd_down() {
	paths "$1"
	stop
	host_down "$H" "$NS" "$RUNDIR" "$VARDIR"
	log "containerd $H: down"
}

[ "$(id -u)" = 0 ] || die "hack/hosts/containerd-host.sh needs root (network namespaces, mounts)"
cmd=${1:-}
[ $# -gt 0 ] && shift
[ $# -ge 1 ] || die "usage: hack/hosts/containerd-host.sh up|restart|down|ctr|status <host> [options]"
case "$cmd" in
up | restart | down) "cmd_$cmd" "$@" ;;
ctr)
	paths "$1"
	shift
	exec "$CTR" --address "$SOCK" "$@"
	;;
status)
	paths "$1"
	if pid=$(running_pid); then echo "$H: running (pid $pid, netns $NS, $SOCK)"; else echo "$H: stopped"; fi
	;;
*) die "usage: hack/hosts/containerd-host.sh up|restart|down|ctr|status <host> [options]" ;;
esac
