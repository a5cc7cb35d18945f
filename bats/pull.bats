#!/usr/bin/env bats
# Per-registry download concurrency on the patched daemon: configuration,
# what it learns over an emulated link, and a registry that misbehaves.

load helpers
bats_require_minimum_version 1.5.0

METRICS=127.0.0.1:9323
REF=10.199.0.1:5000/ab/pull-small:v1

setup_file() {
	"$AB_ROOT/hack/hosts/registry.sh" up >/dev/null
	# 10 layers of 256 KiB of random bytes, pushed without a daemon.
	(cd "$AB_ROOT/hack" && /usr/bin/python3 -c '
import ab.hosts as h
h.push_random_image("ab/pull-small", "v1", [256 << 10] * 10, seed=42)') >/dev/null
}

teardown_file() {
	"$AB_ROOT/hack/hosts/registry.sh" down
}

setup() {
	load_libs
}

teardown() {
	if [ -f "$BATS_TEST_TMPDIR/faultreg.pid" ]; then
		kill "$(cat "$BATS_TEST_TMPDIR/faultreg.pid")" 2>/dev/null || true
	fi
	"$AB_ROOT/hack/hosts/daemon.sh" down patched >/dev/null 2>&1 || true
	"$AB_ROOT/hack/hosts/daemon.sh" down stock >/dev/null 2>&1 || true
}

# The feature is opt-in: an adaptive default entry turns it on.
ADAPTIVE='{"registry-download-concurrency": {"default": {"mode": "adaptive"}}}'
GD_ADAPTIVE='{"features": {"containerd-snapshotter": false}, "registry-download-concurrency": {"default": {"mode": "adaptive"}}}'

up_patched() { # [extra config json]
	local cfg=$BATS_TEST_TMPDIR/daemon.json
	jq -n --argjson extra "${1:-{\}}" --arg m "$METRICS" '{"debug": true, "metrics-addr": $m} + $extra' >"$cfg"
	"$AB_ROOT/hack/hosts/daemon.sh" up patched "${@:2}" --config "$cfg" >"$BATS_TEST_TMPDIR/env"
	. "$BATS_TEST_TMPDIR/env"
}

metric() { # name registry: the value of a registry's metric, or nothing
	in_ns patched curl -fs "http://$METRICS/metrics" |
		awk -v n="engine_daemon_$1{registry=\"$2\"}" '$1 == n { print $2 }'
}

state() { # jq filter [registry]: the learned state of a registry (10.199.0.1:5000)
	jq -r --arg r "${2:-10.199.0.1:5000}" ".registries[\$r] | $1" /var/lib/moby-ab/patched/data/registry-download-concurrency.json
}

cold_pull() { # ref
	docker pull -q "$1" >/dev/null
	docker rmi -f "$1" >/dev/null
	docker image prune -af >/dev/null 2>&1 || true
}

@test "pull: invalid per-registry settings are refused at start, naming the key" {
	local bad
	for bad in \
		'{"default": {"mode": "fixed", "limit": -1}}|limit must be between 1 and 64, got -1' \
		'{"r.example.com": {"mode": "adaptive", "min": 5, "max": 2}}|min (5) is greater than max (2)' \
		'{"default": {"mode": "fast"}}|unknown mode "fast"' \
		'{"https://r.example.com/v2": {"mode": "fixed", "limit": 2}}|not a registry host[:port]' \
		'{"default": {"mode": "adaptive", "maximum": 4}}|["default"]: json: unknown field "maximum"'; do
		jq -n --argjson v "${bad%%|*}" '{"registry-download-concurrency": $v}' >"$BATS_TEST_TMPDIR/bad.json"
		run "$AB_ROOT/bin/dockerd-patched" --validate --config-file "$BATS_TEST_TMPDIR/bad.json"
		assert_failure
		assert_output --partial "invalid registry-download-concurrency"
		assert_output --partial "${bad#*|}"
	done
	# and a real start is refused the same way
	jq -n '{"registry-download-concurrency": {"default": {"mode": "fixed", "limit": 0}}}' >"$BATS_TEST_TMPDIR/bad.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" up patched --config "$BATS_TEST_TMPDIR/bad.json"
	assert_failure
	assert_output --partial 'invalid registry-download-concurrency["default"]: limit must be between 1 and 64, got 0'
}

@test "pull: without a per-registry entry the patched daemon limits downloads as stock, also after a reload" {
	up_patched
	run grep -c 'Layer downloads: at most 3 at once (max-concurrent-downloads), all registries together' /var/lib/moby-ab/patched/dockerd.log
	assert_output 1
	cold_pull "$REF"
	[ ! -e /var/lib/moby-ab/patched/data/registry-download-concurrency.json ]
	run metric registry_download_limit 10.199.0.1:5000
	assert_output ""
	jq -n --arg m "$METRICS" '{"debug": true, "metrics-addr": $m}' >"$BATS_TEST_TMPDIR/same.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/same.json"
	assert_success
	run grep -c 'Layer downloads: at most 3 at once (max-concurrent-downloads), all registries together' /var/lib/moby-ab/patched/dockerd.log
	assert_output 2
	run grep -c 'Layer downloads: per registry' /var/lib/moby-ab/patched/dockerd.log
	assert_output 0
}

# first_wave: the layer GETs open at the registry (faults.log) when the
# first of them ended: those the daemon started at once (256 KiB layers
# take seconds over the test link, so they all start before one ends; the
# config blob, a few hundred bytes, does not count).
first_wave() {
	awk '$1 == "SENT" && $3 > 65536 { large[$4] = 1 }
		$1 == "BLOB" { ev[++n] = $0 }
		END { for (i = 1; i <= n; i++) { split(ev[i], f, " "); if (f[2] == "end" && large[f[6]]) { print f[5] + 1; exit } } }' \
		"$BATS_TEST_TMPDIR/faults.log"
}

# blob_starts: when each blob GET started, in ms from the first, for the log
blob_starts() {
	awk '$1 == "BLOB" && $2 == "start" { if (t0 == "") t0 = $3; printf "%d ", ($3 - t0) * 1000 }' "$BATS_TEST_TMPDIR/faults.log"
}

# summary KEY: a value of faultreg's summary line in faults.log
summary() {
	grep -o " $1=[0-9]*" "$BATS_TEST_TMPDIR/faults.log" | cut -d= -f2
}

# pull_measured REF: a cold pull through faultreg over the test link
pull_measured() {
	"$AB_ROOT/hack/hosts/link.sh" up patched --rtt 100ms --rate 10mbit >/dev/null
	rm -f "$BATS_TEST_TMPDIR/faults.log"
	start_faultreg
	cold_pull "$1"
	stop_faultreg
}

# The learned state is measured at the registry: learned with at most 4
# downloads at once over 100 ms and 10 Mbit/s, the limit is 3; after a
# restart within 1-10 the first pull sends as many layer GETs at once as
# the limit it starts at, and without the state file more (10). On the
# graphdriver store, which fetches the config blob beside the layers: the
# containerd store reads the config alone first, and the limit sized on
# that one small blob lets the layers out at up to the maximum before it
# comes back down (10, then 3, over this link), learned state or not.
@test "pull: the patched daemon measures the link, and the first pull after a restart starts at what it learned" {
	local ref=10.199.0.1:5001/ab/pull-small:v1 wave learned fresh
	# learn with at most 4 downloads at once: below what first contact
	# opens over this link (10, the adaptive maximum: control below)
	up_patched '{"features": {"containerd-snapshotter": false}, "registry-download-concurrency": {"default": {"mode": "adaptive", "max": 4}}}'
	pull_measured "$ref"
	echo "# learning: $(first_wave) layer GETs at once; starts (ms): $(blob_starts)" >&3
	[ "$(summary max_concurrent_blobs)" -le 4 ]
	# what it learned is in data-root, readable, with the link's round trip
	run state '.rtt_ms' 10.199.0.1:5001
	echo "# learned rtt ${output} ms over a 100 ms link" >&3
	awk -v v="$output" 'BEGIN { exit !(v >= 95 && v <= 115) }'
	run state '.config' 10.199.0.1:5001
	assert_output "adaptive 1-4"
	learned=$(state '.limit' 10.199.0.1:5001)
	[[ "$learned" =~ ^[0-9]+$ ]]
	[ "$learned" -ge 1 ]
	[ "$learned" -le 4 ]
	# and exported as metrics
	run metric registry_download_limit 10.199.0.1:5001
	assert_output "$learned"
	run metric registry_download_bytes_total 10.199.0.1:5001
	[ "${output%%.*}" -gt 0 ] || [[ "$output" == *e+* ]]

	# restart within 1-10, keeping data-root: the first pull starts at what
	# was learned, seen in the layer GETs the registry gets at once
	"$AB_ROOT/hack/hosts/daemon.sh" down patched --keep-data >/dev/null
	up_patched "$GD_ADAPTIVE"
	pull_measured "$ref"
	wave=$(first_wave)
	learned=$(grep -o 'msg="Registry download concurrency" config="adaptive 1-10" learned=true limit=[0-9]*' \
		/var/lib/moby-ab/patched/dockerd.log | grep -o '[0-9]*$')
	echo "# after the restart: starts at $learned, $wave layer GETs at once; starts (ms): $(blob_starts)" >&3
	[ "$wave" = "$learned" ]

	# control: the same restart without the learned state opens more
	"$AB_ROOT/hack/hosts/daemon.sh" down patched --keep-data >/dev/null
	rm /var/lib/moby-ab/patched/data/registry-download-concurrency.json
	up_patched "$GD_ADAPTIVE"
	pull_measured "$ref"
	fresh=$(first_wave)
	echo "# without it: $fresh layer GETs at once; starts (ms): $(blob_starts)" >&3
	[ "$fresh" -gt "$wave" ]
}

@test "pull: per-registry limits reload; a bad reload is refused and the old limit stays" {
	up_patched "$ADAPTIVE"
	cold_pull "$REF"
	jq -n --arg m "$METRICS" '{"debug": true, "metrics-addr": $m,
		"registry-download-concurrency": {"10.199.0.1:5001": {"mode": "fixed", "limit": 2}}}' >"$BATS_TEST_TMPDIR/good.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/good.json"
	assert_success

	jq '."registry-download-concurrency"["10.199.0.1:5001"] = {"mode": "fixed", "limit": 99}' \
		"$BATS_TEST_TMPDIR/good.json" >"$BATS_TEST_TMPDIR/bad.json"
	run "$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/bad.json"
	assert_failure
	assert_output --partial "reload refused"
	assert_output --partial 'invalid registry-download-concurrency[\"10.199.0.1:5001\"]: limit must be between 1 and 64, got 99'
	# the fixed limit of the good reload holds during a pull, at the
	# registry: never more than 2 blob GETs (and connections carrying them)
	# at once, and 2 at some point (11 blobs wait, each for 100 ms or so)
	start_faultreg "" --conn-rate 20mbit
	cold_pull 10.199.0.1:5001/ab/pull-small:v1
	stop_faultreg
	echo "# $(grep '^SUMMARY' "$BATS_TEST_TMPDIR/faults.log")" >&3
	[ "$(summary max_concurrent_blobs)" = 2 ]
	[ "$(summary max_blob_connections)" = 2 ]
}

