"""results.json -> report.md and PNG plots. Everything shown is computed from
the JSON; nothing is scraped from command output.

What every report has is here: the header, the summary (patched against
stock per cell), every sample, the published numbers, a bar plot per unit.
The kind's module (hack/ab/kinds/) names its cells and adds its sections
and plots; a kind whose report is of another shape (zns) writes it all."""
import json
import math
import os

from . import kinds, stats, systems
from .report_text import STATISTICS

# the flavors the patched daemon is compared with besides stock: those of
# the other systems (ab.systems); a kind's own flavors (runc's floor) are not
PEERS = tuple(f for f in systems.flavors() if systems.name_of(f) != "dockerd")


def load(outdir):
    with open(os.path.join(outdir, "results.json")) as f:
        return json.load(f)


def label(params):
    return ", ".join(f"{k}={v}" for k, v in sorted((params or {}).items())) or "defaults"


class Unpairable(ValueError):
    """A list of a cell's whose values cannot be matched to repetitions."""


def compared(e, kind):
    """(field, unit, lower_is_better) of what a result entry compares: its
    times, unless the kind compares something else (kinds.<kind>.compared)."""
    k = kinds.get(kind)
    if k.compared is not None:
        return k.compared(e)
    return "times_s", "s", True


def values(e, kind):
    """(samples, unit, lower_is_better) of a result entry: what it compares
    (compared), the values of the repetitions that succeeded, in
    repetition order."""
    field, unit, lower = compared(e, kind)
    by = keyed(e, field)
    return [by[r] for r in sorted(by)], unit, lower


def cell_key(e, kind):
    """What tells a cell from another across flavors: where it is, and the
    kind's own fields that do (kinds.<kind>.KEY_FIELDS)."""
    return (e.get("profile"), e.get("image"), e.get("scenario"), e.get("container")) + \
        tuple(e.get(f) for f in kinds.get(kind).KEY_FIELDS)


def cell_name(e, kind):
    return kinds.get(kind).cell_name(e)


def by_rep(e, kind):
    """What a cell compares (compared), by repetition (keyed)."""
    return keyed(e, compared(e, kind)[0])


def where(e):
    """A result entry in words, for errors: its flavor, where it ran, its
    settings."""
    names = [e.get(k) for k in ("flavor", "profile", "image", "scenario", "container")]
    return " ".join(str(x) for x in names if x is not None) + f" ({label(e.get('params'))})"


def failed_reps(e, field="times_s"):
    """The repetitions of a cell's failed samples (results.json from before
    they were recorded: none, or Unpairable, for reading field, when it has
    failures)."""
    if "failed_reps" in e:
        return set(e["failed_reps"])
    if failed(e):
        raise Unpairable(f"{where(e)}: {field}: {failed(e)} failed sample(s), and not their repetitions "
                         "(results.json from before failed_reps): which pairs they leave cannot be told")
    return set()


def keyed(e, field="times_s"):
    """One list of a cell's by repetition (stats.Reps): times_s, or a value
    measured with them, each value at the repetition recorded with it (reps
    for times_s, reps_of[field] for the others) and only where the cell's
    sample succeeded; its failed: the repetitions measured without a value
    (the sample failed, or gave none of this field).

    A list whose values cannot be matched to repetitions raises Unpairable
    naming the cell and the field; nothing is paired by its place in a
    list. A field the cell has no list of has no values (and no
    failures of its own). results.json from before reps_of: a list as long
    as reps is theirs; from before reps: the times are in repetition order
    when none failed."""
    bad = failed_reps(e, field)
    times = e.get("times_s") or []
    ok = e["reps"] if "reps" in e else list(range(len(times)))
    if len(ok) != len(times):
        raise Unpairable(f"{where(e)}: times_s: {len(times)} values and {len(ok)} repetitions")
    if e.get(field) is None:
        return stats.Reps({}, failed=bad)
    vals = e[field]
    reps_of = e.get("reps_of") or {}
    if field == "times_s":
        reps = ok
    elif field in reps_of:
        reps = reps_of[field]
    elif len(vals) == len(ok):
        reps = ok
    else:
        raise Unpairable(f"{where(e)}: {field}: {len(vals)} values for {len(ok)} measured repetitions, and not "
                         "the repetition of each: they cannot be paired")
    if len(reps) != len(vals):
        raise Unpairable(f"{where(e)}: {field}: {len(vals)} values and {len(reps)} repetitions of them")
    ok = set(ok)
    got = {r: v for r, v in zip(reps, vals) if r in ok and v is not None}
    return stats.Reps(got, failed=(ok - set(got)) | bad)


