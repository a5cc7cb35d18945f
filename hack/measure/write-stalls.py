#!/usr/bin/env python3
"""Whether a plain write of checkpoint-sized images stalls a reading
neighbour on the same disk, without a daemon or CRIU: which way of writing
(not the daemon's pacing) makes a 4 KiB O_DIRECT read wait.

  write-stalls.py [--dir DIR] [--size 384MiB] [--rate 32MiB] [--after 15]
                  [--json OUT] MODE...

The neighbour (hack/ab/neighbour_io.py, workload "reads": 4 KiB O_DIRECT
reads at random offsets of a 2 GiB file of its own) runs for 2 s, while a
file of --size is written, and --after seconds after the write's fsync.
Each MODE writes a new file under DIR (default: $AB_VAR/write-stalls, on the
data-root's disk), then removes it:

  burst     O_DIRECT, 1 MiB writes, as fast as the disk takes them
  paced     O_DIRECT, 1 MiB writes at --rate
  small     O_DIRECT, 64 KiB writes at --rate, one in flight
  buffered  page cache, as fast as it takes them, one fsync at the end
  behind    page cache, 1 MiB writes at --rate, each chunk's writeback
            started at once and the one before waited for and dropped from
            the cache (sync_file_range: the daemon's paced copy, 0007)

Per mode it prints the neighbour's reads before, during and after the
write: windows of 100 ms, the longest read, and every window in which a
read took over 50 ms (seconds from the write's start, and the longest
there). DIR and everything in it is removed at the end, however it ends.
"""
import argparse
import ctypes
import json
import mmap
import os
import shutil
import subprocess
import sys
import time

HACK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HACK)
from ab.kinds import neighbour  # noqa: E402
from ab.kinds.neighbour import STALL_MS  # noqa: E402

MODES = ("burst", "paced", "small", "buffered", "behind")
LEAD_S = 2.0
SYNC_FILE_RANGE_WRITE = 2
SYNC_FILE_RANGE_WAIT = 7  # WAIT_BEFORE | WRITE | WAIT_AFTER


def size(s):
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for u, m in units.items():
        if s.endswith(u):
            return int(float(s[:-len(u)]) * m)
    return int(s)


def write(path, mode, total, rate):
    direct = mode in ("burst", "paced", "small")
    unit = 64 << 10 if mode == "small" else 1 << 20
    pace = rate if mode in ("paced", "small", "behind") else None
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    sfr = libc.sync_file_range
    sfr.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]
    buf = mmap.mmap(-1, unit)  # page-aligned, as O_DIRECT needs
    buf.write(os.urandom(unit))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | (os.O_DIRECT if direct else 0), 0o600)
    try:
        t0, done, prev = time.monotonic(), 0, None
        while done < total:
            os.write(fd, buf)
            if mode == "behind":
                if sfr(fd, done, unit, SYNC_FILE_RANGE_WRITE) != 0:
                    raise OSError(ctypes.get_errno(), "sync_file_range")
                if prev is not None:
                    if sfr(fd, prev, unit, SYNC_FILE_RANGE_WAIT) != 0:
                        raise OSError(ctypes.get_errno(), "sync_file_range")
                    os.posix_fadvise(fd, prev, unit, os.POSIX_FADV_DONTNEED)
                prev = done
            done += unit
            if pace:
                ahead = t0 + done / pace - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
        os.fsync(fd)
    finally:
        os.close(fd)


def run(mode, work, total, rate, after):
    def during():
        write(os.path.join(work, "images"), mode, total, rate)
        w1 = time.time()
        time.sleep(after)
        return w1
    try:
        nb, w1, w0, _ = neighbour.neighbour_run(work, os.path.join(work, "neighbour.json"),
                                                during=(LEAD_S, during), workload="reads")
    finally:
        for f in ("images", "neighbour.json"):
            if os.path.exists(os.path.join(work, f)):
                os.remove(os.path.join(work, f))
    wins = [(w[0], w[4]) for w in neighbour.neighbour_series(nb, w0)["windows"] if w[4] is not None]
    res = {"mode": mode, "write_s": round(w1 - w0, 3), "reads": nb["read"]}
    for name, lo, hi in (("before", -LEAD_S, 0), ("during", 0, w1 - w0), ("after", w1 - w0, float("inf"))):
        xs = [(t, ms) for t, ms in wins if lo <= t < hi]
        res[name] = {"windows": len(xs), "longest_ms": max((ms for _, ms in xs), default=None),
                     "stalls": [[t, ms] for t, ms in xs if ms > STALL_MS]}
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=os.path.join(os.environ.get("AB_VAR", "/var/lib/moby-ab"), "write-stalls"))
    ap.add_argument("--size", default="384MiB")
    ap.add_argument("--rate", default="32MiB")
    ap.add_argument("--after", type=float, default=15.0)
    ap.add_argument("--json")
    ap.add_argument("modes", nargs="+", choices=MODES)
    a = ap.parse_args()
    if os.path.exists(a.dir):
        raise SystemExit(f"write-stalls: {a.dir} exists; remove it or give another --dir")
    os.makedirs(a.dir)
    results = []
    try:
        for mode in a.modes:
            subprocess.run(["sync"], check=True)
            time.sleep(8)  # the writeback of what came before (the read file, the last mode's file)
            r = run(mode, a.dir, size(a.size), size(a.rate), a.after)
            results.append(r)
            print(f"{mode}: write {r['write_s']:.2f} s; read p99 {r['reads']['p99_ms']} ms", flush=True)
            for name in ("before", "during", "after"):
                s = r[name]
                print(f"  {name}: {s['windows']} windows, longest read {s['longest_ms']} ms, "
                      f"over {STALL_MS:.0f} ms: {s['stalls'] or 'none'}", flush=True)
    finally:
        shutil.rmtree(a.dir, ignore_errors=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"size": a.size, "rate": a.rate, "after_s": a.after, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
