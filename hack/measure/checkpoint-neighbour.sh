#!/usr/bin/env bash
# What a checkpoint costs its neighbours on the disk: a neighbour makes
# database-style commits (4 KiB writes, each followed by fdatasync)
# on the data-root's disk while a memory holder of SIZE MiB is checkpointed
# (--leave-running), for each variant: stock, and the patched daemon with
# each daemon.json given; it commits from 2 s before the checkpoint to its end.
# An idle run (no checkpoint, SECONDS long) comes first. Reports the
# neighbour's commit latency (p50, p99, p99.9, longest), its commits, the
# checkpoint's time, and the disk's worst one-second write rate.
#
# usage: hack/measure/checkpoint-neighbour.sh [--size MiB] [--seconds S] [--out DIR]
#            [stock] [patched=NAME:JSON]...
#   e.g.   hack/measure/checkpoint-neighbour.sh stock 'patched=nocap:{}' \
#            'patched=32MiB:{"checkpoint-write-bandwidth":"32MiB"}'
# Writes DIR/neighbour.json and DIR/report.md. The test hosts must not be
# running already.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

size=384 seconds=10 out=''
variants=()
while [ $# -gt 0 ]; do
	case $1 in
	--size) size=$2 && shift 2 ;;
	--seconds) seconds=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	-h | --help) sed -n '2,15s/^# \{0,1\}//p' "$0" && exit 0 ;;
	stock | patched=*:*) variants+=("$1") && shift ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
