#!/usr/bin/env bash
# What the data-root's disk sees while the patched daemon writes a checkpoint
# under checkpoint-write-bandwidth caps: for each cap and mode, a memory holder
# of SIZE MiB is checkpointed while the disk's /proc/diskstats counters are
# sampled every 100 ms, over the whole checkpoint (dump included); the result
# is the device's highest write rate over any one-second window, the bytes it
# took, and the checkpoint's time against the images' bytes at the cap.
#
# usage: hack/measure/checkpoint-device-rate.sh [--size MiB] [--mode MODE] [--out DIR] CAP...
#   CAP: a checkpoint-write-bandwidth value ("32MiB" or "auto"), or "none"
#   MODE: leave-running (docker checkpoint create --leave-running), exit
#         (without it: CRIU stops the container) or both (the default)
# Writes DIR/device-rate.json (default: a new directory under /tmp) and prints
# a table. The patched test host must not be running already.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

size=384 out='' caps=() mode=both
while [ $# -gt 0 ]; do
	case $1 in
	--size) size=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	--mode) mode=$2 && shift 2 ;;
	-h | --help) sed -n '2,15s/^# \{0,1\}//p' "$0" && exit 0 ;;
	*) caps+=("$1") && shift ;;
	esac
done
[ ${#caps[@]} -gt 0 ] || die "usage: hack/measure/checkpoint-device-rate.sh [--size MiB] [--mode MODE] [--out DIR] CAP..."
case $mode in
both) modes=(leave-running exit) ;;
leave-running | exit) modes=("$mode") ;;
*) die "--mode: want leave-running, exit or both, got '$mode'" ;;
esac
[ ! -e "$AB_RUN/patched/dockerd.pid" ] || die "the patched test host is running (hack/hosts/daemon.sh down patched)"
out=${out:-$(mktemp -d /tmp/checkpoint-device-rate.XXXXXX)}
mkdir -p "$out"
[ -f "$AB_ROOT/build/images/memholder.tar" ] || "$AB_ROOT/hack/hosts/images.sh" build >/dev/null

mkdir -p "$AB_VAR"
dev=$(python3 "$AB_ROOT/hack/measure/diskstats.py" disk "$AB_VAR")

sampler=
cleanup() {
	[ -z "$sampler" ] || kill "$sampler" 2>/dev/null || true
	"$AB_ROOT/hack/hosts/daemon.sh" down patched >/dev/null 2>&1 || true
}
trap cleanup EXIT

runs=()
for cap in "${caps[@]}"; do
	for m in "${modes[@]}"; do
		log "device rate: cap $cap, $m, ${size} MiB memory holder, disk $dev"
		cfg=$out/daemon-$cap.json
		if [ "$cap" = none ]; then echo '{}' >"$cfg"; else echo "{\"checkpoint-write-bandwidth\": \"$cap\"}" >"$cfg"; fi
		eval "$("$AB_ROOT/hack/hosts/daemon.sh" up patched --config "$cfg")"
		run_memholder mh "$size"
		sync
		sleep 2
		samples=$out/samples-$cap-$m.txt
		python3 "$AB_ROOT/hack/measure/diskstats.py" sample "$dev" "$samples" &
		sampler=$!
		sleep 1
		args=()
		[ "$m" = exit ] || args=(--leave-running)
		t0=$(date +%s.%N)
		docker checkpoint create "${args[@]}" mh cp1 >/dev/null
		t1=$(date +%s.%N)
		sleep 1
		kill "$sampler"
		wait "$sampler" 2>/dev/null || true
		sampler=
		grep -h 'msg="Checkpoint created"' "$AB_VAR/patched/dockerd.log" | tail -1 >"$out/log-$cap-$m.txt"
		runs+=("$cap $m $t0 $t1")
		"$AB_ROOT/hack/hosts/daemon.sh" down patched >/dev/null
	done
done

