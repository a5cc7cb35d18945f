"""Two runs of a suite compared: did patched/stock change between them?

`python3 -m ab compare A B` takes two results directories of the same kind
(say the same suite run on two commits of the series) and, per comparison
both have (a cell, patched against stock's default, its best or a peer's
best), sets B's patched/stock against A's: the change is exp(mean d_B -
mean d_A), d the pairs' log-ratios of each run, with Welch's t-test on the
two means (the runs are independent: A's repetitions pair with nothing of
B's) and its interval, Holm-adjusted across the comparisons as the
summaries are. The verdict has the summaries' five words, read for B:
better or worse when the adjusted p is below 0.05 (no sign-flip check:
the runs are not paired), level when the interval lies within the margin
(the noise threshold, 5% unless --margin says otherwise), else
inconclusive, failed when either run has no pair.

The two runs were not interleaved: whatever changed on the machine between
them is in the change too. Two commits measured in one run, taking turns,
is what an A/B run is for; this answers the question for runs that exist."""
import math

from . import report, stats


def _welch(a, b):
    """B against A from their paired comparisons (stats.paired): the mean
    log-ratio difference, its standard error and Welch's degrees of
    freedom; None without a spread on both sides."""
    if a.get("log_se") is None or b.get("log_se") is None:
        return None
    va, vb = a["log_se"] ** 2, b["log_se"] ** 2
    se = math.sqrt(va + vb)
    if se == 0:
        return b["log_mean"] - a["log_mean"], 0.0, a["n"] + b["n"] - 2
    df = (va + vb) ** 2 / (va ** 2 / (a["n"] - 1) + vb ** 2 / (b["n"] - 1))
    return b["log_mean"] - a["log_mean"], se, df


def change(a, b):
    """B's patched/stock against A's (paired comparisons of each run): ratio
    (B's over A's), p (Welch), lo/hi at 95% until adjusted, n of each,
    too_few (either below stats.MIN_PAIRS), failed (either side's failed
    repetitions), and what stats.adjust and stats.verdict read."""
    out = {"ratio": None, "lo": None, "hi": None, "p": None, "p_sign": None, "n": min(a["n"], b["n"]),
           "n_a": a["n"], "n_b": b["n"], "failed": a.get("failed", 0) + b.get("failed", 0),
           "too_few": min(a["n"], b["n"]) < stats.MIN_PAIRS, "correction": 1}
    w = _welch(a, b) if a["ratio"] is not None and b["ratio"] is not None else None
    if w is None:
        if a["ratio"] is not None and b["ratio"] is not None:
            out["ratio"] = b["ratio"] / a["ratio"]
        return out
    m, se, df = w
    out["ratio"] = math.exp(m)
    out["log_mean"], out["log_se"], out["df"] = m, se, df
    if se == 0:
        out["p"] = 1.0 if m == 0 else 0.0
    else:
        out["p"] = stats.student_t_p(m / se, df)
    out["level"] = 1 - stats.ALPHA
    if not out["too_few"]:
        lo, hi = stats.t_interval(m, se, df)
        out["lo"], out["hi"] = math.exp(lo), math.exp(hi)
    return out


def compare(doc_a, doc_b, margin=stats.MARGIN):
    """Rows (cell, against, A's comparison, B's, the change, lower is
    better) of every comparison both runs have, the changes adjusted."""
    if doc_a["kind"] != doc_b["kind"]:
        raise ValueError(f"the runs are of different kinds: {doc_a['kind']} and {doc_b['kind']}")
    key = lambda row: (row["cell"], row.get("arm"))
    rows_a = {key(r): r for r in report.comparisons(doc_a, adjust=False)}
    out = []
    for rb in report.comparisons(doc_b, adjust=False):
        ra = rows_a.get(key(rb))
        if ra is None:
            continue
        named_a = dict(report.named(ra))
        for name, b in report.named(rb):
            a = named_a.get(name)
            if a is None:
                continue
            t = change(a, b)
            t["margin"] = margin
            out.append({"cell": rb["cell"] + (f" ({rb['arm']})" if rb.get("arm") else ""), "against": name,
                        "a": a, "b": b, "change": t, "lower_is_better": rb["lower_is_better"]})
    stats.adjust([r["change"] for r in out])
    return out


def table(doc_a, doc_b, margin=stats.MARGIN, paths=None):
    """The Markdown of compare(); paths: the two results directories, named
    in its first line."""
    rows = compare(doc_a, doc_b, margin)
    a, b = "A", "B"
    where = f" (A: {paths[0]}, B: {paths[1]})" if paths else ""
    lines = [f"patched/stock in B against A{where}, suites {doc_a['suite']} and {doc_b['suite']} of kind "
             f"{doc_a['kind']}: the change is B's ratio over A's, Welch's t-test on the two runs' log-ratios, Holm-adjusted "
             f"across the {len(rows)} comparisons, its interval at Holm's level; level within "
             f"{margin:.0%}. The runs were not interleaved: what changed on the machine between them is in "
             "the change too.", "",
             f"| cell | patched against | {a}: ratio (n) | {b}: ratio (n) | change [Holm CI] p | verdict for {b} | MDE |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        t = r["change"]
        ci = report.interval(t) if t["lo"] is not None else ""
        p = f"p={t['p_adj']:.2g}" if "p_adj" in t else ""
        ratio = f"{t['ratio']:.3f}" if t["ratio"] is not None else "-"
        m = stats.mde(t)
        lines.append(f"| {r['cell']} | {r['against']} | {_ratio(r['a'])} | {_ratio(r['b'])} | "
                     f"{' '.join(x for x in (ratio, ci, p) if x)} | "
                     f"{stats.verdict(t, r['lower_is_better'], t.get('p_adj'))} | {'' if m is None else f'{m:.2f}x'} |")
    if not rows:
        lines.append("| (no comparison both runs have) | | | | | | |")
    return "\n".join(lines)


def _ratio(r):
    return "-" if r["ratio"] is None else f"{r['ratio']:.2f} ({r['n']}{', ' + str(r['failed']) + ' failed' if r.get('failed') else ''})"
