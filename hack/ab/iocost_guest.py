"""The kernel's I/O controller beside the daemon's own pacing, on one
neighbour, in the zoned guest (hack/zoned/zns-iocost-vm.sh).

The guest (hack/zoned/zns-vm/docker-iocost.sh) leaves runs.tsv (per run: the
variant, the repetition, the checkpoint's start and end in Unix ns, the
disk's sectors written during it, the bytes the daemon says it wrote) and,
per run, VARIANT-REP.commits(.gz): the neighbour's commits ("start
latency", ns).
`report` takes the commits that started during each run's checkpoint (for
"alone", during the same length of time without one) and sets, per variant,
the checkpoint's time and the neighbour's p50, p99 and longest commit beside
the same repetition's "alone", paired by repetition (ab.stats, Holm over the
report's tests). It writes README.md, iocost.json and iocost.png.

    PYTHONPATH=hack python3 -m ab.iocost_guest report DIR
"""
import argparse
import csv
import gzip
import json
import os
import statistics
import sys

from . import stats
from .report import fmt_ratio

MiB = 1 << 20
ORDER = ["alone", "nocap", "cap", "auto", "iocost", "bfq"]
WHAT = {
    "alone": "no checkpoint",
    "nocap": "no option: CRIU writes the images to the disk",
    "cap": "checkpoints.write-pace \"fixed\", a fixed cap",
    "auto": 'checkpoints.write-pace "device"',
    "iocost": "checkpoints.io-weight, blk-iocost on the disk",
    "bfq": "checkpoints.io-weight, BFQ on the disk",
}


def pct(xs, q):
    """The q-quantile (nearest rank) of xs."""
    xs = sorted(xs)
    if not xs:
        return None
    i = max(1, int(len(xs) * q + 0.999999)) - 1
    return xs[min(i, len(xs) - 1)]


def commits(path):
    """(start_ns, latency_ns) of a run's commits (path, or path.gz as
    hack/zoned/zns-iocost-vm.sh keeps them)."""
    out = []
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 2:
                raise ValueError(f"{path}:{n}: not 'start latency': {line!r}")
            out.append((int(parts[0]), int(parts[1])))
    return out


def runs(d):
    """runs.tsv's rows, typed."""
    out = []
    with open(os.path.join(d, "runs.tsv")) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            out.append({
                "variant": row["variant"], "rep": int(row["rep"]),
                "start_ns": int(row["start_ns"]), "end_ns": int(row["end_ns"]),
                "written_mib": int(row["sectors_written"]) * 512 / MiB,
                "daemon_written_mib": int(row["daemon_written"]) / MiB if row.get("daemon_written") else None,
            })
    return out


def summarize(d):
    """Per run and per variant: the checkpoint's time, the neighbour's
    latencies during it, and the paired comparisons."""
    per_run = []
    for r in runs(d):
        cs = commits(os.path.join(d, f"{r['variant']}-{r['rep']}.commits"))
        lat = [c[1] / 1e6 for c in cs if r["start_ns"] <= c[0] < r["end_ns"]]
        r = dict(r, seconds=(r["end_ns"] - r["start_ns"]) / 1e9, commits=len(lat),
                 p50_ms=pct(lat, 0.5), p99_ms=pct(lat, 0.99), max_ms=max(lat) if lat else None)
        per_run.append(r)
    variants = [v for v in ORDER if any(r["variant"] == v for r in per_run)]
    by = {v: {r["rep"]: r for r in per_run if r["variant"] == v} for v in variants}

    def col(v, key):
        """A variant's key by repetition; a run without one (no commit in
        the checkpoint's window: the neighbour stalled throughout) is a
        failure of its repetition, which the comparison counts."""
        return stats.Reps({k: r[key] for k, r in by[v].items() if r[key] is not None},
                          failed={k for k, r in by[v].items() if r[key] is None})

    rows, tests = [], []
    for v in variants:
        rs = list(by[v].values())
        row = {"variant": v, "what": WHAT.get(v, v), "n": len(rs),
               "failures": sum(1 for r in rs if not r["commits"])}
        for key in ("seconds", "p50_ms", "p99_ms", "max_ms", "commits", "written_mib"):
            vals = [r[key] for r in rs if r[key] is not None]
            row[key] = statistics.median(vals) if vals else None
        if v != "alone" and "alone" in by:
            row["p99_vs_alone"] = stats.paired(col(v, "p99_ms"), col("alone", "p99_ms"))
            row["max_vs_alone"] = stats.paired(col(v, "max_ms"), col("alone", "max_ms"))
            tests += [row["p99_vs_alone"], row["max_vs_alone"]]
        for ref in ("cap", "auto"):
            if v in ("iocost", "bfq") and ref in by:
                row[f"seconds_vs_{ref}"] = stats.paired(col(v, "seconds"), col(ref, "seconds"))
                row[f"p99_vs_{ref}"] = stats.paired(col(v, "p99_ms"), col(ref, "p99_ms"))
                tests += [row[f"seconds_vs_{ref}"], row[f"p99_vs_{ref}"]]
        rows.append(row)
    stats.adjust(tests)
    qos = ""
    if os.path.exists(os.path.join(d, "qos")):
        with open(os.path.join(d, "qos")) as f:
            qos = f.read().strip()
    return {"runs": per_run, "variants": rows, "qos": qos}


