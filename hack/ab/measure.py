"""What every kind measures with: the order of the measurements (ABAB over
the flavours, rotated per repetition), progress on stderr, one timed
command under hyperfine, and the JSON line a measuring program prints."""
import json
import os
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


def interleave(variants, rep):
    """ABAB order over the flavours' variants, starting flavour alternating per rep."""
    by = {}
    for v in variants:
        by.setdefault(v[0], []).append(v)
    names = sorted(by, reverse=(rep % 2 == 1))
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