def failed(e):
    """A cell's failed samples (warm-ups apart)."""
    if "failed" in e:
        return e["failed"]
    return len([x for x in e.get("errors", []) if not str(x).startswith("warm-up")])


def failures(doc):
    """Every cell with failures: (flavor, cell, params, what failed), what
    failed a list of (count, what): measured samples, warm-ups, and the
    patched daemon's restores. Stock's restores are what a restore suite
    measures of it, not a failure of the run: stock cannot restore a
    checkpoint of a container with a network namespace of its own (the
    bug 0002 fixes), and the Restores section shows how many it restored
    and why not. A kind may say otherwise (kinds.<kind>.failures)."""
    k = kinds.get(doc["kind"])
    if k.failures is not None:
        return k.failures(doc)
    out = []
    for e in doc["results"]:
        what = [(failed(e), "failed sample(s)"),
                (len([x for x in e.get("errors", []) if str(x).startswith("warm-up")]), "failed warm-up(s)"),
                (len(e.get("restore_error") or []) if e.get("flavor") != "stock" else 0, "failed restore(s)")]
        what = [(n, w) for n, w in what if n]
        if what:
            out.append((e.get("flavor"), cell_name(e, doc["kind"]), label(e.get("params")), what))
    return out


def comparisons(doc, adjust=True):
    """Per cell (and per patched arm, see kinds/pull.py): patched against
    stock's default and (for scans) stock's best, paired by repetition; the
    p-values Holm-adjusted across them all (p_adj; and the sign-flip
    checks' among themselves, p_sign_adj), each interval at the level Holm
    tested it at (stats.adjust). Stock's best setting is chosen on the
    same samples, so its comparison's p is multiplied by the number of
    settings scanned (Bonferroni: any of them could have been the best)
    and its interval's 0.05 divided by it, before Holm. Where stock's best
    is its default, the two are one comparison (vs_best is vs_default, and
    stock_best says "default"), in the family once. adjust=False leaves
    the adjustment to the caller (adjust_rows, across several reports)."""
    kind = doc["kind"]
    samples = lambda e: values(e, kind)[0]
    cells = {}
    for e in doc["results"]:
        cells.setdefault(cell_key(e, kind), []).append(e)
    out = []
    for key, es in cells.items():
        pat = [e for e in es if e["flavor"] == "patched"]
        sto = [e for e in es if e["flavor"] == "stock"]
        pee = [e for e in es if e["flavor"] in PEERS]
        if not pat or not (sto or pee):
            continue
        for p in pat:  # one row per patched entry: the pull kind measures it in arms
            pv, unit, lower = values(p, kind)
            pr = by_rep(p, kind)
            row = {"cell": cell_name(p, kind), "key": key, "arm": p.get("arm"), "unit": unit, "lower_is_better": lower,
                   "entry": p, "patched": stats.summary(pv), "vs_default": None, "vs_best": None,
                   "failed": {"patched": failed(p), "stock": sum(failed(e) for e in sto)}}
            if sto:  # a suite of patched and peers only has no stock row
                d = ([e for e in sto if systems.get("dockerd").is_default(e["params"])] or sto)[0]
                row["stock_default"] = {"params": label(d["params"]), "entry": d, **(stats.summary(samples(d)) or {})}
                row["vs_default"] = stats.paired(pr, by_rep(d, kind))
            if len(sto) > 1:
                scored = [(stats.summary(samples(e)), e) for e in sto]
                scored = [(s, e) for s, e in scored if s]
                if scored:
                    s, best = (min if lower else max)(scored, key=lambda x: x[0]["median"])
                    row["stock_best"] = {"params": label(best["params"]), "entry": best, "settings": len(sto),
                                         "default": best is d, **s}
                    # the default is stock's best: the same comparison, tested once
                    row["vs_best"] = row["vs_default"] if best is d else \
                        stats.paired(pr, by_rep(best, kind), correction=len(sto))
                    s, worst = (max if lower else min)(scored, key=lambda x: x[0]["median"])
                    row["stock_worst"] = {"params": label(worst["params"]), "entry": worst, **s}
            row["peers"] = peers(pr, pee, kind)
            out.append(row)
    for t in tests_of(out):
        t["margin"] = doc.get("margin", stats.MARGIN)
    if adjust:
        stats.adjust(tests_of(out))
    return out


