"""A forest plot of headline ratios: every comparison (patched against
stock's default, its best, each peer's best) of the results directories a
spec lists, each a point at its ratio with its Holm interval, coloured by
its verdict (stats.verdict), on a log axis with 1 and the suite's margin
marked. The numbers are computed from the committed results.json, as the
reports compute them; the spec only chooses the runs and names them.

usage: python3 -m ab.forest SPEC.json OUT.png   (from hack/, PYTHONPATH=.)

SPEC: {"title": "...", "runs": [{"dir": "docs/measurements/...", "label":
"..."}, ...]}, dirs relative to the repository's root. OUT.png is written
with OUT.md beside it: the rows drawn, as a table."""
import json
import os
import sys
import textwrap

from . import hosts, report, stats

COLOURS = {"better": "#1a7f37", "worse": "#cf222e", "level": "#0969da", "inconclusive": "#6e7781",
           "failed": "#000000"}


def rows(spec):
    """The comparisons drawn: (run label, cell, against, comparison, lower is
    better), in the spec's order."""
    out = []
    for run in spec["runs"]:
        doc = report.load(os.path.join(hosts.ROOT, run["dir"]))
        for row in report.comparisons(doc):
            cell = row["cell"]
            for against, r in report.named(row):
                if r["ratio"] is not None and r["lo"] is not None:
                    out.append((run["label"], cell, against, r, row["lower_is_better"]))
    return out


def verdict_word(r, lower):
    return stats.verdict(r, lower, r.get("p_adj")).split(" (")[0]


def table(drawn):
    lines = ["| run | cell | patched against | ratio [Holm CI] | n | verdict |", "| --- | --- | --- | --- | --- | --- |"]
    for label, cell, against, r, lower in drawn:
        lines.append(f"| {label} | {cell} | {against} | {r['ratio']:.2f} {report.interval(r)} | {r['n']} | "
                     f"{stats.verdict(r, lower, r.get('p_adj'))} |")
    return "\n".join(lines) + "\n"


def draw(spec, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    drawn = rows(spec)
    if not drawn:
        raise ValueError("the spec's runs have no comparison with an interval")
    n = len(drawn)
    fig, ax = plt.subplots(figsize=(9, 0.28 * n + 2.2))  # a row a quarter inch, and the title, axis, legend
    lo = min(r["lo"] for *_, r, _ in drawn)
    hi = max(r["hi"] for *_, r, _ in drawn)
    margin = stats.MARGIN
    ax.axvspan(1 - margin, 1 + margin, color="#ddf4ff", zorder=0, label=f"level: within {margin:.0%}")
    ax.axvline(1.0, color="#57606a", linewidth=0.8, zorder=1)
    seen = set()
    for i, (label, cell, against, r, lower) in enumerate(drawn):
        y = n - 1 - i
        v = verdict_word(r, lower)
        c = COLOURS[v]
        ax.plot([r["lo"], r["hi"]], [y, y], color=c, linewidth=1.6, zorder=2)
        ax.plot([r["ratio"]], [y], "o", color=c, markersize=4, zorder=3, label=None if v in seen else v)
        seen.add(v)
    ax.set_yticks(range(n))
    ax.set_yticklabels([f"{label}: {cell} vs {against}" for label, cell, against, _, _ in reversed(drawn)], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(min(lo, 1 - margin) / 1.1, max(hi, 1 + margin) * 1.1)
    ax.set_xlabel("patched / other (lower is faster for times), Holm intervals")
    ax.set_ylim(-0.7, n - 0.3)
    ax.set_title(textwrap.fill(spec.get("title", ""), 90), fontsize=8)
    height = 0.28 * n + 2.2
    fig.legend(*ax.get_legend_handles_labels(), fontsize=7, loc="lower center", ncol=5, frameon=False)
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    with open(os.path.splitext(out)[0] + ".md", "w") as f:
        f.write(table(drawn))
    return drawn


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    print(f"{len(draw(spec, sys.argv[2]))} comparisons drawn into {sys.argv[2]}")