# A reload that lowers a registry's limit while a pull runs: the downloads
# under way finish, the others start one at a time under the new limit,
# and the pull completes, within a bound.
@test "pull: a reload lowers a registry's limit mid-pull; the pull finishes under the new limit" {
	local ref=10.199.0.1:5001/ab/pull-small:v1 pid at rc
	up_patched "$(jq -n '{"registry-download-concurrency": {"10.199.0.1:5001": {"mode": "fixed", "limit": 6}}}')"
	# 256 KiB layers at 1 Mbit/s per connection: about 2 s each
	start_faultreg "" --conn-rate 1mbit
	timeout 120 docker pull -q "$ref" >"$BATS_TEST_TMPDIR/pull.out" 2>&1 &
	pid=$!
	wait_for 30 bash -c "[ \$(grep -c '^BLOB start' '$BATS_TEST_TMPDIR/faults.log') -ge 6 ]"
	jq -n --arg m "$METRICS" '{"debug": true, "metrics-addr": $m,
		"registry-download-concurrency": {"10.199.0.1:5001": {"mode": "fixed", "limit": 1}}}' >"$BATS_TEST_TMPDIR/one.json"
	"$AB_ROOT/hack/hosts/daemon.sh" reload patched --config "$BATS_TEST_TMPDIR/one.json" >/dev/null
	at=$(date +%s.%N)
	rc=0
	wait "$pid" || rc=$?
	stop_faultreg
	cat "$BATS_TEST_TMPDIR/pull.out"
	[ "$rc" = 0 ] # 124: not finished in 120 s
	check_blobs "$ref"
	# every blob GET that started after the reload found no other open
	awk -v at="$at" '$1 == "BLOB" && $2 == "start" && $3 > at { n++; if ($5 != 1) bad++ }
		END { printf "# %d blob GETs after the reload, %d beside another\n", n, bad > "/dev/stderr"; exit !(n >= 1 && bad == 0) }' \
		"$BATS_TEST_TMPDIR/faults.log" 2>&3
}