def named(row):
    """A comparisons() row's comparisons with what patched is set against:
    [("stock default", c), ("stock best", c), ("<peer> best", c), ...],
    each once (a stock best that is the default is its default's
    comparison), those the row has."""
    out = [("stock default", row["vs_default"])]
    if row["vs_best"] is not row["vs_default"]:
        out.append(("stock best", row["vs_best"]))
    out += [(f"{f} best", pe["vs_best"]) for f, pe in row["peers"].items()]
    return [(n, c) for n, c in out if c]


def tests_of(rows):
    """The comparisons of comparisons()' rows, each once."""
    return [c for row in rows for _, c in named(row)]


def adjust_rows(groups):
    """One Holm family across several reports' comparisons() rows (made
    with adjust=False): a run of a group of suites is one family, so that
    the chance of any false verdict across the run, not each report, stays
    at or below 5%. Returns the family's size."""
    tests = [t for rows in groups for t in tests_of(rows)]
    stats.adjust(tests)
    return len(tests)


def peers(pr, entries, kind):
    """Patched (pr: its samples by repetition) against each peer of the
    cell (a flavor of another system, ab.systems), at the peer's best
    setting: chosen after the fact on the same samples, like stock's best,
    so its p is multiplied by the number of settings (and its interval's
    0.05 divided by it). {peer: {"best": its summary and params,
    "settings": how many, "vs_best": the paired comparison}}."""
    by = {}
    for e in entries:
        by.setdefault(e["flavor"], []).append(e)
    out = {}
    for f, es in by.items():
        scored = [(stats.summary(values(e, kind)[0]), e) for e in es]
        scored = [(s, e) for s, e in scored if s]
        if not scored:
            continue
        lower = values(es[0], kind)[2]
        s, best = (min if lower else max)(scored, key=lambda x: x[0]["median"])
        out[f] = {"best": {"params": label(best["params"]), "entry": best, **s}, "settings": len(es),
                  "failed": sum(failed(e) for e in es),
                  "vs_best": stats.paired(pr, by_rep(best, kind), correction=len(es))}
    return out


