#!/usr/bin/env bash
# The patched daemon over a whole checkpoint trace on an emulated zoned
# device, and the replay of what it did beside it.
#
# A QEMU guest (hack/zoned/zns-vm.sh run-root, TCG) runs bin/dockerd-patched
# with checkpoint-zoned-device on an emulated ZNS namespace and
# hack/zoned/zns-vm/docker-trace.sh replays TRACE against it, one operation at
# a time: memory holders checkpointed and their checkpoints deleted, the
# device small enough that the daemon's placement relocates live data to
# make room. At the end every checkpoint docker lists is restored and its
# memory verified, and no zone is leaked. Then, on this host, what the
# daemon did becomes a trace (python3 -m ab.zns_guest trace: each checkpoint
# made, of its images' size, at the time it was asked for, checked against
# the daemon's log), which the replay (hack/zoned/zns-replay, the daemon's own
# Placer on the daemon's own model) places on the same geometry, and so does
# what was asked of it (python3 -m ab.zns_guest asked: the creates it refused
# too, of the size it refused); `python3 -m ab.zns_guest report` compares
# them: bytes written and read on the device, relocated, zones in use, and
# the creates the device refused against those the model refuses; and, for
# a run of one operation at a time, the replay with each create placed when
# the daemon began and when it had written its stream.
#
# usage: hack/zoned/zns-trace-vm.sh --out DIR [--trace FILE] [--until SECONDS] [--zones N]
#            [--together]
#   --trace   the trace to run [hyperfine-suites/traces/zns-recorded-2026-11-26.csv]
#   --until   only its operations up to this time (s) [all]
#   --together  the creates of different containers at one time in the trace
#             asked for at once, not one at a time
#   --zones   zones of 8 MiB (6 MiB of capacity each), at most 4 open and 6
#             active [27: the guest's images of the default trace, 0.1 MiB
#             beyond each holder's memory, peak at about 147 MiB live, 91% of
#             the 162 MiB; the replay of them relocates there and fails
#             nothing; since 0096 and 0097 the daemon refuses none on 25
#             zones (98%) and one on 24 (docs/zns-study.md, 3.8)]
# DIR gets console.log (the guest's), the guest's results (dockerd.log,
# ops.tsv, restores.tsv, counters.json, zone reports, the index),
# guest-trace.csv, replay.json, asked-trace.csv, replay-asked.json (and
# guest-trace-begin.csv, -done.csv and their replays), and README.md. It
# needs `make build` and hack/hosts/images.sh build; the guest takes 20-40
# minutes for the whole default trace on two cores. It starts no daemon on
# this host.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck source=hack/zoned/guest.sh
. "$AB_ROOT/hack/zoned/guest.sh"

trace=$AB_ROOT/hyperfine-suites/traces/zns-recorded-2026-11-26.csv
until='' zones=27 out='' together=0
while [ $# -gt 0 ]; do
	case $1 in
	--trace) trace=$2 && shift 2 ;;
	--until) until=$2 && shift 2 ;;
	--zones) zones=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	--together) together=1 && shift ;;
	-h | --help) sed -n '/^# usage:/,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "$0" && exit 0 ;;
	*) die "zns-trace-vm: unknown argument '$1' (see --help)" ;;
	esac
done
[ -n "$out" ] || die "usage: hack/zoned/zns-trace-vm.sh --out DIR [--trace FILE] [--until SECONDS] [--zones N] [--together]"
[[ $zones =~ ^[0-9]+$ ]] && [ "$zones" -ge 8 ] || die "zns-trace-vm: --zones wants a number of zones, 8 or more (got '$zones')"
[ -z "$until" ] || [[ $until =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "zns-trace-vm: --until wants seconds (got '$until')"
[ -s "$trace" ] || die "zns-trace-vm: no trace at $trace"
mkdir -p "$out"
[ -z "$(ls -A "$out")" ] || die "zns-trace-vm: $out is not empty"

need_series_build zns-trace-vm

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$AB_ROOT/hack/zoned/zns-vm/docker-root.sh" "$tmp/root"
# the trace, validated by the replay's reader, cut at --until
PYTHONPATH=$AB_ROOT/hack python3 -m ab.zns_guest cut "$trace" --until "${until:-inf}" --out "$tmp/root/trace.csv"
cp "$tmp/root/trace.csv" "$out/trace.csv"
ops=$(($(wc -l <"$out/trace.csv") - 1))

export ZNS_VM_ZONE_SIZE=8M ZNS_VM_ZONE_CAPACITY=6M ZNS_VM_NS_SIZE=$((zones * 8))M
export ZNS_VM_MAX_OPEN=4 ZNS_VM_MAX_ACTIVE=6
export ZNS_VM_MEM=${ZNS_VM_MEM:-2048}
export ZNS_VM_ENV="ZNS_TRACE_TOGETHER=$together"
# Under TCG an operation takes 3-10 s, a restore 10-30 s.
export ZNS_VM_TIMEOUT=${ZNS_VM_TIMEOUT:-$((1200 + ops * 20))}
log "zns-trace-vm: $ops operations of $(basename "$trace") on $zones zones of 8 MiB (6 MiB capacity); the guest may take up to ${ZNS_VM_TIMEOUT}s"
guest_run zns-trace-vm "$tmp/root" /docker-trace.sh ZNS-TRACE "$out" dockerd.log

log "zns-trace-vm: what the daemon did as a trace, replayed on the same geometry"
PYTHONPATH=$AB_ROOT/hack python3 -m ab.zns_guest trace "$out"
PYTHONPATH=$AB_ROOT/hack python3 -m ab.zns --trace "$out/guest-trace.csv" --zone-size 8MiB --zone-capacity 6MiB \
	--zones "$zones" --max-open 4 --max-active 6 --gc-reserve 0 --policy zone-pack --json "$out/replay.json" >"$out/replay.txt"
# and what was asked of it (the creates it refused too, of the size it
# refused), replayed: whether the model refuses the creates the device did
log "zns-trace-vm: what was asked of the daemon as a trace, replayed on the same geometry"
PYTHONPATH=$AB_ROOT/hack python3 -m ab.zns_guest asked "$out"
PYTHONPATH=$AB_ROOT/hack python3 -m ab.zns --trace "$out/asked-trace.csv" --zone-size 8MiB --zone-capacity 6MiB \
	--zones "$zones" --max-open 4 --max-active 6 --gc-reserve 0 --policy zone-pack --json "$out/replay-asked.json" >"$out/replay-asked.txt"
# and with each create placed when the daemon began and when it had written
# its stream, where the run is of one operation at a time: the placement's
# choices depend on the time
if [ "$together" = 0 ]; then
	for at in begin "done"; do
		PYTHONPATH=$AB_ROOT/hack python3 -m ab.zns_guest trace "$out" --at "$at"
		PYTHONPATH=$AB_ROOT/hack python3 -m ab.zns --trace "$out/guest-trace-$at.csv" --zone-size 8MiB --zone-capacity 6MiB \
			--zones "$zones" --max-open 4 --max-active 6 --gc-reserve 0 --policy zone-pack --json "$out/replay-$at.json" >"$out/replay-$at.txt"
	done
fi
PYTHONPATH=$AB_ROOT/hack python3 -m ab.zns_guest report "$out"
log "zns-trace-vm: $out/README.md"
