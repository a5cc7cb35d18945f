#!/usr/bin/env bats
# hack/hosts/link.sh: the emulated link between a test host and the registry keeps
# its promises. Uses the backend `auto` picks (tun here: no sch_netem).

load helpers
bats_require_minimum_version 1.5.0

setup_file() {
	export SRV_DIR=$BATS_FILE_TMPDIR/www
	mkdir -p "$SRV_DIR"
	head -c 20000000 /dev/urandom >"$SRV_DIR/blob"
	(
		. "$AB_ROOT/hack/lib.sh"
		ensure_reg_ns
		ensure_flavor_ns stock
	)
	# An HTTP server in the registry's namespace, at the registry's address.
	cd "$SRV_DIR"
	setsid nsenter --net=/run/netns/ab-reg python3 -m http.server 5000 --bind 0.0.0.0 \
		</dev/null >/dev/null 2>&1 &
	echo $! >"$BATS_FILE_TMPDIR/httpd.pid"
	cd - >/dev/null
	for _ in $(seq 1 50); do
		in_ns stock curl -fs -o /dev/null http://10.199.0.1:5000/ && break
		sleep 0.1
	done
}

teardown_file() {
	"$AB_ROOT/hack/hosts/link.sh" down stock --second || true
	"$AB_ROOT/hack/hosts/link.sh" down stock || true
	kill "$(cat "$BATS_FILE_TMPDIR/httpd.pid")" 2>/dev/null || true
	ip netns del ab-stock 2>/dev/null || true
	ip netns del ab-reg 2>/dev/null || true
}

setup() {
	load_libs
}

# median of the connect times (ms) of n requests [to addr]
connect_ms() {
	local i
	for i in $(seq 1 "$1"); do
		in_ns stock curl -fs -o /dev/null -w '%{time_connect}\n' "http://${2:-10.199.0.1}:5000/"
	done | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f\n", v[int((NR + 1) / 2)] * 1000 }'
}

within() { # value lo hi
	awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'
}

@test "link: connect time equals the RTT within 10%" {
	"$AB_ROOT/hack/hosts/link.sh" up stock --rtt 60ms --rate 100mbit
	ms=$(connect_ms 7)
	echo "# connect ${ms} ms for RTT 60 ms" >&3
	within "$ms" 54 66
}

@test "link: a large transfer gets between 80% and 100% of the rate" {
	"$AB_ROOT/hack/hosts/link.sh" up stock --rtt 20ms --rate 50mbit
	bps=$(in_ns stock curl -fs -o /dev/null -w '%{speed_download}' http://10.199.0.1:5000/blob)
	mbit=$(awk -v b="$bps" 'BEGIN { printf "%.1f", b * 8 / 1e6 }')
	echo "# ${mbit} Mbit/s on a 50 Mbit/s link" >&3
	within "$mbit" 40 50
}

@test "link: random loss within tolerance" {
	"$AB_ROOT/hack/hosts/link.sh" up stock --loss 10%
	# 1000 echo requests: about 2000 packets through the link, 10% lost each way.
	run in_ns stock busybox ping -c 1000 -i 0.002 -W 1 -q 10.199.0.1
	rtloss=$(grep -o '[0-9.]*% packet loss' <<<"$output" | cut -d% -f1)
	run --separate-stderr "$AB_ROOT/hack/hosts/link.sh" down stock
	echo "# round-trip loss ${rtloss}% (0.9^2 survive: expected 19%)" >&3
	echo "$stderr" | grep ' lost ' | sed 's/^/# /' >&3
	# Each direction within 3.5 standard deviations (1000 packets: 3.3%) of 10%.
	for d in $(echo "$stderr" | sed -n 's/.* lost (\([0-9.]*\)%).*/\1/p'); do
		within "$d" 6.7 13.3
	done
	[ "$(echo "$stderr" | grep -c ' lost ')" = 2 ]
	within "$rtloss" 10 30
}

@test "link: down restores the direct path" {
	"$AB_ROOT/hack/hosts/link.sh" up stock --rtt 100ms
	"$AB_ROOT/hack/hosts/link.sh" down stock
	ms=$(connect_ms 3)
	within "$ms" 0 10
}

@test "link: a second link to the registry's second address, with a round trip of its own" {
	"$AB_ROOT/hack/hosts/link.sh" up stock --rtt 20ms --rate 100mbit
	"$AB_ROOT/hack/hosts/link.sh" up stock --second --rtt 80ms --rate 50mbit
	one=$(connect_ms 5)
	two=$(connect_ms 5 10.199.0.2)
	echo "# first link ${one} ms for 20 ms, second ${two} ms for 80 ms" >&3
	within "$one" 18 22
	within "$two" 72 88
	"$AB_ROOT/hack/hosts/link.sh" down stock
	"$AB_ROOT/hack/hosts/link.sh" down stock --second
	ms=$(connect_ms 3 10.199.0.2)
	within "$ms" 0 10
	run ip -n ab-stock link show ab-stock-up2
	assert_failure
}

# the congestion control of the registry's sockets sending to the test host,
# sampled while a transfer runs
sender_cc() {
	in_ns stock curl -fs -o /dev/null --limit-rate 2M http://10.199.0.1:5000/blob &
	local pid=$! cc=""
	for _ in $(seq 1 50); do
		cc=$(nsenter --net=/run/netns/ab-reg ss -tinH state established '( sport = :5000 )' |
			grep -owE 'cubic|bbr|reno' | head -1)
		[ -n "$cc" ] && break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	echo "$cc"
}

@test "link: both ends send with the congestion control asked for, cubic by default" {
	# whatever the machine's default: a namespace inherits it
	"$AB_ROOT/hack/hosts/link.sh" up stock --rtt 20ms --rate 100mbit
	run sender_cc
	assert_output cubic
	run "$AB_ROOT/hack/hosts/link.sh" congestion stock
	assert_success
	[ "$(jq -r '.registry + " " + .host' <<<"$output")" = "cubic cubic" ]
	"$AB_ROOT/hack/hosts/link.sh" up stock --rtt 20ms --rate 100mbit --congestion reno
	run sender_cc
	assert_output reno
	"$AB_ROOT/hack/hosts/link.sh" down stock
	run "$AB_ROOT/hack/hosts/link.sh" congestion stock
	[ "$(jq -r .registry <<<"$output")" = default ]
}

@test "link: bad options are refused with a reason" {
	run "$AB_ROOT/hack/hosts/link.sh" up stock --backend carrier-pigeon
	assert_failure
	assert_output --partial "unknown backend 'carrier-pigeon'"
	run "$AB_ROOT/hack/hosts/link.sh" up stock --rate fast --backend tun
	assert_failure
	assert_output --partial "bad rate 'fast'"
	run "$AB_ROOT/hack/hosts/link.sh" up stock --congestion no-such-thing --backend tun
	assert_failure
	assert_output --partial "--congestion: want a name such as cubic, got 'no-such-thing'"
	run "$AB_ROOT/hack/hosts/link.sh" up stock --congestion nosuchcc --backend tun
	assert_failure
	assert_output --partial "'nosuchcc' is not available here (available:"
}
