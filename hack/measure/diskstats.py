#!/usr/bin/env python3
"""A disk's write rate from its /proc/diskstats counters.

  diskstats.py disk PATH        the disk (e.g. vda) that holds PATH
  diskstats.py sample DISK OUT  append "time sectors-written" to OUT every
                                100 ms until killed

worst_window() gives the highest write rate over any one-second window of a
sample file (hack/measure/checkpoint-device-rate.sh, hack/measure/checkpoint-neighbour.sh).
"""
import os
import subprocess
import sys
import time

INTERVAL_S = 0.1


def disk(path):
    """The whole disk that holds path, as /proc/diskstats names it."""
    src = subprocess.run(["findmnt", "-no", "SOURCE", "-T", path], capture_output=True, text=True, check=True).stdout.strip()
    parent = subprocess.run(["lsblk", "-no", "PKNAME", src], capture_output=True, text=True).stdout.strip()
    name = parent or os.path.basename(src)
    for line in open("/proc/diskstats"):
        if line.split()[2] == name:
            return name
    raise SystemExit(f"diskstats: no /proc/diskstats line for {name} (the disk under {path})")


def sample(name, out):
    with open(out, "w") as f:
        while True:
            for line in open("/proc/diskstats"):
                p = line.split()
                if p[2] == name:
                    f.write(f"{time.time():.3f} {p[9]}\n")
                    break
            f.flush()
            time.sleep(INTERVAL_S)


def read(path):
    """[(time, sectors written)] from a sample file."""
    return [tuple(map(float, line.split())) for line in open(path)]


def worst_window(rows, t0, t1):
    """The highest write rate, in bytes per second, over any window of at
    least one second between t0 and t1; a span under a second is taken as
    the second from t0 (the samples go on after it), else no window would
    fit in it. 0.0 if the samples do not cover a second."""
    t1 = max(t1, t0 + 1.0)
    rows = [r for r in rows if t0 - 2 * INTERVAL_S <= r[0] <= t1 + 2 * INTERVAL_S]
    best = 0.0
    for i, (t, s) in enumerate(rows):
        for u, v in rows[i:]:
            if u - t >= 1.0:
                best = max(best, (v - s) * 512 / (u - t))
                break
    return best


def written(rows, t0, t1):
    """Bytes written between t0 and t1."""
    rows = [r for r in rows if t0 - 2 * INTERVAL_S <= r[0] <= t1 + 2 * INTERVAL_S]
    return int((rows[-1][1] - rows[0][1]) * 512) if rows else None


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "disk":
        print(disk(sys.argv[2]))
    elif len(sys.argv) == 4 and sys.argv[1] == "sample":
        sample(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
