#!/usr/bin/env bats
# A hostile registry (hack/hosts/faultreg.py's faults in front of the registry)
# against both daemons, on the containerd image store. Every case pulls an
# image of two layers of a few MiB through the faults, on a fresh stock
# daemon and then on a fresh patched one (per-registry limits adaptive, so
# containerd's fetcher resumes and ranges: patches 0054, 0055 and 0061,
# docs/containerd-fetcher.md). Each pull must end, within PULL_TIMEOUT,
# in a verified image (every blob's sha256 is its name) or in a clean
# error (a non-zero exit with a message, and no image listed). Of the
# patched daemon the design's promises are asserted as well: what the pull
# ends in, what the registry sent, the daemon's RSS during the pull at most
# RSS_BOUND_KIB above the idle daemon's, and its goroutines back to the
# idle count (+GOROUTINE_SLACK) once the registry is gone. Stock's results
# are printed, and a stock that loses integrity fails the case; a stock
# pull that times out is reported, not asserted.

load helpers
bats_require_minimum_version 1.5.0

REF=10.199.0.1:5001/ab/hostile:v1
# faults apply to the layers (at least 1 MiB), not to the config blob and the
# small layer
MIN_SIZE=$((1 << 20))
PULL_TIMEOUT=${PULL_TIMEOUT:-120}
# the trickle case's: patched resumes a body that moved under 1 KiB/s for
# 20 s (containerd 0001's LowSpeedTime)
STALL_TIMEOUT=${STALL_TIMEOUT:-50}
# A blob fetched in ranges holds at most 24 MiB (daemon/containerd's
# fetchMaxChunks ranges of fetchChunkSize); the Go collector lets the heap
# grow to about twice what is live before it runs, and the rest of a pull
# takes 6-12 MiB on stock here: twice the 24 MiB and 32 MiB besides (a
# daemon that buffered what the registry sends would pass it within 0.5 s
# of the 3 GiB case).
RSS_BOUND_KIB=${RSS_BOUND_KIB:-$(((2 * 24 + 32) << 10))}
GOROUTINE_SLACK=${GOROUTINE_SLACK:-5}
ADAPTIVE='{"registry-download-concurrency": {"default": {"mode": "adaptive"}}}'
# A per-connection cap under which the patched daemon takes ranges beside a
# layer's stream (past its first 2 s, the path assumed to carry 100 Mbit/s),
# with the registry's limit fixed as in pull.bats' test of ranges: the
# adaptive limit, measuring the capped path, mostly leaves none to take in
# a pull of a few seconds (seen: none in 2 of 3 cases).
CAPPED=4mbit
FIXED='{"registry-download-concurrency": {"10.199.0.1:5001": {"mode": "fixed", "limit": 4}}}'

