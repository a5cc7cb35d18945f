#!/usr/bin/env bats
# The monitoring the package ships (hack/nodes/deb/monitoring), against a
# real Prometheus (Debian's) scraping a patched daemon: the alert rules load,
# and every query of the Grafana dashboard returns data after a pull and a
# checkpoint.

load helpers
bats_require_minimum_version 1.5.0

METRICS=127.0.0.1:9323
PROM=127.0.0.1:9090
REF=10.199.0.1:5000/ab/monitoring:v1
MON=$AB_ROOT/hack/nodes/deb/monitoring

setup_file() {
	"$AB_ROOT/hack/hosts/registry.sh" up >/dev/null
	(cd "$AB_ROOT/hack" && /usr/bin/python3 -c '
import ab.hosts as h
h.push_random_image("ab/monitoring", "v1", [1 << 20, 512 << 10], seed=91)') >/dev/null
}

teardown_file() {
	"$AB_ROOT/hack/hosts/registry.sh" down
}

setup() {
	load_libs
}

teardown() {
	local pid
	if [ -f "$BATS_TEST_TMPDIR/prometheus.pid" ]; then
		pid=$(cat "$BATS_TEST_TMPDIR/prometheus.pid")
		kill -TERM "$pid" 2>/dev/null || true
		wait_for 20 bash -c "! kill -0 $pid 2>/dev/null" || kill -KILL "$pid" 2>/dev/null || true
	fi
	"$AB_ROOT/hack/hosts/daemon.sh" down patched >/dev/null 2>&1 || true
}

# query EXPR: the number of series Prometheus answers EXPR with now
query() {
	in_ns patched curl -fsS -G "http://$PROM/api/v1/query" --data-urlencode "query=$1" |
		jq -e -r 'select(.status == "success") | .data.result | length'
}

has_data() { [ "$(query "$1")" -gt 0 ]; }

# at_least EXPR N: Prometheus has scraped a value of EXPR of at least N
at_least() {
	local v
	v=$(in_ns patched curl -fsS -G "http://$PROM/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // "-1"')
	awk -v v="$v" -v n="$2" 'BEGIN { exit !(v >= n) }'
}

@test "monitoring: the alert rules load and every dashboard panel has data after a pull and a checkpoint" {
	command -v prometheus >/dev/null || fail "prometheus is missing (make deps installs Debian's)"
	jq -n --arg m "$METRICS" '{"metrics-addr": $m,
		"registry-download-concurrency": {"default": {"mode": "adaptive"}},
		"checkpoints": {"write-pace": "fixed", "write-bandwidth": "64MiB"}}' >"$BATS_TEST_TMPDIR/daemon.json"
	"$AB_ROOT/hack/hosts/daemon.sh" up patched --config "$BATS_TEST_TMPDIR/daemon.json" >"$BATS_TEST_TMPDIR/env"
	. "$BATS_TEST_TMPDIR/env"
	cat >"$BATS_TEST_TMPDIR/prometheus.yml" <<-EOF2
		global:
		  scrape_interval: 1s
		  evaluation_interval: 1s
		rule_files:
		  - $MON/moby-ab-alerts.yml
		scrape_configs:
		  - job_name: moby-ab
		    static_configs:
		      - targets: ["$METRICS"]
	EOF2
	# in the daemon's network namespace, where its metrics-addr is
	setsid nsenter --net=/run/netns/ab-patched prometheus --config.file="$BATS_TEST_TMPDIR/prometheus.yml" \
		--storage.tsdb.path="$BATS_TEST_TMPDIR/prom" --web.listen-address="$PROM" \
		</dev/null >"$BATS_TEST_TMPDIR/prometheus.log" 2>&1 &
	echo $! >"$BATS_TEST_TMPDIR/prometheus.pid"
	wait_for 60 in_ns patched curl -fs "http://$PROM/-/ready" >/dev/null
	wait_for 30 has_data 'up{job="moby-ab"} == 1'

	# the rules as Prometheus loaded them
	run bash -c "nsenter --net=/run/netns/ab-patched curl -fsS http://$PROM/api/v1/rules | jq -r '.data.groups[].rules[] | \"\\(.name) \\(.health)\"'"
	assert_success
	[ "${#lines[@]}" = 5 ]
	refute_output --partial err

	docker pull -q "$REF" >/dev/null
	docker load -q -i "$AB_ROOT/build/images/memholder.tar" >/dev/null
	docker run -d --name mh ab/memholder memholder 16 >/dev/null
	wait_for 60 bash -c "docker logs mh 2>&1 | grep -q 'verified_passes='"
	docker checkpoint create --leave-running mh cp1
	# what it shows is what happened, once scraped: one checkpoint committed
	# (beside the phase histogram's first observation, made at start), its
	# images' bytes written out at the pace, the registry's limit set by the
	# pull
	wait_for 30 at_least 'sum(engine_daemon_checkpoint_phases_seconds_count{phase="commit"})' 2
	wait_for 30 at_least 'sum(engine_daemon_checkpoint_written_bytes_total)' $((16 << 20))
	[ "$(query 'engine_daemon_checkpoint_write_limit_bytes_per_second == 67108864')" = 1 ]
	[ "$(query 'engine_daemon_registry_download_limit{registry="10.199.0.1:5000"} >= 1')" = 1 ]
	# every query of the dashboard has data; the zones panel only with a
	# zoned device, which this daemon has not
	local title expr missing=()
	while IFS=$'\t' read -r title expr; do
		if [[ $title == Zones* ]]; then
			[ "$(query "$expr")" = 0 ]
			continue
		fi
		wait_for 30 has_data "$expr" || missing+=("$title: $expr")
	done < <("$MON/check.sh" --queries)
	[ ${#missing[@]} = 0 ] || {
		printf '# no data: %s\n' "${missing[@]}" >&3
		false
	}
	docker rm -f mh >/dev/null
}
