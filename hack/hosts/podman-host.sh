#!/usr/bin/env bash
# Debian's podman as a test host: a peer of the dockerd hosts, pulling with
# its own client (containers/image) in a network namespace of its own linked
# to the registry like theirs (so hack/hosts/link.sh's emulated links apply to it
# the same way), with a storage, run directory and configuration of its own.
#
#   hack/hosts/podman-host.sh up <host> [--engine JSON]   create it; prints its run directory
#   hack/hosts/podman-host.sh config <host> [--engine JSON]
#                                           write its containers.conf with other
#                                           settings (podman has no daemon: the next
#                                           command runs with them)
#   hack/hosts/podman-host.sh down <host>   remove its containers, storage, configuration
#                                           and namespace
#   hack/hosts/podman-host.sh podman <host> ARGS...   podman in the host, with its configuration
#   hack/hosts/podman-host.sh status <host>
#
# <host> is a test host of hack/lib.sh's TEST_HOSTS that no dockerd runs in:
# podman. JSON is settings of containers.conf's [engine] table, e.g.
# '{"image_parallel_copies": 10}'; keys not given keep podman's defaults.
#
# podman is /usr/bin/podman (hack/stack/install-deps.sh: Debian 12's, 4.3); it runs
# containers with the runtime stack's runc ($AB_PREFIX/bin/runc; CRIU from
# there too), never the machine's defaults: its storage (overlay) is under
# $AB_VAR/<host>, its run root, libpod state, locks (files, not /dev/shm)
# and configuration under $AB_RUN/<host>, given by CONTAINERS_CONF,
# CONTAINERS_STORAGE_CONF and CONTAINERS_REGISTRIES_CONF. Its registries.conf
# allows plain HTTP to the test registry's addresses only and has no search
# registries. Every podman command runs through $AB_RUN/<host>/podman, in
# the host's network namespace and a mount namespace of its own (see
# make_mount_ns). This host withholds CAP_SYS_RESOURCE, so the containers'
# rlimits are lowered below podman's defaults (nofile 1024, nproc 4096).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

PODMAN=${AB_PODMAN:-/usr/bin/podman}
ENGINE_KEYS='["image_parallel_copies"]'
# the registry's addresses a pull may use: itself and hack/hosts/faultreg.py in
# front of it, at the first and the second address
REGISTRIES="$REG_ADDR:$REG_PORT $REG_ADDR:5001 $REG_ADDR2:$REG_PORT $REG_ADDR2:5001"

paths() {
	H=$1
	case "$H" in
	podman) ;;
	*) die "podman-host: '$H' is not a podman test host (want podman)" ;;
	esac
	NS=$(flavor_ns "$H")
	RUNDIR=$AB_RUN/$H
	VARDIR=$AB_VAR/$H
	CONF=$RUNDIR/containers.conf
	STORAGE_CONF=$RUNDIR/storage.conf
	REGISTRIES_CONF=$RUNDIR/registries.conf
	POLICY=$RUNDIR/policy.json
	MNTNS=$RUNDIR/ns/mnt
}

# make_mount_ns: the host's mount namespace, kept at $MNTNS. It starts as a
# copy of the machine's (nothing mounted in one reaches the other); the
# copies of what others mounted below /run, /tmp and /var/lib (other test
# hosts' namespaces, storage and scratch) and of any namespace or overlay
# are dropped at once, so that this namespace holds none of them alive. In
# it /var/lib is read-only but for $VARDIR: podman 4.3 keeps a blob-info
# cache in /var/lib/containers/cache whatever its configuration says; there
# it cannot create one and keeps it in memory (what it knew of earlier pulls
# goes with each command). Every podman command of the host runs in it, so
# the mounts of its containers' root file systems are the host's alone and
# go with it.
make_mount_ns() {
	mkdir -p "$RUNDIR/ns"
	# a namespace is kept by a bind mount of it, on a private mount
	mount --bind "$RUNDIR/ns" "$RUNDIR/ns"
	mount --make-private "$RUNDIR/ns"
	: >"$MNTNS"
	# shellcheck disable=SC2016 # expanded by that shell
	unshare --mount="$MNTNS" --propagation private -- /bin/sh -c '
		awk '\''{ for (i = 7; i <= NF; i++) if ($i == "-") { fs = $(i + 1); break }
		          if (fs == "nsfs" || fs == "overlay" || $5 ~ "^/(run|tmp|var/lib)/.") print $5 }'\'' \
			/proc/self/mountinfo | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
		mount --bind /var/lib /var/lib && mount -o remount,bind,ro /var/lib &&
		mount --bind "$1" "$1" && mount -o remount,bind,rw "$1"' sh "$VARDIR" ||
		die "podman $H: cannot make its mount namespace"
}

