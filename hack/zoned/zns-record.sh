#!/usr/bin/env bash
# Record a trace of checkpoint creates and deletes for the ZNS placement
# replay from a real run: the patched test host (bin/dockerd-patched, 0035
# or later: it logs the checkpoints it deletes) runs memory holders of a few
# MiB that checkpoint at intervals of their own, keep their last few
# checkpoints and are partly removed and replaced (hack/ab/zns_record.py);
# then the daemon's log becomes the trace (python3 -m ab.zns trace-from-log).
#
# usage: hack/zoned/zns-record.sh --out FILE.csv [--seconds 240] [--containers 10] [--seed 1]
#            [--log FILE]
# Starts and stops the patched test host: run it under the host lock,
#   flock /tmp/moby-ab-hosts.lock hack/zoned/zns-record.sh --out hyperfine-suites/traces/zns-recorded-$(date +%F).csv
# FILE.csv gets the trace, FILE.json what the workload did, and --log a copy
# of the daemon's log.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

seconds=240 containers=10 seed=1 out='' keeplog=''
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) seconds=$2 && shift 2 ;;
	--containers) containers=$2 && shift 2 ;;
	--seed) seed=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	--log) keeplog=$2 && shift 2 ;;
	-h | --help) sed -n '2,15s/^# \{0,1\}//p' "$0" && exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
[ -n "$out" ] || die "usage: hack/zoned/zns-record.sh --out FILE.csv [--seconds 240] [--containers 10] [--seed 1] [--log FILE]"
[ ! -e "$AB_RUN/patched/dockerd.pid" ] || die "the patched test host is running (hack/hosts/daemon.sh down patched)"
[ -x "$AB_ROOT/bin/dockerd-patched" ] || die "bin/dockerd-patched is missing: make build-patched"
[ -x "$AB_ROOT/bin/docker-proxy" ] || die "bin/docker-proxy is missing: make build-stock (it builds the proxy)"
[ -f "$AB_ROOT/build/images/memholder.tar" ] || "$AB_ROOT/hack/hosts/images.sh" build memholder >/dev/null
mkdir -p "$(dirname "$out")"

cfg=$(mktemp)
up=''
cleanup() {
	[ -z "$up" ] || "$AB_ROOT/hack/hosts/daemon.sh" down patched >/dev/null 2>&1 || true
	rm -f "$cfg"
}
trap cleanup EXIT

# The checkpoint options the package ships (hack/nodes/deb/daemon.json).
echo '{"checkpoint-max-concurrent": 2, "checkpoint-queue-order": "smallest-first"}' >"$cfg"
up=1
env=$("$AB_ROOT/hack/hosts/daemon.sh" up patched --config "$cfg")
eval "$env"
docker load -q -i "$AB_ROOT/build/images/memholder.tar" >/dev/null
log "zns-record: $containers holders for ${seconds}s (seed $seed)"
PYTHONPATH=$AB_ROOT/hack python3 -m ab.zns_record --seconds "$seconds" --containers "$containers" \
	--seed "$seed" >"${out%.csv}.json"
dlog=$AB_VAR/patched/dockerd.log
[ -z "$keeplog" ] || cp "$dlog" "$keeplog"
PYTHONPATH=$AB_ROOT/hack python3 -m ab.zns trace-from-log "$dlog" --out "$out"
