"""What every kind measures with: the order of the measurements (the
flavors in an order drawn per repetition, balanced over the repetitions,
taking turns within one), progress on stderr, one timed command under
hyperfine, and the JSON line a measuring program prints."""
import datetime
import json
import os
import random
import sys
import time

from . import hosts


class Progress:
    def __init__(self, total):
        self.total, self.done, self.start = total, 0, time.monotonic()

    def step(self, what):
        self.done += 1
        el = time.monotonic() - self.start
        eta = el / self.done * (self.total - self.done)
        sys.stderr.write(f"[{self.done}/{self.total}] {what}  (elapsed {fmt_t(el)}, left ~{fmt_t(eta)})\n")
        sys.stderr.flush()


def fmt_t(s):
    s = int(s)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def seed_of(started):
    """The seed of a run's order when its suite gives none (order_seed):
    its start time (results.json's started, UTC) in seconds since 1970."""
    t = datetime.datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    return int(t.timestamp())


def williams(n):
    """A Williams square of n symbols: n orders of 0..n-1 in which each
    symbol takes each position once and, for even n, follows each other
    symbol once (for odd n, together with its mirror image)."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    return [[(x + i) % n for x in first] for i in range(n)]


def orders(flavors, repetitions, seed):
    """Each repetition's order of the flavors, drawn from seed (the same
    seed and flavors give the same orders). Sorted or alternated orders
    put a flavor at the same place every time (of three, the middle one
    always in the middle), and whatever the place does (a cache the one
    before warmed, a disk the one before left busy) would read as the
    flavor's; drawn, balanced orders spread it over every flavor alike.

    The repetitions go in blocks of as many as there are flavors; a
    block is the rows of a Latin square in an order drawn per block, so
    over every whole block each flavor runs once in each position. The
    square is a Williams square with the flavors in places drawn once
    (its mirror in every other block when their number is odd), so each
    flavor also runs right after each other equally often. A last,
    partial block takes rows of its square without repeating one: no
    flavor is more than once more in a position than another."""
    names = sorted(flavors)
    n = len(names)
    if n < 2:
        return [list(names) for _ in range(repetitions)]
    rng = random.Random(seed)
    labels = rng.sample(names, n)
    square = williams(n)
    out, block = [], 0
    while len(out) < repetitions:
        rows = square if n % 2 == 0 or block % 2 == 0 else [row[::-1] for row in square]
        out += [[labels[x] for x in row] for row in rng.sample(rows, n)]
        block += 1
    return out[:repetitions]


def arrange(variants, order, rep, repetitions, seed):
    """A repetition's variants (tuples, the flavor first) in the order
    they run (interleave): the flavors taking turns in order (the
    repetition's, from orders), and each flavor's own variants (a scan's
    settings, the patched daemon's arms) in an order drawn for repetition
    rep of repetitions as the flavors' is (orders, from seed and the
    flavor), so that no setting always runs right before or after the
    same one of another flavor."""
    by = {}
    for v in variants:
        by.setdefault(v[0], []).append(v)
    mine = []
    for f, vs in by.items():
        turn = orders(range(len(vs)), repetitions, f"{seed}:{f}")[rep]
        mine += [vs[i] for i in turn]
    return interleave(mine, order)


def interleave(variants, order):
    """A repetition's variants (tuples, the flavor first) with the
    flavors taking turns in order, one variant each (A1 B1 A2 B2 A3), each
    flavor's variants in the order given."""
    by = {}
    for v in variants:
        if v[0] not in order:
            raise ValueError(f"flavor {v[0]} is not in the repetition's order {order}")
        by.setdefault(v[0], []).append(v)
    names = [f for f in order if f in by]
    out, i = [], 0
    while any(by.values()):
        f = names[i % len(names)]
        if by[f]:
            out.append(by[f].pop(0))
        i += 1
    return out


def rotate(items, rep):
    """items started at a different one each repetition, so that no item is
    always measured first (or right after the same one)."""
    items = list(items)
    k = rep % len(items) if items else 0
    return items[k:] + items[:k]


def hyperfine(tmp, env, cmd, prepare=None, failed="failed", timeout=None):
    """One run of cmd under hyperfine (prepare: its --prepare, untimed), with
    env, its JSON export in directory tmp: (seconds, None), or (None, the
    last line of what it printed, or failed). timeout: seconds after which
    it is ended, preparation included, and fails with "timeout after N s"
    (hosts.sh)."""
    out = os.path.join(tmp, "hf.json")
    args = ["hyperfine", "--runs", "1", "--style", "none", "--export-json", out]
    if prepare:
        args += ["--prepare", prepare]
    p = hosts.sh(*args, cmd, env=env, check=False, timeout=timeout)
    if p.returncode != 0:
        return None, (p.stderr or failed).strip().splitlines()[-1][:300]
    with open(out) as f:
        return json.load(f)["results"][0]["times"][0], None


def parse_json_line(text):
    """The last line of text that is a JSON object, or None."""
    for line in reversed((text or "").strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None
