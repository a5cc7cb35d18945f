#!/usr/bin/env bash
# Emulate a WAN link between a flavor's test host and the registry.
#
#   hack/hosts/link.sh up <flavor> [--rtt-ms 35] [--rate-bits-per-s 100000000] [--loss-pct 0]
#                                   [--jitter-ms 0] [--queue 1000] [--congestion cubic]
#                                   [--backend auto|tun|netem] [--second]
#   hack/hosts/link.sh down <flavor> [--stats-to FILE] [--second]   FILE: the emulator's counters (JSON)
#   hack/hosts/link.sh congestion <flavor> [--second]   the congestion control each end sends with
#   hack/hosts/link.sh backend          which backend `auto` picks here
#
# --second: the link to the registry's second address ($REGISTRY2, the same
# registry, to a daemon another one), over a veth pair of its own
# (10.199.<10+i>.2 <-> .1), so that a test host reaches two registries over
# two links with properties of their own. Down, $REGISTRY2 is reached over the
# first veth again, unemulated.
#
# The link takes plain numbers: milliseconds, bits per second, percent,
# packets (the harness parses a suite's units once, in hack/ab/units.py).
# For a person, --rtt 35ms, --rate 100mbit, --loss 0.5% and --jitter 500us
# are the same with units, converted by that same parser.
#
# Backends:
#   netem  tc netem (delay, jitter, loss, rate, limit) on both ends of the
#          flavor's veth to the registry; for kernels with sch_netem.
#   tun    hack/hosts/linkemu, a userspace emulator (Mahimahi's design) on a pair of
#          TUN devices; traffic to the registry is routed through it.
# `auto` takes netem where the kernel has it, else tun. RTT is split evenly
# between the two directions; rate, loss, jitter and queue apply to each.
#
# --congestion: the TCP congestion control both ends send with over the link
# (set on the routes between them, `ip route ... congctl`), cubic unless
# said otherwise. A namespace otherwise takes the machine's default, which
# differs between machines (bbr on some, cubic on Debian's kernels) and
# decides what loss costs a stream: on 120 ms with 0.5% loss one cubic
# stream moves about 2 Mbit/s, one bbr stream about 30.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

LINKEMU=$AB_BUILD/linkemu

usage() { die "usage: hack/hosts/link.sh up|down <stock|patched> [options] | backend"; }

netem_available() {
	local ns=ab-netem-probe-$$ ok=1
	ip netns add "$ns"
	ip -n "$ns" link add probe0 type veth peer name probe1
	tc -n "$ns" qdisc add dev probe0 root netem delay 1ms 2>/dev/null || ok=0
	ip netns del "$ns"
	[ "$ok" = 1 ]
}

pick_backend() {
	case "$1" in
	tun | netem) echo "$1" ;;
	auto) if netem_available; then echo netem; else echo tun; fi ;;
	*) die "link: unknown backend '$1' (want auto, tun or netem)" ;;
	esac
}

convert() { # conversion option value: value with units -> a plain number (hack/ab/units.py)
	local out
	out=$(PYTHONPATH="$AB_ROOT/hack" "${PYTHON:-python3}" -m ab.units "$1" "$3" 2>&1) || die "link up: $2: $out"
	echo "$out"
}

