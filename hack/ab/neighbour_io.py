"""A neighbour on the disk: a database's commits and point reads, or point
reads alone.

    python3 neighbour_io.py DIR OUT [COMMIT_BYTES] [--workload commits|reads] [--read-file BYTES]

Workload "commits" (the default) alternates a commit (a pwrite of
COMMIT_BYTES, 4 KiB by default, then fdatasync) and a 4 KiB read at a
random offset of a 64 MiB file with O_DIRECT (so that it reaches the disk,
not the page cache), in files under DIR. Workload "reads" makes only 4 KiB
O_DIRECT reads at random offsets of a file of its own, 2 GiB by default
(--read-file), one after the other: no writes, no fdatasync. Either runs
until SIGTERM, then writes its latencies' percentiles as JSON to OUT. Its
read file is written once, with random bytes (every block allocated on the
disk, none of it left in the page cache) and kept for the next run while
it has its size and its blocks; a write that fails or is stopped removes
it. Prints "ready" once its files exist.

OUT also has the workload's own operations (commits, or reads for
"reads") over time, in windows of WINDOW_S by completion (Windows): per
window its start (seconds from start_unix, the wall clock when the first
operation began), how many completed in it and their p50, p99 and longest
latency (ms; null in a window where none completed). At most MAX_WINDOWS
are kept (windows_truncated says when more ran)."""
import argparse
import json
import mmap
import os
import random
import signal
import time

WORKLOADS = ("commits", "reads")
# the read file's size per workload
READ_FILE = {"commits": 64 << 20, "reads": 2 << 30}
READ_NAME = {"commits": "reads", "reads": "read-file"}
BLOCK = 4096
CHUNK = 1 << 20  # the read file is written in chunks of this
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


class Stopped(Exception):
    pass


def on_disk(path, size):
    """Whether path is a file of size bytes with a block on the disk for each of them."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    return st.st_size == size and st.st_blocks * 512 >= size


def read_file(path, size, stop=()):
    """Make path a file of size random bytes, each of them written to the
    disk (a sparse or preallocated file would answer reads of its holes
    without the disk), then fsynced and dropped from the page cache; unless
    it is one already (on_disk). Space for it is reserved first, so a disk
    without room fails at once. Raises Stopped when stop (a list) fills
    while it is written; the file is removed when the write does not end."""
    if on_disk(path, size):
        return
    try:
        with open(path, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, size)
            for i in range(0, size, CHUNK):
                if stop:
                    raise Stopped()
                f.write(os.urandom(min(CHUNK, size - i)))
            f.flush()
            os.fsync(f.fileno())
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        if not on_disk(path, size):
            raise OSError(f"{path}: {size} bytes written, fewer on the disk")
    except BaseException:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        raise


def main(d, out, commit=BLOCK, workload="commits", read_bytes=None):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    commits_too = workload == "commits"
    size = read_bytes or READ_FILE[workload]
    rpath, wpath = os.path.join(d, READ_NAME[workload]), os.path.join(d, "commits")
    try:
        read_file(rpath, size, stop)
    except Stopped:
        return
    rfd = os.open(rpath, os.O_RDONLY | os.O_DIRECT)
    wfd = os.open(wpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) if commits_too else None
    buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT wants
    block = os.urandom(commit) if commits_too else None
    rng = random.Random(1)
    commits, reads, off = [], [], 0
    windows = Windows()  # of the workload's own operations: commits, or reads
    print("ready", flush=True)
    start_unix, start = time.time(), time.monotonic()
    while not stop:
        t = time.monotonic()
        if commits_too:
            os.pwrite(wfd, block, off)
            os.fdatasync(wfd)
            t1 = time.monotonic()
            commits.append(t1 - t)
            windows.add(t1 - start, t1 - t)
            off = (off + commit) % (64 << 20)
            t = t1
        os.preadv(rfd, [buf], rng.randrange(size // BLOCK) * BLOCK)
        t1 = time.monotonic()
        reads.append(t1 - t)
        if not commits_too:
            windows.add(t1 - start, t1 - t)
    runtime = time.monotonic() - start
    os.close(rfd)
    if wfd is not None:
        os.close(wfd)
    with open(out, "w") as f:
        json.dump({"runtime_s": round(runtime, 3), "workload": workload, "commit": pct(commits), "read": pct(reads),
                   "commit_bytes": commit if commits_too else None, "read_file_bytes": size,
                   "start_unix": round(start_unix, 3), "window_s": WINDOW_S,
                   "windows": windows.close(), "windows_truncated": windows.truncated}, f)


def size_arg(s):
    n = int(s)
    if n < BLOCK or n % BLOCK:
        raise argparse.ArgumentTypeError(f"want a multiple of {BLOCK} bytes, got {s}")
    return n


if __name__ == "__main__":
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("dir")
    a.add_argument("out")
    a.add_argument("commit", nargs="?", type=int, default=BLOCK, help="bytes each commit writes")
    a.add_argument("--workload", choices=WORKLOADS, default="commits")
    a.add_argument("--read-file", type=size_arg, help="bytes of the read file")
    x = a.parse_args()
    main(x.dir, x.out, x.commit, x.workload, x.read_file)
