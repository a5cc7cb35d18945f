"""A checkpoint workload to record a ZNS trace from (hack/zoned/zns-record.sh).

Memory holders (build/images/memholder.tar, a few MiB each) checkpoint with
--leave-running at intervals of their own, each keeping its last few
checkpoints (the older ones deleted), and some are removed with their
checkpoints and replaced by new holders. Every container has its own
interval, retention and lifetime, drawn from a seed; when each operation
happens is whatever the daemon makes of them running together (up to
`workers` at once). A patched daemon logs every checkpoint created and
deleted (0035), and `python3 -m ab.zns trace-from-log` turns its log into
the trace.

    PYTHONPATH=hack python3 -m ab.zns_record [--seconds 240] [--containers 10] [--seed 1]

runs on the daemon DOCKER_HOST names (hack/hosts/daemon.sh up patched) and prints
what it did as JSON.
"""
import argparse
import collections
import heapq
import json
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from . import units

SIZES_MIB = (2, 3, 4, 6, 8)  # what each holder holds (its image is about that and 0.5 MiB)
INTERVALS_S = (5, 8, 12, 20, 30)
KEEPS = (1, 2, 3, 5)
PREFIX = "zr-"  # every container the workload makes


@dataclass
class Holder:
    """One memory holder: its parameters, drawn by draw(), and its state."""
    slot: int
    gen: int
    mib: int
    interval_s: float
    keep: int
    ends_s: float  # replaced at this time since the start (inf: lives to the end)
    skip: float  # chance that a checkpoint of it is skipped (busy)
    late: float  # chance that its retention lets one more live until the next checkpoint
    kept: collections.deque = field(default_factory=collections.deque)
    taken: int = 0
    gone: bool = False  # removed: checkpoints of it still queued are dropped
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def name(self):
        return f"{PREFIX}{self.slot}-{self.gen}"


def draw(rng, slot, gen, now_s, seconds, replace=0.4, intervals=INTERVALS_S):
    """A holder's parameters: its size, interval and retention at random;
    with chance `replace`, removed (with its checkpoints) and replaced at a
    time between 30% and 80% of what is left of the run."""
    ends = float("inf")
    if rng.random() < replace:
        ends = now_s + (seconds - now_s) * rng.uniform(0.3, 0.8)
    return Holder(slot, gen, rng.choice(SIZES_MIB), float(rng.choice(intervals)), rng.choice(KEEPS), ends,
                  skip=rng.choice((0.0, 0.1, 0.25)), late=rng.choice((0.0, 0.2)))


class Workload:
    def __init__(self, containers, seconds, seed, workers=3, docker="docker", out=sys.stderr, intervals=INTERVALS_S,
                 replace=0.4):
        self.rng = random.Random(seed)
        self.seconds, self.workers, self.docker, self.out = seconds, workers, docker, out
        self.intervals, self.replace_p = intervals, replace
        self.holders = [draw(self.rng, i, 0, 0.0, seconds, replace, intervals) for i in range(containers)]
        self.counts = collections.Counter()
        self.mu = threading.Lock()
        self.failures = []

    def run_cmd(self, *args, timeout=120):
        try:
            p = subprocess.run([self.docker, *args], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, f"timed out after {timeout} s"
        return p.returncode == 0, (p.stderr or p.stdout).strip()

    def count(self, what, err=None):
        with self.mu:
            self.counts[what] += 1
            if err is not None:
                self.failures.append(err)
                print(f"zns-record: {err}", file=self.out, flush=True)

    def start(self, h):
        ok, msg = self.run_cmd("run", "-d", "--name", h.name, "ab/memholder", "memholder", str(h.mib))
        if not ok:
            raise RuntimeError(f"docker run {h.name}: {msg}")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ok, text = self.run_cmd("logs", h.name)
            if ok and "verified_passes=" in text:
                self.count("started")
                return
            time.sleep(0.2)
        raise RuntimeError(f"memory holder {h.name} never got ready")

    def checkpoint(self, h, rng):
        if not h.lock.acquire(blocking=False):
            self.count("busy")  # its last one has not finished
            return
        try:
            if h.gone:
                return
            if rng.random() < h.skip:
                self.count("skipped")
                return
            name = f"cp{h.taken}"
            h.taken += 1
            ok, msg = self.run_cmd("checkpoint", "create", "--leave-running", h.name, name)
            if not ok:
                self.count("create_failed", f"checkpoint create {h.name} {name}: {msg}")
                return
            self.count("created")
            h.kept.append(name)
            while len(h.kept) > h.keep and not (len(h.kept) == h.keep + 1 and rng.random() < h.late):
                old = h.kept.popleft()
                ok, msg = self.run_cmd("checkpoint", "rm", h.name, old)
                self.count("deleted" if ok else "delete_failed", None if ok else f"checkpoint rm {h.name} {old}: {msg}")
        finally:
            h.lock.release()

    def replace(self, old, now_s):
        with old.lock:
            old.gone = True
            ok, msg = self.run_cmd("rm", "-f", old.name)
            self.count("removed" if ok else "remove_failed", None if ok else f"rm -f {old.name}: {msg}")
            with self.mu:
                new = draw(self.rng, old.slot, old.gen + 1, now_s, self.seconds, self.replace_p, self.intervals)
            self.start(new)
            self.holders[old.slot] = new
            return new

    def run(self):
        """Start every holder, then checkpoint, delete and replace until
        `seconds` have passed (what is under way then finishes)."""
        for h in self.holders:
            self.start(h)
        t0 = time.monotonic()
        due = [(self.rng.uniform(0, h.interval_s), h.slot) for h in self.holders]
        heapq.heapify(due)
        rngs = {h.slot: random.Random(self.rng.random()) for h in self.holders}
        busy = {}
        with ThreadPoolExecutor(self.workers) as pool:
            while due:
                at, slot = heapq.heappop(due)
                if at >= self.seconds:
                    break
                time.sleep(max(0.0, at - (time.monotonic() - t0)))
                h = self.holders[slot]
                if slot in busy and not busy[slot].done():
                    # A replacement under way: try again a little later.
                    heapq.heappush(due, (at + 1.0, slot))
                    continue
                if at >= h.ends_s:
                    busy[slot] = pool.submit(self.replace, h, at)
                    heapq.heappush(due, (at + 2.0, slot))
                    continue
                pool.submit(self.checkpoint, h, rngs[slot])
                heapq.heappush(due, (at + h.interval_s * rng_jitter(rngs[slot]), slot))
            for f in busy.values():
                f.result()
        return {"seconds": self.seconds, "counts": dict(sorted(self.counts.items())), "failures": self.failures,
                "holders_at_end": [{"name": h.name, "mib": h.mib, "interval_s": h.interval_s, "keep": h.keep}
                            for h in self.holders]}


def rng_jitter(rng, spread=0.1):
    return 1 + rng.uniform(-spread, spread)


def _duration(text):
    try:
        return units.duration(text, "s")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main(argv=None):
    p = argparse.ArgumentParser(prog="ab.zns_record", description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=_duration, default=240.0, help="how long: 240, 240s, 4m (default 240 s)")
    p.add_argument("--containers", type=int, default=10, help="holders at once (default 10)")
    p.add_argument("--workers", type=int, default=3, help="operations at once (default 3)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(argv)
    if a.containers < 1 or a.workers < 1 or a.seconds <= 0:
        p.error("--containers, --workers and --seconds: want at least 1")
    w = Workload(a.containers, a.seconds, a.seed, a.workers)
    try:
        doc = w.run()
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    json.dump(doc, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