done
[ ${#variants[@]} -gt 0 ] || die "usage: hack/measure/checkpoint-neighbour.sh [--size MiB] [--seconds S] [--out DIR] [stock] [patched=NAME:JSON]..."
for f in stock patched; do
	[ ! -e "$AB_RUN/$f/dockerd.pid" ] || die "the $f test host is running (hack/hosts/daemon.sh down $f)"
done
out=${out:-$(mktemp -d /tmp/checkpoint-neighbour.XXXXXX)}
mkdir -p "$out" "$AB_VAR"
[ -f "$AB_ROOT/build/images/memholder.tar" ] || "$AB_ROOT/hack/hosts/images.sh" build >/dev/null
dev=$(python3 "$AB_ROOT/hack/measure/diskstats.py" disk "$AB_VAR")

work=$(mktemp -d "$AB_VAR/neighbour.XXXXXX") # the neighbour's file, on the data-root's disk
flavor='' sampler=''
cleanup() {
	[ -z "$sampler" ] || kill "$sampler" 2>/dev/null || true
	[ -z "${fio_pid:-}" ] || kill "$fio_pid" 2>/dev/null || true
	[ -z "$flavor" ] || "$AB_ROOT/hack/hosts/daemon.sh" down "$flavor" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

start_sampler() { # file
	python3 "$AB_ROOT/hack/measure/diskstats.py" sample "$dev" "$1" &
	sampler=$!
}

stop_sampler() {
	kill "$sampler"
	wait "$sampler" 2>/dev/null || true
	sampler=''
}

neighbour() { # name seconds: commits until SIGTERM or seconds; JSON into $out/neighbour-NAME.json
	exec python3 -c '
import json, os, signal, sys, time
path, seconds, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
stop = False
def term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, term)
block = os.urandom(4096)
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
lat, start, off = [], time.monotonic(), 0
while not stop and time.monotonic() - start < seconds:
    t = time.monotonic()
    os.pwrite(fd, block, off)
    os.fdatasync(fd)
    lat.append(time.monotonic() - t)
    off = (off + 4096) % (64 << 20)
runtime = time.monotonic() - start
os.close(fd)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1e3 if lat else None
json.dump({"commits": len(lat), "runtime_s": runtime, "commits_per_s": len(lat) / runtime,
           "lat_ms": {"p50": q(0.5), "p99": q(0.99), "p99.9": q(0.999), "max": lat[-1] * 1e3 if lat else None}}, open(out, "w"))
' "$work/commits" "$2" "$out/neighbour-$1.json"
}

runs=()
log "neighbour: idle"
start_sampler "$out/samples-idle.txt"
t0=$(date +%s.%N)
(neighbour idle "$seconds")
t1=$(date +%s.%N)
stop_sampler
runs+=("idle $t0 $t1 $t0 $t1")

for v in "${variants[@]}"; do
	if [ "$v" = stock ]; then
		name=stock flavor=stock cfg=$out/daemon-stock.json
		echo '{}' >"$cfg"
	else
		spec=${v#patched=}
		name=${spec%%:*} flavor=patched cfg=$out/daemon-$name.json
		echo "${spec#*:}" >"$cfg"
	fi
	log "neighbour: $name ($flavor, $(cat "$cfg"))"
	eval "$("$AB_ROOT/hack/hosts/daemon.sh" up "$flavor" --config "$cfg")"
	run_memholder mh "$size"
	sync
	sleep 2
	start_sampler "$out/samples-$name.txt"
	t0=$(date +%s.%N)
	# The neighbour runs from 2 s before the checkpoint to its end.
	neighbour "$name" 600 &
	fio_pid=$!
	sleep 2
	c0=$(date +%s.%N)
	docker checkpoint create --leave-running mh cp1 >/dev/null
	c1=$(date +%s.%N)
	kill -TERM "$fio_pid"
	wait "$fio_pid" || true
	fio_pid=''
	t1=$(date +%s.%N)
	stop_sampler
	runs+=("$name $t0 $t1 $c0 $c1")
	"$AB_ROOT/hack/hosts/daemon.sh" down "$flavor" >/dev/null
	flavor=''
done

PYTHONPATH=$AB_ROOT/hack:$AB_ROOT/hack/measure python3 - "$out" "$size" "$seconds" "$dev" "$("$AB_ROOT/hack/stack/patches.sh" hash 2>/dev/null || echo unknown)" "${runs[@]}" <<'EOF'
import json, os, sys
import diskstats
outdir, size, seconds, dev, series, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
res, table = [], []
for r in runs:
    name, t0, t1, c0, c1 = r.split()
    t0, t1, c0, c1 = map(float, (t0, t1, c0, c1))
    nb = json.load(open(os.path.join(outdir, f"neighbour-{name}.json")))
    samples = os.path.join(outdir, f"samples-{name}.txt")
    rows = diskstats.read(samples)
    os.remove(samples)
    x = {"variant": name, "commits": nb["commits"], "commits_per_s": round(nb["commits_per_s"], 1),
         "commit_lat_ms": {k: round(v, 3) for k, v in nb["lat_ms"].items()},
         "checkpoint_s": None if name == "idle" else round(c1 - c0, 3),
         "disk_worst_1s_bytes_per_s": round(diskstats.worst_window(rows, c0, c1))}
    res.append(x)
    sl = x["commit_lat_ms"]
    table.append(f"| {name} | {x['commits_per_s']} | {sl['p50']:.2f} | {sl['p99']:.2f} | {sl['p99.9']:.2f} | {sl['max']:.1f} | "
                 f"{'-' if x['checkpoint_s'] is None else x['checkpoint_s']} | {x['disk_worst_1s_bytes_per_s'] / 2**20:.0f} |")
json.dump({"what": "checkpoint-neighbour", "memory_mib": size, "seconds": seconds, "disk": dev, "series": series,
           "neighbour": "4 KiB writes (pwrite), each followed by fdatasync, on a file on the data-root's disk",
           "runs": res}, open(os.path.join(outdir, "neighbour.json"), "w"), indent=1)
with open(os.path.join(outdir, "report.md"), "w") as f:
    f.write(f"# A checkpoint's neighbours on the disk\n\nA neighbour commits (4 KiB writes, each followed by fdatasync) "
            f"on the data-root's disk ({dev}): alone ({seconds} s, idle), and from 2 s before a {size} MiB memory holder is checkpointed with --leave-running to the checkpoint's end. "
            f"Series {series}; made by hack/measure/checkpoint-neighbour.sh; one run per variant. Latencies are of a commit (the write and its fdatasync), in ms; "
            "the disk's rate is its worst one-second write rate during the checkpoint.\n\n"
            "| variant | commits/s | p50 | p99 | p99.9 | longest | checkpoint s | disk MiB/s |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n")
    f.write("\n".join(table) + "\n")
print(open(os.path.join(outdir, "report.md")).read())
EOF