setup_file() {
	"$AB_ROOT/hack/hosts/registry.sh" up >/dev/null
	# two layers of random bytes of a few MiB (not multiples of anything)
	# and a small one, pushed without a daemon
	(cd "$AB_ROOT/hack" && /usr/bin/python3 -c '
import ab.hosts as h
h.push_random_image("ab/hostile", "v1", [(3 << 20) + 123457, (2 << 20) + 65537, 48 << 10], seed=27)') >/dev/null
	# the layers that take faults: "digest size" lines
	nsenter --net=/run/netns/ab-reg curl -fsS \
		-H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
		http://10.199.0.1:5000/v2/ab/hostile/manifests/v1 |
		jq -r --argjson min "$MIN_SIZE" '.layers[] | select(.size >= $min) | "\(.digest) \(.size)"' >"$BATS_FILE_TMPDIR/large"
}

teardown_file() {
	"$AB_ROOT/hack/hosts/registry.sh" down
}

setup() {
	load_libs
}

teardown() {
	local f pid
	for f in sampler faultreg; do
		[ -f "$BATS_TEST_TMPDIR/$f.pid" ] || continue
		pid=$(cat "$BATS_TEST_TMPDIR/$f.pid")
		kill "$pid" 2>/dev/null || true
		wait_for 10 bash -c "! kill -0 $pid 2>/dev/null" || kill -KILL "$pid" 2>/dev/null || true
	done
	"$AB_ROOT/hack/hosts/daemon.sh" down patched >/dev/null 2>&1 || true
	"$AB_ROOT/hack/hosts/daemon.sh" down stock >/dev/null 2>&1 || true
}

# up_flavor stock|patched: a fresh daemon with debug on (for its goroutine
# profile), patched with every registry adaptive
up_flavor() {
	local cfg=$BATS_TEST_TMPDIR/$1.json
	if [ "$1" = patched ]; then
		jq -n --argjson a "${PATCHED_CONFIG:-$ADAPTIVE}" '{"debug": true} + $a' >"$cfg"
	else
		jq -n '{"debug": true}' >"$cfg"
	fi
	"$AB_ROOT/hack/hosts/daemon.sh" up "$1" --config "$cfg" >"$BATS_TEST_TMPDIR/env"
	. "$BATS_TEST_TMPDIR/env"
}

# start_faultreg FAULTS [faultreg options...]: the proxy at 10.199.0.1:5001
# (its storage listener, for redirect-expire, at :5002); its log is faults.log
start_faultreg() {
	rm -f "$BATS_TEST_TMPDIR/faults.log"
	setsid nsenter --net=/run/netns/ab-reg python3 "$AB_ROOT/hack/hosts/faultreg.py" \
		--listen 10.199.0.1:5001 --upstream http://10.199.0.1:5000 --min-size "$MIN_SIZE" \
		--faults "$1" "${@:2}" --log "$BATS_TEST_TMPDIR/faults.log" </dev/null >"$BATS_TEST_TMPDIR/faultreg.out" 2>&1 &
	echo $! >"$BATS_TEST_TMPDIR/faultreg.pid"
	# any HTTP answer (token-expire answers 401)
	wait_for 10 bash -c '[ "$(nsenter --net=/run/netns/ab-reg curl -s -o /dev/null -w "%{http_code}" http://10.199.0.1:5001/v2/)" != 000 ]'
}


# goroutines FLAVOR: the daemon's goroutine count, from its debug endpoint
goroutines() {
	curl -s --max-time 5 --unix-socket "/run/moby-ab/$1/docker.sock" 'http://d/debug/pprof/goroutine?debug=1' |
		sed -n 's/^goroutine profile: total //p'
}

# rss PID: VmRSS in KiB
rss() {
	awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"
}

# sample_rss PID FILE: the largest VmRSS (KiB) seen, every 0.2 s, into FILE
sample_rss() {
	local peak=0 v
	while v=$(rss "$1" 2>/dev/null) && [ -n "$v" ]; do
		if [ "$v" -gt "$peak" ]; then
			peak=$v
			echo "$peak" >"$2"
		fi
		sleep 0.2
	done
}

# check_blobs REF: every blob of the image the daemon kept is the one its
# digest names; 1 if one is not
check_blobs() {
	local f
	rm -rf "$BATS_TEST_TMPDIR/img" && mkdir "$BATS_TEST_TMPDIR/img"
	docker save "$1" | tar -x -C "$BATS_TEST_TMPDIR/img" || return 1
	for f in "$BATS_TEST_TMPDIR"/img/blobs/sha256/*; do
		[ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$(basename "$f")" ] || return 1
	done
}

# large_bytes: the body bytes the registry sent of the large layers
large_bytes() {
	awk 'FNR == NR { large["/v2/ab/hostile/blobs/" $1] = 1; next }
		$1 == "SENT" && ($4 in large) { n += $3 } END { printf "%.0f\n", n }' \
		"$BATS_FILE_TMPDIR/large" "$BATS_TEST_TMPDIR/faults.log"
}

large_size() {
	awk '{ n += $2 } END { print n }' "$BATS_FILE_TMPDIR/large"
}

# pull_case FLAVOR FAULTS [faultreg options...]: one pull of $REF through
# faultreg with FAULTS on a fresh FLAVOR daemon. Sets, in r_<flavor>_*:
# res (ok, error, timeout, corrupt: a pull that succeeded with a wrong blob,
# partial: an error with an image listed), secs, sent (bytes of the large
# layers the registry sent), rss (peak KiB above idle), gor_idle, gor (the
# count after, once settled or after 10 s), msg; keeps faults.log as
# faults-<flavor>.log; prints a line.
pull_case() {
	local flavor=$1 faults=$2 pid t0 rc=0 out idle_rss peak idle_g g res msg i limit=$PULL_TIMEOUT
	shift 2
	# STOCK_PULL_TIMEOUT: a shorter wait for stock where only its end is
	# reported
	[ "$flavor" != stock ] || limit=${STOCK_PULL_TIMEOUT:-$PULL_TIMEOUT}
	up_flavor "$flavor"
	pid=$(cat "/run/moby-ab/$flavor/dockerd.pid")
	# idle: the goroutine count once two readings 0.5 s apart agree
	idle_g=$(goroutines "$flavor")
	for ((i = 0; i < 20; i++)); do
		sleep 0.5
		g=$(goroutines "$flavor")
		[ "$g" = "$idle_g" ] && break
		idle_g=$g
	done
	idle_rss=$(rss "$pid")
	start_faultreg "$faults" "$@"
	echo "$idle_rss" >"$BATS_TEST_TMPDIR/peak"
	sample_rss "$pid" "$BATS_TEST_TMPDIR/peak" &
	echo $! >"$BATS_TEST_TMPDIR/sampler.pid"
	t0=$(date +%s%N)
	out=$(timeout "$limit" docker pull -q "$REF" 2>&1) || rc=$?
	t0=$((($(date +%s%N) - t0) / 1000000))
	kill "$(cat "$BATS_TEST_TMPDIR/sampler.pid")"
	wait "$(cat "$BATS_TEST_TMPDIR/sampler.pid")" 2>/dev/null || true
	rm -f "$BATS_TEST_TMPDIR/sampler.pid"
	peak=$(cat "$BATS_TEST_TMPDIR/peak")
	stop_faultreg
	if [ "$rc" = 0 ]; then
		res=ok
		check_blobs "$REF" || res=corrupt
		msg=
	elif [ "$rc" = 124 ]; then
		res=timeout
		msg="no end in ${limit}s"
		[ -z "$(docker image ls -a -q)" ] || res=partial
	else
		res=error
		msg=$(echo "$out" | tail -n1)
		[ -n "$msg" ] || res=error-without-message
		[ -z "$(docker image ls -a -q)" ] || res=partial
	fi
	# once the registry is gone, the goroutines go back to their idle count
	g=$(goroutines "$flavor")
	for ((i = 0; i < 50 && g > idle_g + GOROUTINE_SLACK; i++)); do
		sleep 0.2
		g=$(goroutines "$flavor")
	done
	printf -v "r_${flavor}_res" %s "$res"
	printf -v "r_${flavor}_msg" %s "$msg"
	printf -v "r_${flavor}_secs" %s "$((t0 / 1000)).$(printf %03d $((t0 % 1000)))"
	printf -v "r_${flavor}_sent" %s "$(large_bytes)"
	printf -v "r_${flavor}_rss" %s "$((peak - idle_rss))"
	printf -v "r_${flavor}_gor_idle" %s "$idle_g"
	printf -v "r_${flavor}_gor" %s "$g"
	cp "$BATS_TEST_TMPDIR/faults.log" "$BATS_TEST_TMPDIR/faults-$flavor.log"
	cp "/var/lib/moby-ab/$flavor/dockerd.log" "$BATS_TEST_TMPDIR/dockerd-$flavor.log"
	local sent size
	sent=$(large_bytes)
	size=$(large_size)
	echo "# $flavor: $res in ${t0} ms${msg:+ ($msg)}; the registry sent $sent bytes of the ${size}-byte layers ($((sent * 100 / size))%), $(grep -c '^FAULT' "$BATS_TEST_TMPDIR/faults.log") faults; RSS +$(((peak - idle_rss) / 1024)) MiB (idle $((idle_rss / 1024)) MiB), goroutines $idle_g idle, $g after" >&3
	"$AB_ROOT/hack/hosts/daemon.sh" down "$flavor" >/dev/null
}

# both FAULTS [faultreg options...]: the case on stock, then on patched; then
# what holds for both: no corrupt image, no partial one, a message on an
# error; and for patched: no timeout, RSS and goroutines bounded
both() {
	pull_case stock "$@"
	pull_case patched "$@"
	if [ "$r_stock_res" != ok ] && [ "$r_patched_res" = ok ]; then
		echo "# stock fails ($r_stock_res), patched completes" >&3
	elif [ "$r_stock_res" = ok ] && [ "$r_patched_res" != ok ]; then
		echo "# stock completes, patched fails ($r_patched_res)" >&3
	fi
	local f
	for f in stock patched; do
		local res=r_${f}_res
		case ${!res} in
		corrupt | partial | error-without-message)
			echo "$f: ${!res}" >&2
			return 1
			;;
		esac
	done
	[ "$r_patched_res" != timeout ]
	[ "$r_patched_rss" -le "$RSS_BOUND_KIB" ]
	[ "$r_patched_gor" -le $((r_patched_gor_idle + GOROUTINE_SLACK)) ]
}

# sent_at_most PERCENT: the patched pull made the registry send at most
# PERCENT% of the large layers
sent_at_most() {
	[ "$r_patched_sent" -le $(($(large_size) * $1 / 100)) ]
}

# faults_in FLAVOR KIND: the faults of that kind faultreg applied
faults_in() {
	grep -c "^FAULT $2 " "$BATS_TEST_TMPDIR/faults-$1.log" || true
}

# fell_back FAULT: faultreg applied FAULT to a patched request, and the
# patched pull completed with the registry sending the large layers at most
# twice (a fallback re-fetches a blob once, whole)
fell_back() {
	[ "$(faults_in patched "$1")" -ge 1 ]
	[ "$r_patched_res" = ok ]
	sent_at_most 200
}

# Range is sent by both daemons to go on after a body cut short (stock's
# httpReadSeeker reopens after a clean early EOF; patched resumes), and by
# patched for ranges beside a held-back stream (a capped connection).
# A 200 to it: stock skips into the whole blob; patched falls back to one
# plain request for the blob: a blob's bytes at most twice.
@test "hostile: a 200 with the whole blob to a Range request, after a short body" {
	both short,ignore-range
	fell_back ignore-range
}

@test "hostile: a 200 with the whole blob to a Range request, ranges beside capped streams" {
	PATCHED_CONFIG=$FIXED both ignore-range --conn-rate "$CAPPED"
	fell_back ignore-range
}

# A 206 with other bytes than those asked for: stock takes any 206; patched
# checks the Content-Range and falls back to a plain request.
@test "hostile: a 206 with another range than asked for, after a short body" {
	both short,bad-range
	fell_back bad-range
}

@test "hostile: a 206 with another range than asked for, ranges beside capped streams" {
	PATCHED_CONFIG=$FIXED both bad-range --conn-rate "$CAPPED"
	fell_back bad-range
}

# Bodies cut short with a clean close, three times: both go on with Range.
@test "hostile: bodies shorter than their Content-Length" {
	both short,short,short
	[ "$r_patched_res" = ok ]
	[ "$r_stock_res" = ok ]
	# what was cut short is fetched once more at most
	sent_at_most 110
}

# More bytes than the Content-Length and than the blob: a clean error or
# a verified image; the next pull (the fault used up) completes.
@test "hostile: more bytes than the blob and than the Content-Length" {
	both extra
	[ "$r_patched_res" = ok ] || [ "$r_patched_res" = error ]
	# and then, without the fault, a pull completes
	up_flavor patched
	start_faultreg ""
	run timeout "$PULL_TIMEOUT" docker pull -q "$REF"
	stop_faultreg
	assert_success
	check_blobs "$REF"
}

# Content that differs on every answer from the middle of the blob on: no
# client can make a verified image of it; a clean error, in bounded time.
@test "hostile: content that changes mid-blob on every answer" {
	both change
	[ "$r_patched_res" = error ]
	[ "$r_stock_res" = error ] || [ "$r_stock_res" = timeout ]
}

# One layer's body trickles at 1 byte/s after its first 64 KiB: patched
# finds it too slow (under 1 KiB/s for 20 s), resumes it and completes;
# stock waits on it (given 10 s, not PULL_TIMEOUT: that it is still waiting
# is only reported).
@test "hostile: a body that trickles at 1 byte a second" {
	PULL_TIMEOUT=$STALL_TIMEOUT STOCK_PULL_TIMEOUT=10 both trickle
	[ "$(faults_in patched trickle)" = 1 ]
	[ "$r_patched_res" = ok ]
	sent_at_most 110
}

# A registry that takes a layer's connection and never answers, not even a
# status line, for 90 s: patched's request is a break once its answer has
# not begun within 20 s (containerd 0011's deadline, LowSpeedTime), and the
# pull ends, a verified image or a clean error, long before the registry
# lets go. Stock has no deadline before an answer on its path (moby's
# transports set no header timeout) and would wait the 90 s out; it is given
# 10 s, only to report that it still waits.
@test "hostile: a registry that never answers a layer's request" {
	PULL_TIMEOUT=60 STOCK_PULL_TIMEOUT=10 both hang --stall-seconds 90
	[ "$(faults_in patched hang)" = 1 ]
	# a verified image (a retry got the layer), or an error that says why
	[ "$r_patched_res" = ok ] || [[ $r_patched_res = error && $r_patched_msg = *"no answer from the registry"* ]]
	# the deadline ended the wait, not the registry
	[ "${r_patched_secs%.*}" -lt 60 ]
	[ "$r_stock_res" = timeout ]
}

# Every answer to a Range request is reset mid-body: resumes fail, and so
# do ranges; a clean error or a verified image, in bounded time.
@test "hostile: every Range answer reset mid-body, after a short body" {
	both short,reset-ranges
	[ "$r_patched_res" = ok ] || [ "$r_patched_res" = error ]
}

# Stock never sends Range here and completes; ranges that break are left to
# the blob's own stream (docs/containerd-fetcher.md), and the patched pull
# must not fail where stock's completes.
@test "hostile: every Range answer reset mid-body, ranges beside capped streams" {
	PATCHED_CONFIG=$FIXED both reset-ranges --conn-rate "$CAPPED"
	[ "$(faults_in patched reset-ranges)" -ge 1 ]
	[ "$r_patched_res" = ok ] || [ "$r_stock_res" != ok ]
	[ "$r_patched_res" = ok ] || [ "$r_patched_res" = error ]
}

# A rate limiter's window of 429s (Retry-After: 1) on every Range request,
# 8 s from the first, under a 2 Mbit/s cap per connection (a layer's own
# stream takes 13 s): patched's ranges and resumes wait and go on from
# where the blob is (containerd 0008), and ask for ranges again after the
# window. The daemon's transport (0043) holds a download back for each
# Retry-After, so upstream's five retries ride out a window of up to about
# 5 s; past that, before 0008, the 429 made the blob read again from byte 0
# by a plain request (seen: 100% sent with a 3 s window, over 110% with 8),
# and its host fetched without Range for 10 minutes.
@test "hostile: a window of 429s on Range requests, ranges beside capped streams" {
	PATCHED_CONFIG=$FIXED both busy-ranges --busy-seconds 8 --conn-rate 2mbit
	[ "$(faults_in patched busy-ranges)" -ge 1 ]
	[ "$r_patched_res" = ok ]
	sent_at_most 110
	# 206s to bounded ranges after the window's last 429
	local after
	after=$(awk '/^FAULT busy-ranges /{n = 0; next} /^SENT 206 / && $5 ~ /^bytes=[0-9]+-[0-9]+$/ {n++} END {print n + 0}' "$BATS_TEST_TMPDIR/faults-patched.log")
	echo "# patched: $(faults_in patched busy-ranges) ranges refused, $after bounded ranges served after the window" >&3
	[ "$after" -ge 1 ]
}

# A manifest declaring a layer larger than its blob: a clean error.
@test "hostile: a manifest declaring a layer a little larger than its blob" {
	both big-manifest
	[ "$r_patched_res" = error ]
}

@test "hostile: a manifest declaring a layer of 3 GiB, the blob as stored" {
	both big-manifest@3GiB
	[ "$r_patched_res" = error ]
}

# The registry sends what the manifest declares, as fast as the daemon
# takes it: a digest error at the end, and memory bounded on the way. A
# daemon writes what it reads to its content store, so the layer declared
# and sent is 3 GiB or, on a disk with less room, what the disk under the
# daemons' data takes with 512 MiB to spare (a run that hit the disk's end
# would test ENOSPC, not the digest); under 1 GiB, still twelve times the
# RSS bound, the case fails, saying so.
@test "hostile: a manifest declaring a layer of up to 3 GiB, and all of it sent" {
	local dir=${AB_VAR:-/var/lib/moby-ab} avail size
	while [ ! -d "$dir" ]; do dir=$(dirname "$dir"); done
	avail=$(df -B1 --output=avail "$dir" | tail -n1)
	size=$((avail - (512 << 20)))
	[ "$size" -le $((3 << 30)) ] || size=$((3 << 30))
	echo "# declared and sent: $((size >> 20)) MiB ($((avail >> 20)) MiB free under $dir)" >&3
	if [ "$size" -lt $((1 << 30)) ]; then
		echo "# $dir needs 1.5 GiB free for this case" >&3
		return 1
	fi
	both "big-manifest@$size" --big-pad
	[ "$r_patched_res" = error ]
	# it was sent: the daemon read it to the end
	[ "$r_patched_sent" -ge "$size" ]
}

# Blobs redirected to a storage URL good for 1 MiB: each body stops there
# and the URL is refused from then on. Going on through the registry URL
# gets a new one; patched never replays an expired one.
@test "hostile: a redirect to a storage URL that expires mid-blob" {
	both redirect-expire --expire-bytes 1MiB
	[ "$(faults_in patched redirect-expire)" -ge 2 ]
	[ "$r_patched_res" = ok ]
	run grep -c '^DENY 403' "$BATS_TEST_TMPDIR/faults-patched.log"
	echo "# patched: $output storage URLs replayed after they expired" >&3
	assert_output 0
	sent_at_most 110
}

# Bearer tokens that last 2 s, and say so (expires_in); a layer's body stops
# half way once its token has expired: going on needs a new token.
@test "hostile: a bearer token that expires mid-pull" {
	both token-expire --token-seconds 2
	[ "$(faults_in patched token-expire)" -ge 1 ]
	[ "$r_patched_res" = ok ]
	run grep -c '^TOKEN' "$BATS_TEST_TMPDIR/faults-patched.log"
	echo "# patched: $output tokens; $(grep -c '^DENY 401' "$BATS_TEST_TMPDIR/faults-patched.log") requests with an expired one" >&3
	[ "$output" -ge 2 ]
	sent_at_most 110
}

# The same with tokens that say they last 5 minutes: the client learns of
# the expiry from the 401 (error="invalid_token") and must authenticate
# again there.
@test "hostile: a bearer token revoked mid-pull, before the expiry it announced" {
	both token-expire --token-seconds 2 --token-advertise 300
	[ "$(faults_in patched token-expire)" -ge 1 ]
	[ "$r_patched_res" = ok ]
	run grep -c '^DENY 401' "$BATS_TEST_TMPDIR/faults-patched.log"
	echo "# patched: $output requests with an expired token, $(grep -c '^TOKEN' "$BATS_TEST_TMPDIR/faults-patched.log") tokens" >&3
	[ "$output" -ge 1 ]
	run grep -c '^TOKEN' "$BATS_TEST_TMPDIR/faults-patched.log"
	[ "$output" -ge 2 ]
	sent_at_most 110
}