# write_wrapper: $RUNDIR/podman, podman in the host: its environment, its
# network and mount namespaces. The harness times pulls through it (a
# shell and nsenter: a few milliseconds).
write_wrapper() {
	cat >"$RUNDIR/podman.tmp" <<-SH
		#!/bin/sh
		# podman in test host $H (hack/hosts/podman-host.sh)
		export CONTAINERS_CONF=$CONF CONTAINERS_STORAGE_CONF=$STORAGE_CONF
		export CONTAINERS_REGISTRIES_CONF=$REGISTRIES_CONF TMPDIR=$VARDIR/tmp PATH=$(ab_path)
		exec nsenter --net=/run/netns/$NS --mount=$MNTNS -- $PODMAN "\$@"
	SH
	chmod 0755 "$RUNDIR/podman.tmp"
	mv "$RUNDIR/podman.tmp" "$RUNDIR/podman"
}

# check_engine JSON: containers.conf's [engine] keys, each an integer >= 1,
# or refused naming the key.
check_engine() {
	check_settings "podman-host: --engine" "$1" "$ENGINE_KEYS" 1
}

# write_engine JSON: containers.conf with [engine] keys from JSON (checked).
write_engine() {
	local engine=${1:-"{}"}
	check_engine "$engine"
	{
		cat <<-TOML
			[containers]
			default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
			log_driver = "k8s-file"

			[network]
			network_config_dir = "$RUNDIR/networks"

			[engine]
			cgroup_manager = "cgroupfs"
			events_logger = "file"
			events_logfile_path = "$RUNDIR/events.log"
			tmp_dir = "$RUNDIR/libpod"
			static_dir = "$VARDIR/libpod"
			volume_path = "$VARDIR/volumes"
			image_copy_tmp_dir = "$VARDIR/tmp"
			lock_type = "file"
			runtime = "runc"
		TOML
		jq -r 'to_entries[] | "\(.key) = \(.value)"' <<<"$engine"
		cat <<-TOML

			[engine.runtimes]
			runc = ["$AB_PREFIX/bin/runc"]
		TOML
	} >"$CONF.tmp"
	mv "$CONF.tmp" "$CONF"
}

write_configs() {
	cat >"$STORAGE_CONF" <<-TOML
		[storage]
		driver = "overlay"
		graphroot = "$VARDIR/storage"
		runroot = "$RUNDIR/storage"
	TOML
	{
		echo 'unqualified-search-registries = []'
		local r
		for r in $REGISTRIES; do
			printf '\n[[registry]]\nlocation = "%s"\ninsecure = true\n' "$r"
		done
	} >"$REGISTRIES_CONF"
	echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$POLICY"
}

engine_arg() { # options...: the value of --engine, {} when none; checked
	local e="{}"
	while [ $# -gt 0 ]; do
		case "$1" in
		--engine) e=${2:?--engine needs a JSON object}; shift 2 ;;
		*) die "podman-host: unknown option '$1'" ;;
		esac
	done
	check_engine "$e"
	echo "$e"
}