PYTHONPATH=$AB_ROOT/hack:$AB_ROOT/hack/measure python3 - "$out/device-rate.json" "$size" "$dev" "$("$AB_ROOT/hack/stack/patches.sh" hash 2>/dev/null || echo unknown)" "${runs[@]}" <<'EOF'
import json, os, re, sys
import diskstats
from ab import units
path, size, dev, series, runs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
outdir = os.path.dirname(path)
def seconds(d):
    """A duration the daemon logged (1.2s, 345ms, 12µs) in seconds; None without one."""
    try:
        return units.duration(d or "")
    except ValueError:
        return None
def logged(cap, mode):
    """The daemon's "Checkpoint created" line as a dict."""
    line = open(os.path.join(outdir, f"log-{cap}-{mode}.txt")).read()
    return {k: v.strip('"') for k, v in re.findall(r'(\w+)=("[^"]*"|\S+)', line)}
def parse_cap(c):
    """The cap in bytes/s; None without one (none) or when it moves (auto)."""
    if c in ("none", "auto"):
        return None
    return float(units.size(c, plain=True))
out, table = [], []
print(f"{'cap':>8} {'mode':>13} {'max 1 s MiB/s':>14} {'x cap':>6} {'MiB to disk':>11} {'checkpoint s':>12} {'x (bytes/cap + dump)':>21}")
for r in runs:
    f = r.split()
    cap, mode, t0, t1 = f[0], f[1], float(f[2]), float(f[3])
    samples = os.path.join(outdir, f"samples-{cap}-{mode}.txt")
    log = logged(cap, mode)
    written = int(log["written"]) if "written" in log else None
    dump = seconds(log.get("dump"))
    commit = seconds(log.get("commit"))
    rows = diskstats.read(samples)
    best = diskstats.worst_window(rows, t0, t1)
    took = t1 - t0
    rate = parse_cap(cap)
    floor = written / rate + (dump or 0) if rate and written else None
    res = {"cap": cap, "mode": mode, "cap_bytes_per_s": rate, "checkpoint_s": round(took, 3), "dump_s": dump, "commit_s": commit, "daemon_log": log,
           "written_bytes": written, "max_1s_window_bytes_per_s": round(best),
           "disk_bytes": diskstats.written(rows, t0, t1),
           "samples": [[round(t - t0, 3), int(s)] for t, s in rows if t0 - 0.2 <= t <= t1 + 0.2]}
    if rate:
        res["max_1s_window_over_cap"] = round(best / rate, 3)
    if floor:
        res["checkpoint_over_floor"] = round(took / floor, 3)
    out.append(res)
    table.append(f"| {cap} | {mode} | {best / 2**20:.1f} | {res.get('max_1s_window_over_cap', '-')} | {(res['disk_bytes'] or 0) / 2**20:.0f} | {took:.2f} | {f'{dump:.3f}' if dump is not None else '-'} | {f'{commit:.3f}' if commit is not None else '-'} | {res.get('checkpoint_over_floor', '-')} |")
    os.remove(samples)
    print(f"{cap:>8} {mode:>13} {best / 2**20:14.1f} {res.get('max_1s_window_over_cap', float('nan')):6.2f} "
          f"{(res['disk_bytes'] or 0) / 2**20:11.0f} {took:12.2f} {res.get('checkpoint_over_floor', float('nan')):21.2f}")
json.dump({"what": "checkpoint-device-rate", "memory_mib": size, "disk": dev, "series": series,
           "sample_interval_s": 0.1, "runs": out}, open(path, "w"), indent=1)
with open(os.path.join(outdir, "report.md"), "w") as f:
    f.write(f"# Checkpoint writes as the disk sees them\n\nA {size} MiB memory holder checkpointed by the patched daemon "
            f"(series {series}) under each checkpoint-write-bandwidth cap, with --leave-running and without it (exit: CRIU stops the container); "
            f"disk {dev}, /proc/diskstats sampled every 100 ms over the whole checkpoint, dump included. "
            "Floor: the images' bytes at the cap plus the dump; commit: the fsyncs and renames after the write. Samples in device-rate.json; made by hack/measure/checkpoint-device-rate.sh.\n\n"
            "| cap | mode | max MiB/s over 1 s | / cap | MiB to disk | checkpoint s | dump s | commit s | / floor |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
    f.write("\n".join(table) + "\n")
print(f"results: {path}")
EOF