def fmt_ratio(r, lower):
    """A paired comparison: ratio, interval, p (Holm-adjusted when it has
    been, the interval then at Holm's level, stats.adjust; else the 95%
    interval and p marked uncorrected); when adjusted, the verdict
    (stats.verdict), its minimal detectable effect (stats.mde) and the
    sign-flip check's p, and where the check disagrees (stats.check), in
    bold. With failed repetitions or too few pairs: what the pairs give,
    n, and the verdict, adjusted or not."""
    if not r:
        return "n/a"
    if r.get("failed") or r["too_few"] or r["p"] is None:
        shown = []
        if r["ratio"] is not None:
            shown.append(f"{r['ratio']:.2f}")
        if r["lo"] is not None:
            shown.append(interval(r))
        if "p_adj" in r:
            shown.append(f"p={r['p_adj']:.2g}")
        elif r["p"] is not None and not r["too_few"]:
            shown.append(f"p={r['p']:.2g} uncorrected")
        return " ".join(shown + [f"n={r['n']}: {stats.verdict(r, lower)}"])
    ci = interval(r) if r["lo"] is not None else "[no interval]"
    if "p_adj" in r:
        out = f"{r['ratio']:.2f} {ci} p={r['p_adj']:.2g} {stats.verdict(r, lower, r['p_adj'])}"
        m = stats.mde(r)
        if m is not None:
            out += f"; MDE {m:.2f}x"
        note = stats.check(r, lower, r["p_adj"], r.get("p_sign_adj"))
        return out + (f"; **{note}**" if note else f"; sign-flip p={r['p_sign']:.2g}")
    return f"{r['ratio']:.2f} {ci} p={r['p']:.2g} uncorrected"


def interval(r):
    """[lo, hi] of a comparison, each to two decimals unless that would
    round a bound that is not 1 to 1.00: which side of 1 it lies on is
    what the interval says (an adjusted one excludes 1 exactly when the
    verdict is better or worse)."""
    def bound(x):
        d = 2
        while f"{x:.{d}f}" == f"{1:.{d}f}" and x != 1 and d < 6:
            d += 1
        return f"{x:.{d}f}"
    return f"[{bound(r['lo'])}, {bound(r['hi'])}]"


def fmt_v(x, unit):
    if x is None:
        return "-"
    if unit in ("req/s", "files/s"):
        return f"{x:.0f}" if x >= 100 else f"{x:.2f}"
    if unit == "µs":
        return f"{x:.1f}"
    return f"{x:.3f}"


def median_of(xs):
    s = stats.summary(xs)
    return s["median"] if s else None


def versus(a, b, lower):
    """a/b paired by repetition (a and b: dicts repetition -> value, see
    keyed; lists are taken in repetition order), with its interval and
    uncorrected p (or its failures), or '-' where there is neither a pair
    nor a failure."""
    r = stats.paired(a, b)
    return fmt_ratio(r, lower) if r else "-"