cmd_up() {
	local engine
	paths "$1"
	shift
	engine=$(engine_arg "$@")
	[ ! -e "$RUNDIR" ] && [ ! -e "$VARDIR" ] ||
		die "podman $H exists ($RUNDIR or $VARDIR); 'hack/hosts/podman-host.sh down $H' first"
	[ -x "$PODMAN" ] || die "$PODMAN is missing: run hack/stack/install-deps.sh"
	[ -x "$AB_PREFIX/bin/runc" ] || die "$AB_PREFIX/bin/runc is missing: run hack/stack/install-deps.sh"
	mkdir -p "$RUNDIR/networks" "$VARDIR/tmp"
	write_engine "$engine"
	write_configs
	write_wrapper
	ensure_flavor_ns "$H"
	make_mount_ns
	# storage initialised, configuration read: a podman that cannot run
	# here fails now, not at its first pull
	if ! "$RUNDIR/podman" info --format '{{.Store.GraphDriverName}}' >"$RUNDIR/info.out" 2>&1; then
		cat "$RUNDIR/info.out" >&2
		die "podman $H: podman info failed"
	fi
	log "podman $H: $(dpkg-query -W -f='${Version}' podman 2>/dev/null) in netns $NS, storage $VARDIR/storage ($(cat "$RUNDIR/info.out"))"
	echo "$RUNDIR"
}

cmd_config() {
	local engine
	paths "$1"
	shift
	engine=$(engine_arg "$@")
	[ -d "$RUNDIR" ] || die "podman $H: not up: 'hack/hosts/podman-host.sh up $H' first"
	write_engine "$engine"
}

cmd_down() {
	paths "$1"
	if [ -x "$RUNDIR/podman" ] && ns_exists "$NS" &&
		awk -v m="$MNTNS" '$5 == m { f = 1 } END { exit !f }' /proc/self/mountinfo; then
		# its containers: podman ends them; their conmon processes exit
		# after them (waited for, by PID; ended if they do not)
		local ids conmons pid
		ids=$("$RUNDIR/podman" ps --all --quiet 2>/dev/null) || true
		conmons=$([ -z "$ids" ] || "$RUNDIR/podman" inspect --format '{{.State.ConmonPid}}' $ids 2>/dev/null) || true
		[ -z "$ids" ] || "$RUNDIR/podman" rm --all --force --time 0 >/dev/null 2>&1 || true
		[ -z "$("$RUNDIR/podman" ps --all --quiet 2>/dev/null)" ] ||
			warn "podman $H: containers left after podman rm: $("$RUNDIR/podman" ps --all --format '{{.Names}}' | tr '\n' ' ')"
		for pid in $conmons; do
			[ "$pid" -gt 0 ] 2>/dev/null || continue
			for _ in $(seq 1 100); do
				[ "$(pid_exe "$pid")" = /usr/bin/conmon ] || break
				sleep 0.1
			done
			if [ "$(pid_exe "$pid")" = /usr/bin/conmon ]; then
				warn "podman $H: conmon $pid still there 10s after its container; ending it"
				kill -KILL "$pid" 2>/dev/null || true
			fi
		done
	fi
	host_down "$H" "$NS" "$RUNDIR" "$VARDIR"
	log "podman $H: down"
}

[ "$(id -u)" = 0 ] || die "hack/hosts/podman-host.sh needs root (network namespaces, mounts)"
cmd=${1:-}
[ $# -gt 0 ] && shift
[ $# -ge 1 ] || die "usage: hack/hosts/podman-host.sh up|config|down|podman|status <host> [options]"
case "$cmd" in
up | config | down) "cmd_$cmd" "$@" ;;
podman)
	paths "$1"
	shift
	[ -x "$RUNDIR/podman" ] || die "podman $H: not up: 'hack/hosts/podman-host.sh up $H' first"
	exec "$RUNDIR/podman" "$@"
	;;
status)
	paths "$1"
	if [ -d "$RUNDIR" ]; then echo "$H: up (netns $NS, $RUNDIR)"; else echo "$H: down"; fi
	;;
*) die "usage: hack/hosts/podman-host.sh up|config|down|podman|status <host> [options]" ;;
esac