def _f(x, fmt="{:.2f}"):
    return "" if x is None else fmt.format(x)


def plot(s, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for v in [r["variant"] for r in s["variants"]]:
        rs = [r for r in s["runs"] if r["variant"] == v and r["p99_ms"] is not None]
        ax.scatter([r["seconds"] for r in rs], [r["p99_ms"] for r in rs], label=v)
    ax.set_xlabel("checkpoint (alone: the same time without one), s")
    ax.set_ylabel("neighbour's p99 commit latency during it, ms")
    ax.set_yscale("log")
    ax.set_title("checkpoint time against the neighbour's p99, per run (QEMU TCG guest)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def report(d):
    s = summarize(d)
    with open(os.path.join(d, "iocost.json"), "w") as f:
        json.dump(s, f, indent=1)
    plot(s, os.path.join(d, "iocost.png"))
    lines = [
        "# checkpoints.io-weight beside the daemon's pacing, in the zoned guest",
        "",
        "Made by `hack/zoned/zns-iocost-vm.sh`; rebuilt from this directory's files with",
        "`PYTHONPATH=hack python3 -m ab.iocost_guest report DIR`. The guest runs under",
        "QEMU's TCG: its times are an emulator's, compare ratios within this run. Medians",
        "per variant; the ratios are paired by repetition (geometric mean, Holm-adjusted p",
        "and verdict, the interval at the level Holm tested it at, so that it excludes 1",
        "exactly when the verdict is better or worse, the sign-flip check; lower is better).",
        "",
        "blk-iocost's settings in the iocost variant (io.cost.qos, io.cost.model):",
        "",
        "```",
        s["qos"],
        "```",
        "",
        "| variant | n | failures | checkpoint s | disk MiB written | neighbour p50 ms | p99 ms | longest ms | p99 vs alone | longest vs alone |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in s["variants"]:
        lines.append(f"| {r['variant']} ({r['what']}) | {r['n']} | {r['failures']} | {_f(r['seconds'])} | "
                     f"{_f(r['written_mib'], '{:.0f}')} | {_f(r['p50_ms'])} | {_f(r['p99_ms'])} | {_f(r['max_ms'])} | "
                     f"{fmt_ratio(r.get('p99_vs_alone'), True)} | {fmt_ratio(r.get('max_vs_alone'), True)} |")
    lines += ["", "| the cgroup against the daemon's pacing | checkpoint time | neighbour p99 |", "| --- | --- | --- |"]
    for r in s["variants"]:
        for ref in ("cap", "auto"):
            if f"seconds_vs_{ref}" in r:
                lines.append(f"| {r['variant']} / {ref} | {fmt_ratio(r[f'seconds_vs_{ref}'], True)} | {fmt_ratio(r[f'p99_vs_{ref}'], True)} |")
    lines += ["", "![checkpoint time against the neighbour's p99](iocost.png)", ""]
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write("\n".join(lines))
    return s


def main(argv=None):
    p = argparse.ArgumentParser(prog="ab.iocost_guest", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("report", help="README.md, iocost.json and iocost.png of a run's directory")
    r.add_argument("dir")
    a = p.parse_args(argv)
    try:
        report(a.dir)
    except (OSError, ValueError, KeyError) as e:
        print(f"ab.iocost_guest: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
