"""The numbers docs/zns-study.md computes itself, from the committed files
they come from, and whether the page quotes each as computed.

No report prints these: the recorded trace's sizes and lifetimes (from its
CSV), the sweep's trace ranges and predictor hit rates (`traces` in the
sweep's results), the peak fills of section 4 (each earlier replay's
`peak_live_bytes` against its device), the cells where a policy's reserves
1 and 2 differ, the seeds that give most of zone-pack's failed creates, and
that the policies a later sweep did not change are the same in every cell.

    python3 -m ab.zns_page [--check docs/zns-study.md]

Prints each number as the page words it, with where it comes from. With
--check, exits 1 when the page does not quote one of them as printed (a
changed result, or a page edited without its source), 2 when a source
cannot be read."""
import argparse
import collections
import csv
import gzip
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
M = os.path.join(ROOT, "docs", "measurements")
RECORDED = os.path.join(ROOT, "hyperfine-suites", "traces", "zns-recorded-2026-11-26.csv")
# the sweep whose traces and reserve cells section 2.3 and 3.1 describe,
# and the one after 0096 and 0097 (zone-pack changed, nothing else)
SWEEP = "2026-12-02-07f06510e7-zns-sweep"
SWEEP_BEFORE = "2026-11-26-30745408c0-zns-sweep"
SWEEP_AFTER = "2026-12-02-99078330e1-zns-sweep"
# section 4's replays: run, the namespace it is read against
REPLAYS = (
    ("2026-11-25-a77dea7c5f-zns-replay", "zns-replay"),
    ("2026-11-25-a77dea7c5f-zns-replay-holdout", "the holdout"),
)
SHIPPING = "2026-11-25-a77dea7c5f-zns-replay-shipping"
BLOCK = 4096
GIB, MIB = 1 << 30, 1 << 20


def load(run):
    """A committed run's results (results.json or results.json.gz)."""
    for name, opener in (("results.json", open), ("results.json.gz", gzip.open)):
        path = os.path.join(M, run, name)
        if os.path.exists(path):
            with opener(path, "rt") as f:
                return json.load(f)
    raise FileNotFoundError(f"docs/measurements/{run}: no results.json or results.json.gz")