number() { # option value: value, if it is a plain number
	[[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "link up: $1: want a plain number, got '$2'"
	echo "$2"
}

# congestion_ok name: the kernel has the congestion control name (loading
# its module if it must), or the reason it does not.
congestion_ok() {
	local avail=/proc/sys/net/ipv4/tcp_available_congestion_control
	[[ $1 =~ ^[a-z0-9_]+$ ]] || die "link up: --congestion: want a name such as cubic, got '$1'"
	grep -qw "$1" "$avail" || modprobe "tcp_$1" 2>/dev/null || true
	grep -qw "$1" "$avail" || die "link up: --congestion: '$1' is not available here (available: $(cat "$avail"))"
}

# route_cc ns route...: the congestion control of the route to an address,
# "default" when the route names none (the namespace's default applies).
route_cc() {
	local ns=$1 addr=$2 out
	out=$(ip -n "$ns" route get "$addr" 2>/dev/null) || return 0
	if [[ $out =~ congctl\ ([a-z0-9_]+) ]]; then echo "${BASH_REMATCH[1]}"; else echo default; fi
}

build_linkemu() {
	local src=$AB_ROOT/hack/hosts/linkemu
	if [ ! -x "$LINKEMU" ] || [ -n "$(find "$src" -newer "$LINKEMU" -name '*.go' -print -quit)" ]; then
		mkdir -p "$AB_BUILD"
		(cd "$src" && CGO_ENABLED=0 go build -o "$LINKEMU" .) || die "link: building linkemu failed"
	fi
}

# second_veth f: the second link's own veth pair (idempotent), and the
# route to $REG_ADDR2 over it.
second_veth() {
	local f=$1 i ns
	i=$(flavor_index "$f")
	ns=$(flavor_ns "$f")
	ip -n "$ns" link show "ab-$f-up2" >/dev/null 2>&1 || veth_to_reg "$f" 2 $((10 + i))
	ip -n "$ns" route replace "$REG_ADDR2/32" via "10.199.$((10 + i)).1"
}

cmd_up() {
	local f=$1 rtt_ms=0 rate="" loss_pct=0 jitter_ms=0 queue=1000 backend=auto second="" cc=cubic
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--second)
			second=2
			shift
			continue
			;;
		--rtt-ms) rtt_ms=$(number "$1" "$2") || exit 1 ;;
		--rate-bits-per-s) rate=$(number "$1" "$2") || exit 1 ;;
		--loss-pct) loss_pct=$(number "$1" "$2") || exit 1 ;;
		--jitter-ms) jitter_ms=$(number "$1" "$2") || exit 1 ;;
		--rtt) rtt_ms=$(convert milliseconds "$1" "$2") || exit 1 ;;
		--rate) rate=$(convert bits_per_second "$1" "$2") || exit 1 ;;
		--loss) loss_pct=$(convert percentage "$1" "$2") || exit 1 ;;
		--jitter) jitter_ms=$(convert milliseconds "$1" "$2") || exit 1 ;;
		--queue) queue=$(number "$1" "$2") || exit 1 ;;
		--congestion) cc=$2 ;;
		--backend) backend=$2 ;;
		*) die "link up: unknown option '$1'" ;;
		esac
		shift 2 || die "link up: $1 needs a value"
	done
	local i ns one_way name=link$second-$f dest=$REG_ADDR host_i
	i=$(flavor_index "$f")
	host_i=$i
	ns=$(flavor_ns "$f")
	ns_exists "$ns" || die "link: no test host for $f (start it with hack/hosts/daemon.sh up $f)"
	cmd_down "$f" ${second:+--second} 2>/dev/null
	link_flavor_to_reg "$f"
	if [ -n "$second" ]; then
		second_veth "$f"
		dest=$REG_ADDR2
		host_i=$((10 + i))
	fi
	one_way=$(awk -v r="$rtt_ms" 'BEGIN { printf "%.3f", r / 2 }')
	congestion_ok "$cc"
	backend=$(pick_backend "$backend")
	mkdir -p "$AB_RUN"
	case "$backend" in
	netem)
		local dev side args
		for side in "$ns ab-$f-up$second" "$REG_NS ab-$f-reg$second"; do
			read -r side dev <<<"$side"
			args=(delay "${one_way}ms")
			[ "$jitter_ms" = 0 ] || args+=("${jitter_ms}ms")
			args+=(loss "${loss_pct}%" limit "$queue")
			[ -z "$rate" ] || args+=(rate "${rate}bit")
			tc -n "$side" qdisc replace dev "$dev" root netem "${args[@]}"
		done
		ip -n "$ns" route replace "$dest/32" via "10.199.$host_i.1" congctl "$cc"
		ip -n "$REG_NS" route replace "10.199.$host_i.2/32" dev "ab-$f-reg$second" congctl "$cc"
		echo netem >"$AB_RUN/$name.backend"
		;;
	tun)
		build_linkemu
		local a=abl$second-$f b=abr$second-$f pidfile=$AB_RUN/$name.pid out=$AB_RUN/$name.out
		setsid "$LINKEMU" -a "/run/netns/$ns:$a" -b "/run/netns/$REG_NS:$b" \
			-delay "${one_way}ms" -jitter "${jitter_ms}ms" -rate "$rate" -loss "${loss_pct}%" -queue "$queue" \
			-stats "$AB_RUN/$name.stats.json" </dev/null >"$out" 2>&1 &
		echo $! >"$pidfile"
		for _ in $(seq 1 50); do
			grep -q ready "$out" 2>/dev/null && break
			kill -0 "$(cat "$pidfile")" 2>/dev/null || { cat "$out" >&2; die "link: linkemu failed to start"; }
			sleep 0.1
		done
		grep -q ready "$out" || die "link: linkemu did not get ready"
		ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.rp_filter=0 "net.ipv4.conf.$a.rp_filter=0"
		ip netns exec "$REG_NS" sysctl -qw net.ipv4.conf.all.rp_filter=0 "net.ipv4.conf.$b.rp_filter=0"
		ip -n "$ns" link set "$a" up
		ip -n "$REG_NS" link set "$b" up
		ip -n "$ns" route replace "$dest/32" dev "$a" src "10.199.$host_i.2" congctl "$cc"
		ip -n "$REG_NS" route replace "10.199.$host_i.2/32" dev "$b" congctl "$cc"
		echo tun >"$AB_RUN/$name.backend"
		;;
	esac
	log "link $f${second:+ (second, to $REGISTRY2)}: $backend, rtt ${rtt_ms} ms, rate ${rate:-unlimited}${rate:+ bit/s}, loss ${loss_pct}%, jitter ${jitter_ms} ms, queue $queue, $cc"
}

