#!/usr/bin/env bash
# The local registry (Debian's docker-registry, distribution 2.8) in a network
# namespace of its own ($REG_NS), listening on $REGISTRY. Flavors started with
# hack/hosts/daemon.sh are linked to it and trust it as an insecure registry.
#
#   hack/hosts/registry.sh up        start it (idempotent); prints REGISTRY=host:port
#   hack/hosts/registry.sh down      stop it, remove its namespace and storage
#   hack/hosts/registry.sh status
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

DIR=$AB_VAR/registry
RUNDIR=$AB_RUN/registry
PIDFILE=$RUNDIR/registry.pid
LOG=$DIR/registry.log
BIN=${AB_REGISTRY_BIN:-/usr/bin/docker-registry}

running_pid() {
	local pid
	pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
	[ -n "$pid" ] && [ "$(pid_exe "$pid")" = "$(readlink -f "$BIN")" ] || return 1
	echo "$pid"
}

in_reg_ns() { nsenter --net="/run/netns/$REG_NS" -- "$@"; }

cmd_up() {
	local pid child
	if pid=$(running_pid); then
		echo "REGISTRY=$REGISTRY"
		return 0
	fi
	[ -x "$BIN" ] || die "registry: $BIN is missing (hack/stack/install-deps.sh installs docker-registry)"
	mkdir -p "$DIR/storage" "$RUNDIR"
	ensure_reg_ns
	local f
	for f in $TEST_HOSTS; do link_flavor_to_reg "$f"; done
	cat >"$RUNDIR/config.yml" <<-YML
		version: 0.1
		log:
		  level: info
		  accesslog:
		    disabled: true
		storage:
		  filesystem:
		    rootdirectory: $DIR/storage
		  delete:
		    enabled: true
		  maintenance:
		    uploadpurging:
		      enabled: false
		http:
		  addr: 0.0.0.0:$REG_PORT
		  headers:
		    X-Content-Type-Options: [nosniff]
	YML
	: >"$LOG"
	setsid nsenter --net="/run/netns/$REG_NS" -- "$BIN" serve "$RUNDIR/config.yml" </dev/null >>"$LOG" 2>&1 &
	child=$!
	echo "$child" >"$PIDFILE"
	for _ in $(seq 1 100); do
		if in_reg_ns curl -fsS -o /dev/null "http://$REGISTRY/v2/"; then
			log "registry: up at $REGISTRY (pid $child)"
			echo "REGISTRY=$REGISTRY"
			return 0
		fi
		kill -0 "$child" 2>/dev/null || break
		sleep 0.1
	done
	tail -n 20 "$LOG" >&2
	die "registry: did not start (log: $LOG)"
}

cmd_down() {
	local pid
	if pid=$(running_pid); then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	ns_exists "$REG_NS" && ip netns del "$REG_NS"
	rm -rf "$RUNDIR" "$DIR"
	log "registry: down"
}

cmd_status() {
	if pid=$(running_pid); then echo "registry: running (pid $pid) at $REGISTRY"; else echo "registry: stopped"; fi
}

[ "$(id -u)" = 0 ] || die "hack/hosts/registry.sh needs root (network namespaces)"
case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
status) cmd_status ;;
*) die "usage: hack/hosts/registry.sh up|down|status" ;;
esac