@test "pull: a registry that answers 503 and 429, resets and stalls: the pull retries, the limit backs off, no corrupt blob" {
	up_patched "$ADAPTIVE"
	start_faultreg 503,429,reset,stall,503,reset
	local ref=10.199.0.1:5001/ab/pull-small:v1
	# The containerd store retries 503, 429 and a reset while fetching
	# some blobs but not a layer whose body breaks mid-copy: then the pull
	# fails with the network error, as upstream's does, and the next one
	# completes. Either way nothing partial may be kept.
	run timeout 300 docker pull -q "$ref"
	if [ "$status" -ne 0 ]; then
		echo "# first pull failed: $output" >&3
		assert_output --regexp 'connection reset|unexpected EOF|EOF|broken pipe'
		run timeout 300 docker pull -q "$ref"
	fi
	assert_success
	run grep -c '^FAULT' "$BATS_TEST_TMPDIR/faults.log"
	assert_output 6
	run metric registry_download_backoffs_total 10.199.0.1:5001
	[ "${output:-0}" -ge 1 ]
	# every blob the daemon kept is the blob its digest names
	mkdir "$BATS_TEST_TMPDIR/img"
	docker save "$ref" | tar -x -C "$BATS_TEST_TMPDIR/img"
	local f n=0
	for f in "$BATS_TEST_TMPDIR"/img/blobs/sha256/*; do
		[ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$(basename "$f")" ]
		n=$((n + 1))
	done
	[ "$n" -ge 12 ] # index/manifest, config and 10 layers
}

# start_faultreg [faults [faultreg options...]]: the proxy at 10.199.0.1:5001;
# its log is faults.log
start_faultreg() {
	setsid nsenter --net=/run/netns/ab-reg python3 "$AB_ROOT/hack/hosts/faultreg.py" \
		--listen 10.199.0.1:5001 --upstream http://10.199.0.1:5000 \
		--faults "${1:-}" "${@:2}" --log "$BATS_TEST_TMPDIR/faults.log" </dev/null >/dev/null 2>&1 &
	echo $! >"$BATS_TEST_TMPDIR/faultreg.pid"
	wait_for 10 nsenter --net=/run/netns/ab-reg curl -fs -o /dev/null http://10.199.0.1:5001/v2/
}


@test "pull: a fixed per-registry limit holds at the registry, on both image stores" {
	local store snap
	for store in containerd graphdriver; do
		snap=true
		[ "$store" = graphdriver ] && snap=false
		up_patched "$(jq -n --argjson s "$snap" '{"features": {"containerd-snapshotter": $s},
			"registry-download-concurrency": {"10.199.0.1:5001": {"mode": "fixed", "limit": 2}}}')"
		run docker info --format '{{.Driver}}'
		echo "# $store: storage driver $output" >&3
		start_faultreg
		docker pull -q 10.199.0.1:5001/ab/pull-small:v1 >/dev/null
		run metric registry_download_limit 10.199.0.1:5001
		assert_output 2
		stop_faultreg
		run grep -o 'max_concurrent_blobs=[0-9]*' "$BATS_TEST_TMPDIR/faults.log"
		echo "# $store: $output" >&3
		assert_output "max_concurrent_blobs=2"
		rm -f "$BATS_TEST_TMPDIR/faults.log"
		"$AB_ROOT/hack/hosts/daemon.sh" down patched >/dev/null
	done
}

# up_flavor stock|patched: stock with its defaults, patched with every
# registry adaptive
up_flavor() {
	if [ "$1" = patched ]; then
		up_patched "$ADAPTIVE"
		return
	fi
	jq -n '{"debug": true}' >"$BATS_TEST_TMPDIR/stock.json"
	"$AB_ROOT/hack/hosts/daemon.sh" up stock --config "$BATS_TEST_TMPDIR/stock.json" >"$BATS_TEST_TMPDIR/env"
	. "$BATS_TEST_TMPDIR/env"
}

# check_blobs REF: every blob of the image the daemon kept is the one its digest names
check_blobs() {
	rm -rf "$BATS_TEST_TMPDIR/img" && mkdir "$BATS_TEST_TMPDIR/img"
	docker save "$1" | tar -x -C "$BATS_TEST_TMPDIR/img"
	local f
	for f in "$BATS_TEST_TMPDIR"/img/blobs/sha256/*; do
		[ "$(sha256sum <"$f" | cut -d' ' -f1)" = "$(basename "$f")" ]
	done
}

# layer_size REPO: the size of the first layer of REPO:v1 in the registry
layer_size() {
	nsenter --net=/run/netns/ab-reg curl -fsS \
		-H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
		"http://10.199.0.1:5000/v2/$1/manifests/v1" | jq -r '.layers[0].size'
}

# layer_bytes: the body bytes the registry sent for the largest blob in faults.log
layer_bytes() {
	local path
	path=$(awk '$1 == "SENT" { print $3, $4 }' "$BATS_TEST_TMPDIR/faults.log" | sort -n | tail -n1 | cut -d' ' -f2)
	awk -v p="$path" '$1 == "SENT" && $4 == p { n += $3 } END { print n + 0 }' "$BATS_TEST_TMPDIR/faults.log"
}

# A reset in the middle of a layer: stock's containerd store fails the pull
# (its reader reconnects only after a clean early EOF) and the next pull goes
# on from the partial ingest, or starts the layer again (both seen here);
# patched (0061, containerd's fetcher resuming) goes on from the break
# within the pull, and the layer costs the registry at most 10% more.
@test "pull: a reset at 90% of a 100 MiB layer: patched goes on within the pull, stock fails it" {
	local size ref=10.199.0.1:5001/ab/pull-reset:v1 flavor bytes tries
	(cd "$AB_ROOT/hack" && /usr/bin/python3 -c '
import ab.hosts as h
h.push_random_image("ab/pull-reset", "v1", [100 << 20], seed=90)') >/dev/null
	size=$(layer_size ab/pull-reset)
	for flavor in stock patched; do
		up_flavor "$flavor"
		start_faultreg reset@0.9 --min-size $((1 << 20))
		tries=1
		run timeout 300 docker pull -q "$ref"
		if [ "$status" -ne 0 ]; then
			echo "# $flavor: first pull failed: $output" >&3
			tries=2
			run timeout 300 docker pull -q "$ref"
		fi
		assert_success
		stop_faultreg
		run grep -c '^FAULT reset@0.9' "$BATS_TEST_TMPDIR/faults.log"
		assert_output 1
		bytes=$(layer_bytes)
		echo "# $flavor: $tries pull(s), the registry sent $bytes bytes of the ${size}-byte layer ($((bytes * 100 / size))%)" >&3
		check_blobs "$ref"
		if [ "$flavor" = patched ]; then
			# one pull, at most 10% more than the layer
			[ "$tries" = 1 ]
			[ "$bytes" -le $((size * 110 / 100)) ]
		else
			[ "$tries" = 2 ]
		fi
		rm -f "$BATS_TEST_TMPDIR/faults.log"
		"$AB_ROOT/hack/hosts/daemon.sh" down "$flavor" >/dev/null
	done
}

# A registry that caps each connection (as CDNs do): one large layer moves at
# one connection's pace on stock, whatever its max-concurrent-downloads;
# patched (0061) asks for it whole and, its stream held back, fetches the rest
# as bounded ranges on the registry's free slots in the containerd store, with
# the registry's limit (4 here) bounding the connections, ranges included, at
# the registry. The graphdriver store keeps the limits only: one stream.
# Ranges are a switch of their own (registry-downloads.ranges): the same
# limit without it is one stream too. Times are reported, not asserted (the
# pull suites compare them).
@test "pull: one 48 MiB layer from a registry that caps each connection: patched fetches it in ranges within the limit" {
	local size ref=10.199.0.1:5001/ab/pull-capped:v1 flavor t0 ranges peak conns bytes
	local limits='{"10.199.0.1:5001": {"mode": "fixed", "limit": 4}}'
	local fixed
	fixed=$(jq -n --argjson l "$limits" '{"max-concurrent-downloads": 4, "registry-downloads": {"limits": $l, "resume": true, "ranges": true}}')
	(cd "$AB_ROOT/hack" && /usr/bin/python3 -c '
import ab.hosts as h
h.push_random_image("ab/pull-capped", "v1", [48 << 20], seed=48)') >/dev/null
	size=$(layer_size ab/pull-capped)
	for flavor in stock patched patched-graphdriver patched-noranges; do
		case $flavor in
		stock) up_flavor stock ;;
		patched) up_patched "$fixed" ;;
		patched-graphdriver) up_patched "$(jq -n --argjson a "$fixed" '$a + {"features": {"containerd-snapshotter": false}}')" ;;
		patched-noranges) up_patched "$(jq -n --argjson a "$fixed" '$a | .["registry-downloads"].ranges = false')" ;;
		esac
		start_faultreg "" --conn-rate 40mbit
		t0=$(date +%s%N)
		run timeout 300 docker pull -q "$ref"
		assert_success
		t0=$((($(date +%s%N) - t0) / 1000000))
		stop_faultreg
		ranges=$(awk '$1 == "SENT" && $2 == 206' "$BATS_TEST_TMPDIR/faults.log" | wc -l)
		peak=$(grep -o 'max_concurrent_blobs=[0-9]*' "$BATS_TEST_TMPDIR/faults.log" | cut -d= -f2)
		conns=$(grep -o 'max_blob_connections=[0-9]*' "$BATS_TEST_TMPDIR/faults.log" | cut -d= -f2)
		bytes=$(layer_bytes)
		echo "# $flavor: ${t0} ms, $ranges ranges, at most $peak blob requests and $conns connections carrying one at once, $bytes bytes of the layer sent" >&3
		check_blobs "$ref"
		if [ "$flavor" = patched ]; then
			# the layer asked for whole, then bounded ranges beside its
			# held-back stream, which stops where they begin: sent twice is
			# only what it had in flight then
			[ "$bytes" -ge "$size" ]
			[ "$bytes" -le $((size + size / 20)) ]
			[ "$ranges" -ge 3 ]
			[ "$peak" -ge 2 ]
			[ "$peak" -le 4 ]
			[ "$conns" -le 4 ]
		else
			[ "$bytes" = "$size" ]
			[ "$ranges" = 0 ]
		fi
		rm -f "$BATS_TEST_TMPDIR/faults.log"
		"$AB_ROOT/hack/hosts/daemon.sh" down "${flavor%%-*}" >/dev/null
	done
}