def summary_table(doc, rows=None):
    """The summary of doc's report: rows are its comparisons() rows when
    they were adjusted with other reports' (adjust_rows), else its own."""
    k = kinds.get(doc["kind"])
    if k.summary_table is not None:
        return k.summary_table(doc)
    rows = comparisons(doc) if rows is None else rows
    lines = []
    if any("stock_default" in r for r in rows):
        lines = ["| cell | n | failed | stock default | patched | patched/stock default [Holm CI] p | stock best | "
                 "patched/best [Holm CI] p |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        if "stock_default" not in r:
            continue
        u = r["unit"]
        sd = r["stock_default"]
        sb = r.get("stock_best")
        lines.append("| {} | {} | {} | {} {} ({}) | {} {} | {} | {} | {} |".format(
            r["cell"], (r["vs_default"] or {}).get("n", 0),
            f"{r['failed']['patched']} patched, {r['failed']['stock']} stock",
            fmt_v(sd.get("median"), u), u, sd["params"],
            fmt_v((r["patched"] or {}).get("median"), u), u, fmt_ratio(r["vs_default"], r["lower_is_better"]),
            f"{fmt_v(sb['median'], u)} {u} ({sb['params']}, best of {sb['settings']}"
            f"{': the default, one comparison' if sb.get('default') else ''})" if sb else "-",
            fmt_ratio(r["vs_best"], r["lower_is_better"]) if sb else "-"))
    peer_rows = [(r, f, pe) for r in rows for f, pe in r.get("peers", {}).items()]
    if peer_rows:
        first = "" if lines else "No stock in this suite."
        lines += [first, "Against the peers (other systems measured in the same cells, in the same rounds), "
                  "each at its best setting:", "",
                  "| cell | peer | n | failed | peer best | patched | patched/peer best [Holm CI] p |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r, f, pe in peer_rows:
            u, b = r["unit"], pe["best"]
            lines.append("| {} | {} | {} | {} | {} {} ({}, best of {}) | {} {} | {} |".format(
                r["cell"], f, (pe["vs_best"] or {}).get("n", 0), f"{r['failed']['patched']} patched, "
                f"{pe['failed']} {f}", fmt_v(b["median"], u), u, b["params"], pe["settings"],
                fmt_v((r["patched"] or {}).get("median"), u), u, fmt_ratio(pe["vs_best"], r["lower_is_better"])))
    effects = order_effects(doc, rows)
    if effects:
        lines += ["", "Order, a diagnostic and not a verdict: per comparison, the mean log-ratio of the pairs in which "
                  "patched ran first in its repetition and of those in which it ran second. The order is drawn and "
                  "balanced, so an order effect cancels out of the ratios above, but it widens their intervals; a "
                  "difference here says by how much.", ""]
        for g in effects:
            lines.append(f"- {g['label']} ({g['unit']}): patched ran first: {_mean_log(g['first'])}; "
                         f"ran second: {_mean_log(g['second'])}")
    return "\n".join(lines)


def _mean_log(xs):
    if not xs:
        return "no pairs"
    m = sum(xs) / len(xs)
    return f"mean log-ratio {m:.3f} ({math.exp(m):.2f}x), n={len(xs)}"


def order_pairs(a, b, kind):
    """The log-ratios a/b of the repetitions whose samples both succeeded,
    split by which ran first in its repetition: (a first, b first); None
    when either has no positions (results from before they were
    recorded)."""
    pa, pb = keyed(a, "position"), keyed(b, "position")
    if not pa or not pb:
        return None
    va, vb = by_rep(a, kind), by_rep(b, kind)
    first, second = [], []
    for rep in sorted(set(va) & set(vb) & set(pa) & set(pb)):
        if va[rep] > 0 and vb[rep] > 0 and pa[rep] != pb[rep]:
            (first if pa[rep] < pb[rep] else second).append(math.log(va[rep] / vb[rep]))
    return first, second


def order_effects(doc, rows=None):
    """Per comparison group (patched against stock's default, stock's best,
    each peer's best; per arm and unit), over its cells: the log-ratios of
    the pairs in which patched ran first and of those in which it ran
    second, [{"label", "unit", "first", "second"}]. A diagnostic of order
    effects: nothing is tested. Empty for results without positions."""
    kind = doc["kind"]
    groups = {}
    for r in comparisons(doc) if rows is None else rows:
        arm = " (patched: first contact)" if r.get("arm") == "fresh" else ""
        against = []
        if r.get("vs_default"):
            against.append(("patched/stock default", r["stock_default"]["entry"]))
        if r.get("vs_best"):
            against.append(("patched/stock best", r["stock_best"]["entry"]))
        against += [(f"patched/{f} best", pe["best"]["entry"]) for f, pe in r.get("peers", {}).items()
                    if pe.get("vs_best")]
        for name, other in against:
            split = order_pairs(r["entry"], other, kind)
            if split is None:
                continue
            g = groups.setdefault((name + arm, r["unit"]), {"label": name + arm, "unit": r["unit"],
                                                           "first": [], "second": []})
            g["first"] += split[0]
            g["second"] += split[1]
    return [g for g in groups.values() if g["first"] or g["second"]]


def header(doc, run):
    """The top of every report: title, description, the suite file and how
    it ran (run: what kind of run it was), the machine."""
    m = doc["machine"]
    md = [f"# {doc['suite']} ({doc['kind']})", ""]
    if doc.get("description"):
        md += [doc["description"], ""]
    return md + [f"- suite file: `{doc.get('suite_file')}`, {run}, "
                 f"started {doc['started']}, finished {doc.get('finished') or '-'}"
                 + (" **(interrupted: partial results)**" if doc.get("interrupted") else ""),
                 f"- machine: {m.get('cpu')}, {m.get('cpus')} CPUs, {m.get('memory_gib')} GiB, kernel {m.get('kernel')}"] \
        + host_lines(doc) + provenance_lines(doc)


def host_lines(doc):
    """What else the machine was doing during the samples (results.Results
    records it with each, host_state): the range and median of the load
    average and of each pressure; none for results from before 2026-11-29."""
    states = [h for e in doc["results"] for h in e.get("host", []) if h]
    if not states:
        return []
    parts = []
    for key, name, unit in (("load1", "load average", ""), ("psi_cpu", "CPU pressure", "%"),
                            ("psi_io", "I/O pressure", "%"), ("psi_memory", "memory pressure", "%")):
        xs = sorted(h[key] for h in states if h.get(key) is not None)
        if xs:
            parts.append(f"{name} {xs[0]:g}-{xs[-1]:g}{unit} (median {median_of(xs):g}{unit})")
    return [f"- the machine during the {len(states)} samples: " + ", ".join(parts)
            + " (pressure: PSI's \"some avg10\", the share of the last 10 s some task waited)"] if parts else []


def aa_rate(doc):
    """An A/A run's false-positive rate: the share of its comparisons the
    summary calls better or worse (each a comparison of a daemon with
    itself), beside the nominal rate ("" when it has none)."""
    if not doc.get("results") or kinds.get(doc["kind"]).summary_table is not None:
        return ""
    judged = [(t, r["lower_is_better"]) for r in comparisons(doc) for _, t in named(r)
              if not t["too_few"] and t["p"] is not None]
    if not judged:
        return ""
    fp = sum(stats.decided(stats.verdict(t, lower, t.get("p_adj"))) for t, lower in judged)
    unadjusted = sum(t["p"] < stats.ALPHA for t, _ in judged)
    return (f". False positives: {fp} of {len(judged)} comparisons called better or worse ({fp / len(judged):.1%}; "
            f"Holm keeps the chance of any in a report at or below 5%); before Holm {unadjusted} had p < 0.05 "
            f"({unadjusted / len(judged):.1%}, nominal 5%)")


def provenance_lines(doc):
    """Where the results come from (results.json's provenance), and a warning
    when the patched daemon that ran was not built from the series named."""
    p = doc.get("provenance")
    if not p:
        return []
    up = p.get("upstream") or {}
    out = [f"- provenance: series `{p.get('series')}` on upstream {up.get('version', '?')} "
           f"(`{(up.get('commit') or '?')[:12]}`, {up.get('module_version', '?')}), project commit "
           f"`{(p.get('commit') or '?')[:12]}`" + (" with local changes" if p.get("local_changes") else "")
           + f", suite file sha256 `{(p.get('suite_sha256') or '?')[:16]}`"]
    ds = doc.get("daemons") or {}
    pv = (ds.get("patched") or {}).get("version")
    binaries = {f: v.get("binary", f"dockerd-{f}") for f, v in ds.items()}
    if len(binaries) == 2 and len(set(binaries.values())) == 1:
        out.append(f"- **A/A run: both test hosts run {next(iter(binaries.values()))}**; any difference "
                   "found is the harness's or the machine's, not a patch's" + aa_rate(doc))
    elif pv and p.get("series") and not pv.endswith("+ab." + p["series"]) and \
            not binaries.get("patched", "").startswith("dockerd-commit-"):
        out.append(f"- **warning: the patched daemon that ran reports {pv}, not the series `{p['series']}` "
                   "of the patches/ it ran beside: its binary is stale (make build)**")
    return out


def write(outdir):
    doc = load(outdir)
    k = kinds.get(doc["kind"])
    if k.write is not None:
        return k.write(outdir, doc)
    plots = plot(doc, outdir)
    md = header(doc, f"{doc['repetitions']} repetitions") + [
        "- daemons: " + ", ".join(f"{f} {v['version']}" for f, v in doc["daemons"].items())]
    if doc.get("link"):
        md.append(f"- link emulation backend: {doc['link'].get('backend')}")
    note = k.summary_note(doc)
    md += ["", STATISTICS, "", "## Summary", ""] + ([note, ""] if note else []) + [summary_table(doc), ""]
    for section in k.sections(doc):
        if section:
            md += [section, ""]
    for p in plots:
        md += [f"![{p}]({p})", ""]
    md += ["## Every sample", "", "| flavor | cell | params | n | failed | median | min | max | samples | errors |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in doc["results"]:
        v, u, _ = values(e, doc["kind"])
        s = stats.summary(v) or {}
        errs = "; ".join(sorted(set(e.get("errors", []))))[:200]
        md.append(f"| {e['flavor']} | {cell_name(e, doc['kind'])} | {label(e['params'])} | {s.get('n', 0)} | {failed(e)} | "
                  f"{fmt_v(s.get('median'), u)} | {fmt_v(s.get('min'), u)} | {fmt_v(s.get('max'), u)} | "
                  f"{', '.join(fmt_v(x, u) for x in v)} | {errs} |")
    md += k.after_samples(doc)
    if doc.get("seed"):
        md += ["", "## Published numbers (seed)", "", "```", json.dumps(doc["seed"], indent=1), "```"]
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return doc


def plot(doc, outdir):
    """The kind's plots (kinds.<kind>.plots): their file names."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if not doc["results"]:
        return []
    out = kinds.get(doc["kind"]).plots(doc, outdir, plt)
    plt.close("all")
    return out


def bar_plot(doc, outdir, plt, what="time"):
    """<kind>.png: every cell's median and spread per flavor, a panel per
    unit (seconds, lower is better: what took them; req/s, µs)."""
    kind = doc["kind"]
    res = doc["results"]
    # One panel per unit: seconds (lower is better), req/s (higher is better).
    groups = {}
    for e in res:
        c = cell_name(e, kind)
        cells = groups.setdefault(values(e, kind)[1], [])
        if c not in cells:
            cells.append(c)
    many = sum(len(c) for c in groups.values()) > 14
    fig, axes = plt.subplots(1, len(groups), squeeze=False,
                             figsize=(min(16, sum(max(4, (0.6 if many else 1.2) * len(c)) for c in groups.values())),
                                      4.8 if many else 4))
    for ax, (unit, cells) in zip(axes[0], groups.items()):
        flavors = [f for f in systems.flavors() + ("runc",) if any(e["flavor"] == f for e in res)]
        width = 0.8 / len(flavors)
        for j, f in enumerate(flavors):
            meds, lo, hi = [], [], []
            for c in cells:
                es = [e for e in res if cell_name(e, kind) == c and e["flavor"] == f]
                s = stats.summary(values(es[0], kind)[0]) if es else None
                meds.append(s["median"] if s else 0)
                lo.append(s["median"] - s["min"] if s else 0)
                hi.append(s["max"] - s["median"] if s else 0)
            ax.bar([i + (j - (len(flavors) - 1) / 2) * width for i in range(len(cells))], meds, width, yerr=[lo, hi],
                   capsize=3, label=f)
        ax.set_xticks(range(len(cells)))
        ax.set_xticklabels(cells, rotation=45 if many else 30, ha="right", fontsize=7 if many else 8)
        ax.set_ylabel({"s": f"{what} (s)", "req/s": "requests/s",
                       "µs": "TCP round trip, p50 (µs)"}.get(unit, unit) + ", median, min-max")
        ax.grid(axis="y", alpha=0.3)
        ax.legend()
    fig.suptitle(f"{doc['suite']}: stock vs patched")
    fig.tight_layout()
    name = f"{kind}.png"
    fig.savefig(os.path.join(outdir, name), dpi=120)
    return [name]