# The congestion control each end of f's link sends with, from the routes
# (what a new connection takes), as JSON.
cmd_congestion() {
	local f=$1 second="" i host_i ns dest
	[ "${2:-}" = --second ] && second=2
	i=$(flavor_index "$f")
	host_i=$i dest=$REG_ADDR
	[ -z "$second" ] || host_i=$((10 + i)) dest=$REG_ADDR2
	ns=$(flavor_ns "$f")
	ns_exists "$ns" || die "link: no test host for $f"
	printf '{"registry": "%s", "host": "%s", "default": "%s"}\n' \
		"$(route_cc "$REG_NS" "10.199.$host_i.2")" "$(route_cc "$ns" "$dest")" \
		"$(nsenter --net="/run/netns/$ns" cat /proc/sys/net/ipv4/tcp_congestion_control)"
}

cmd_down() {
	local f=$1 stats_to="" second="" i host_i ns pid name
	shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--stats-to)
			[ $# -ge 2 ] || die "link down: --stats-to needs a file"
			stats_to=$2
			shift 2
			;;
		--second)
			second=2
			shift
			;;
		*) die "link down: unknown option '$1'" ;;
		esac
	done
	name=link$second-$f
	i=$(flavor_index "$f")
	host_i=$i
	[ -z "$second" ] || host_i=$((10 + i))
	ns=$(flavor_ns "$f")
	case "$(cat "$AB_RUN/$name.backend" 2>/dev/null)" in
	netem)
		# What each end's qdisc sent and dropped.
		if [ -n "$stats_to" ]; then
			jq -n --argjson up "$(tc -n "$ns" -s -j qdisc show dev "ab-$f-up$second" 2>/dev/null || echo null)" \
				--argjson reg "$(tc -n "$REG_NS" -s -j qdisc show dev "ab-$f-reg$second" 2>/dev/null || echo null)" \
				'{backend: "netem", host_side: $up, registry_side: $reg}' >"$stats_to" || true
		fi
		tc -n "$ns" qdisc del dev "ab-$f-up$second" root 2>/dev/null || true
		tc -n "$REG_NS" qdisc del dev "ab-$f-reg$second" root 2>/dev/null || true
		# the routes with a congestion control of their own
		ip -n "$REG_NS" route del "10.199.$host_i.2/32" 2>/dev/null || true
		if ns_exists "$ns" && [ -z "$second" ]; then
			ip -n "$ns" route replace "$REG_ADDR/32" via "10.199.$i.1" 2>/dev/null || true
		fi
		;;
	tun)
		pid=$(cat "$AB_RUN/$name.pid" 2>/dev/null || true)
		if [ -n "$pid" ] && [ "$(pid_exe "$pid")" = "$LINKEMU" ]; then
			kill -TERM "$pid"
			for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
		fi
		# What each direction carried, from linkemu's counters.
		if [ -f "$AB_RUN/$name.stats.json" ]; then
			jq -r --arg f "$f$second" 'to_entries[] | "link \($f): \(.key): \(.value.Packets) packets, \(.value.Lost) lost (\(if .value.Packets + .value.Lost > 0 then (1000 * .value.Lost / (.value.Packets + .value.Lost) | round / 10) else 0 end)%), \(.value.QueueDrops) queue drops"' \
				"$AB_RUN/$name.stats.json" >&2
			[ -z "$stats_to" ] || jq '{backend: "tun"} + .' "$AB_RUN/$name.stats.json" >"$stats_to" || true
		fi
		# The TUN devices and their routes went with the process; route the
		# registry through the veth again.
		if ns_exists "$ns" && [ -z "$second" ]; then
			ip -n "$ns" route replace "$REG_ADDR/32" via "10.199.$i.1" 2>/dev/null || true
		fi
		;;
	esac
	# The second link's veth goes with it: its registry address is reached
	# over the first veth again.
	if [ -n "$second" ] && ns_exists "$ns"; then
		ip -n "$ns" link del "ab-$f-up2" 2>/dev/null || true
		ip -n "$ns" route replace "$REG_ADDR2/32" via "10.199.$i.1" 2>/dev/null || true
	fi
	rm -f "$AB_RUN/$name.backend" "$AB_RUN/$name.pid" "$AB_RUN/$name.out" "$AB_RUN/$name.stats.json"
}

[ "$(id -u)" = 0 ] || die "hack/hosts/link.sh needs root (network namespaces)"
case "${1:-}" in
up) [ $# -ge 2 ] || usage; shift; cmd_up "$@" ;;
down) [ $# -ge 2 ] || usage; shift; cmd_down "$@"; log "link $1: down" ;;
congestion) [ $# -ge 2 ] || usage; shift; cmd_congestion "$@" ;;
backend) pick_backend auto ;;
*) usage ;;
esac
