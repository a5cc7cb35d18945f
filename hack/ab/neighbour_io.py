"""A neighbour on the disk: a database's commits and point reads.

    python3 neighbour_io.py DIR OUT [COMMIT_BYTES]

Alternates a commit (a pwrite of COMMIT_BYTES, 4 KiB by default, then
fdatasync) and a 4 KiB read at a
random offset of a 64 MiB file with O_DIRECT (so that it reaches the disk,
not the page cache), in files under DIR, until SIGTERM; then writes their
latencies' percentiles as JSON to OUT. Prints "ready" once its files exist.

OUT also has the commits over time, in windows of WINDOW_S by completion
(Windows): per window its start (seconds from start_unix, the wall clock
when the first commit began), how many commits completed in it and their
p50, p99 and longest latency (ms; null in a window where none completed).
At most MAX_WINDOWS are kept (windows_truncated says when more ran)."""
import json
import mmap
import os
import random
import signal
import sys
import time

READ_FILE = 64 << 20
BLOCK = 4096
WINDOW_S = 0.1
MAX_WINDOWS = 36000  # an hour of windows


def pct(xs):
    """n, p50, p99, p99.9 and the longest of latencies xs (seconds), in ms."""
    xs = sorted(xs)
    q = lambda p: round(xs[min(len(xs) - 1, int(p * len(xs)))] * 1e3, 4) if xs else None
    return {"n": len(xs), "p50_ms": q(0.5), "p99_ms": q(0.99), "p999_ms": q(0.999),
            "max_ms": round(xs[-1] * 1e3, 4) if xs else None}


class Windows:
    """Latencies grouped by when they completed into windows of width
    seconds: only the current window's latencies are held, and at most
    limit windows are kept."""

    def __init__(self, width=WINDOW_S, limit=MAX_WINDOWS):
        self.width, self.limit = width, limit
        self.rows, self.cur, self.i, self.truncated = [], [], 0, False

    def add(self, t, lat):
        """A latency lat (s) that completed t seconds from the start."""
        k = int(t / self.width)
        while self.i < k:
            self._close()
        self.cur.append(lat)

    def _close(self):
        if len(self.rows) < self.limit:
            p = pct(self.cur)
            self.rows.append([round(self.i * self.width, 3), p["n"], p["p50_ms"], p["p99_ms"], p["max_ms"]])
        else:
            self.truncated = True
        self.cur, self.i = [], self.i + 1

    def close(self):
        """Every window up to the last completion: [start s, n, p50 ms, p99 ms, longest ms]."""
        if self.cur:
            self._close()
        return self.rows


def main(d, out, commit=BLOCK):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    rpath, wpath = os.path.join(d, "reads"), os.path.join(d, "commits")
    if not os.path.exists(rpath) or os.path.getsize(rpath) != READ_FILE:
        with open(rpath, "wb") as f:
            for _ in range(READ_FILE // (1 << 20)):
                f.write(os.urandom(1 << 20))
            f.flush()
            os.fsync(f.fileno())
    rfd = os.open(rpath, os.O_RDONLY | os.O_DIRECT)
    wfd = os.open(wpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT wants
    block = os.urandom(commit)
    rng = random.Random(1)
    commits, reads, off = [], [], 0
    windows = Windows()
    print("ready", flush=True)
    start_unix, start = time.time(), time.monotonic()
    while not stop:
        t = time.monotonic()
        os.pwrite(wfd, block, off)
        os.fdatasync(wfd)
        t1 = time.monotonic()
        commits.append(t1 - t)
        windows.add(t1 - start, t1 - t)
        off = (off + commit) % (64 << 20)
        os.preadv(rfd, [buf], rng.randrange(READ_FILE // BLOCK) * BLOCK)
        reads.append(time.monotonic() - t1)
    runtime = time.monotonic() - start
    os.close(rfd)
    os.close(wfd)
    with open(out, "w") as f:
        json.dump({"runtime_s": round(runtime, 3), "commit": pct(commits), "read": pct(reads),
                   "commit_bytes": commit, "start_unix": round(start_unix, 3), "window_s": WINDOW_S,
                   "windows": windows.close(), "windows_truncated": windows.truncated}, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], *(int(x) for x in sys.argv[3:4]))