def recorded(path=RECORDED):
    """The recorded trace's numbers of section 2.3: sizes padded to the
    4 KiB block the replay writes, lifetimes of the deleted checkpoints."""
    creates, lifetimes, containers = {}, [], set()
    live = peak = 0
    deletes = 0
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            k = (r["container"], r["checkpoint"])
            containers.add(r["container"])
            if r["op"] == "create":
                size = -(-int(r["bytes"]) // BLOCK) * BLOCK
                creates[k] = (float(r["time_s"]), size)
                live += size
                peak = max(peak, live)
            elif r["op"] == "delete":
                t, size = creates[k]
                lifetimes.append(float(r["time_s"]) - t)
                live -= size
                deletes += 1
            else:
                raise ValueError(f"{path}: op {r['op']!r}")
    sizes = [s for _, s in creates.values()]
    src = os.path.relpath(path, ROOT)
    return [
        (f"{len(creates)} creates ({sum(sizes) / GIB:.2f} GiB, {min(sizes) / MIB:.1f}-{max(sizes) / MIB:.1f} MiB each)", src),
        (f"{deletes} deletes", src),
        (f"{len(containers)} containers, peak live data {peak / MIB:.0f} MiB", src),
        (f"lifetimes from {statistics.quantiles(lifetimes, n=10)[0]:.1f} s (10th percentile) over "
         f"{statistics.median(lifetimes):.1f} s (median) to {max(lifetimes):.0f} s", src),
    ]


def traces(doc):
    """The sweep's traces of section 2.3: ranges over the 30 seeds of the
    32 MiB device, means over the large devices' 5, the predictors' hits."""
    src = f"{SWEEP}/results.json.gz"
    t = list(doc["traces"].values())
    creates = [x["creates"] for x in t]
    peak = [x["peak_live_bytes"] / GIB for x in t]
    mean = statistics.mean
    out = [
        (f"{min(creates)}-{max(creates)} creates ({mean(creates):.0f} on average), "
         f"peak live data {min(peak):.2f}-{max(peak):.2f} GiB", f"{src} traces"),
        (f"{mean(x['hint_within_2x'] for x in t):.0%} of deleted checkpoints lived within a factor 2",
         f"{src} traces"),
        (f"{mean(x['history_within_2x'] for x in t):.0%} within a factor 2", f"{src} traces"),
    ]
    hits = []
    for dev in ("zn540", "pm1731a"):
        t = list(doc[f"traces:{dev}"].values())
        out.append((f"about {mean(x['creates'] for x in t):.0f} creates, "
                    f"{mean(x['peak_live_bytes'] for x in t) / GIB:.0f} GiB peak live data, "
                    f"{mean(x['bytes'] / x['duration_s'] for x in t) / 1e6:.0f} MB/s", f"{src} traces:{dev}"))
        hits.append(f"{mean(x['hint_within_2x'] for x in t):.0%} and {mean(x['history_within_2x'] for x in t):.0%}")
    out.append((", ".join(hits), f"{src} traces:zn540, traces:pm1731a"))
    return out


def fills():
    """Section 4's peak fills: each replay's peak live data against its
    2 GiB namespace, and the shipping replay's against the zones outside
    the logs' reserve of its device."""
    out = []
    for run, name in REPLAYS:
        doc = load(run)
        peak = max(e["metrics"]["peak_live_bytes"] for e in doc["results"])
        out.append((f"{100 * peak / (2 * GIB):.1f}% {'of the 2 GiB namespace in ' if name == 'zns-replay' else 'in '}{name}",
                    f"{run}/results.json"))
    doc = load(SHIPPING)
    g = doc["geometry"]  # the 2 GiB zones of 1077 MiB section 4 quotes
    peak = max(x["metrics"]["peak_live_bytes"] for x in doc["results"])
    usable = g["zones"] - doc["results"][0]["params"]["gc_reserve"]
    out.append((f"({peak / MIB:.1f} MiB, `results.json`) was {100 * peak / (usable * g['zone_capacity']):.1f}% "
                f"of the {usable} zones outside the logs' reserve", f"{SHIPPING}/results.json"))
    return out


def sweep_cells(doc):
    return {(e.get("device", "main"), e["seed"], e["half"], e["reserve"], e["fill"], e["policy"]): e
            for e in doc["results"] if e["scenario"] == "sweep"}


def reserves(doc):
    """The cells (seed and fill, report seeds, 32 MiB zones) where a
    policy's results at reserves 1 and 2 differ, and the seeds that give
    most of zone-pack's failed creates at reserve 1 and 95% (section 3.1)."""
    cells = sweep_cells(doc)
    m = lambda x: (x["failed"], x["relocated_bytes"], x["create_latency_p99_s"])
    differ, n = collections.Counter(), collections.Counter()
    for (d, seed, half, r, f, p), e in cells.items():
        if d == "main" and half == "report" and r == 1:
            n[p] += 1
            differ[p] += m(e["metrics"]) != m(cells[(d, seed, half, 2, f, p)]["metrics"])
    if len(set(n.values())) != 1:
        raise ValueError(f"{SWEEP}: policies with different cell counts: {dict(n)}")
    logs = [v for p, v in differ.items() if p not in ("zone-pack", "zone-aware", "zone-tail")]
    src = f"{SWEEP}/results.json.gz"
    out = [(f"differ in {min(logs)}-{max(logs)} of {next(iter(n.values()))} cells, zone-pack's in {differ['zone-pack']}", src)]
    failed = {k[1]: e["metrics"]["failed"] for k, e in cells.items()
              if k[0] == "main" and k[2] == "report" and k[3] == 1 and k[5] == "zone-pack" and abs(k[4] - 0.95) < 1e-9}
    top = sorted(failed, key=lambda s: (-failed[s], s))[:2]
    out.append((f"seeds {min(top)} and {max(top)} give {sum(failed[s] for s in top)} of its {sum(failed.values())}",
                f"{src} failed, zone-pack, reserve 1, 95%"))
    return out


def unchanged(before, after, policies):
    """Each of policies, the cells of both sweeps it has: (agreeing, all)."""
    a, b = sweep_cells(before), sweep_cells(after)
    out = {}
    for p in policies:
        ks = [k for k in a if k[5] == p]
        out[p] = (sum(a[k]["metrics"] == b.get(k, {}).get("metrics") for k in ks), len(ks))
    return out


def numbers():
    """Every number: (the page's words, where it comes from)."""
    sweep = load(SWEEP)
    out = recorded() + traces(sweep) + fills() + reserves(sweep)
    # "zone-pack's numbers stand (its cells are the same)" (section 4), and
    # every policy but zone-pack the same after 0096 and 0097 (section 3.11)
    for before, after, policies, words in (
            (SWEEP_BEFORE, SWEEP, ("zone-pack", "zone-aware", "zone-tail"), "zone-pack's numbers stand (its cells are the same)"),
            (SWEEP, SWEEP_AFTER, ("shared-log", "multi-log", "hint-log", "oracle", "zone-aware", "zone-tail"),
             "every policy but zone-pack the same in each cell")):
        agree = unchanged(load(before), load(after), policies)
        if all(k == n and n > 0 for k, n in agree.values()):
            out.append((words, f"{before} against {after}: " + ", ".join(f"{p} {k} of {n}" for p, (k, n) in agree.items())))
        else:
            out.append((f"NOT the same: {agree}", f"{before} against {after}"))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m ab.zns_page", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", metavar="PAGE", help="exit 1 unless PAGE quotes every number as printed")
    args = ap.parse_args(argv)
    try:
        got = numbers()
        page = open(args.check).read() if args.check else None
    except (OSError, ValueError, KeyError) as e:
        print(f"zns_page: {e}", file=sys.stderr)
        return 2
    # the page wraps its prose: compare with its whitespace folded
    flat = " ".join(page.split()) if page is not None else None
    missing = 0
    for words, src in got:
        mark = ""
        if flat is not None and " ".join(words.split()) not in flat:
            mark, missing = "NOT IN THE PAGE: ", missing + 1
        print(f"{mark}{words}  [{src}]")
    if missing:
        print(f"zns_page: {args.check} does not quote {missing} of {len(got)} numbers as computed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
