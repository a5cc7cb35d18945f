"""One report over several nodes' results of the same suite.

    python3 -m ab report --nodes DIR... --out OUT

Each DIR is what `python3 -m ab run` wrote on one node (its results.json, or
a group's subdirectories, matched by name across the nodes); the node is
named after its machine's host name (or the directory, when two share one).
Per cell (and per patched arm), the report has each node's paired ratio of
patched against stock's default, as that node's own report computes it, and
a pooled estimate that treats the node as a block:

- the pooled log-ratio is the mean over nodes of each node's mean log-ratio
  of its pairs, so every node weighs the same however many pairs it has;
- its p is a sign-flip permutation test of that statistic: under "no
  difference" each pair's log-ratio is as likely negative as positive, so
  flipping the signs of single pairs, within their node, gives the
  statistic's distribution (every pattern up to 16 pairs in all, 20000
  random ones above);
- p-values are Holm-adjusted across a suite's cells, and a pooled row says
  better or worse only when its adjusted p is below 0.05, every node has
  at least stats.MIN_PAIRS pairs and no node has a failed repetition (as a
  node's own report: "inconclusive (k failed)", k over the nodes).

Nodes disagree on a cell when one node's own interval lies wholly below 1 and
another's wholly above: a patch that helps on one kind of machine and hurts
on another. The pooled row then says so instead of a verdict, whatever its p.
"""
import itertools
import json
import math
import os
import random
import statistics

from . import report, stats

EXACT = 16  # pairs in all up to which every sign pattern is enumerated
DRAWS = 20000


def load_nodes(dirs):
    """{node: {suite: doc}} from the nodes' results directories."""
    out = {}
    for d in dirs:
        docs = {}
        if os.path.isfile(os.path.join(d, "results.json")):
            doc = report.load(d)
            docs[doc["suite"]] = doc
        else:
            for sub in sorted(os.listdir(d)):
                if os.path.isfile(os.path.join(d, sub, "results.json")):
                    doc = report.load(os.path.join(d, sub))
                    docs[doc["suite"]] = doc
        if not docs:
            raise ValueError(f"{d}: no results.json in it or its subdirectories")
        name = next(iter(docs.values())).get("machine", {}).get("hostname") or os.path.basename(os.path.abspath(d))
        if name in out:
            name = f"{name} ({os.path.basename(os.path.abspath(d))})"
        out[name] = docs
    return out


def node_pairs(doc):
    """{(cell key, arm): (cell name, unit, lower is better, [log-ratios of
    patched against stock's default, one per pair], the node's paired
    comparison)} of one node's results."""
    out = {}
    kind = doc["kind"]
    for r in report.comparisons(doc):
        if not r.get("vs_default"):
            continue
        d = r["stock_default"]["entry"]
        pat = next(e for e in doc["results"] if e["flavor"] == "patched"
                   and report.cell_key(e, kind) == r["key"] and e.get("arm") == r.get("arm"))
        ps = stats.pairs(report.by_rep(pat, kind), report.by_rep(d, kind))
        logs = [math.log(a / b) for a, b in ps if a > 0 and b > 0]
        out[(r["key"], r.get("arm"))] = (r["cell"], r["unit"], r["lower_is_better"], logs, r["vs_default"])
    return out


def blocked(per_node):
    """The pooled comparison of per_node ([log-ratios] per node, each a
    block): ratio, two-sided p, n pairs, nodes."""
    blocks = [b for b in per_node if b]
    if not blocks:
        return None
    stat = lambda signs_by_block: statistics.fmean(
        statistics.fmean(s * x for s, x in zip(signs, b)) for signs, b in zip(signs_by_block, blocks))
    observed = stat([[1] * len(b) for b in blocks])
    n = sum(len(b) for b in blocks)
    if n < 2:
        p = None
    else:
        if n <= EXACT:
            patterns = itertools.product((1, -1), repeat=n)
            total = 2 ** n
        else:
            rng = random.Random(1)
            patterns = ([rng.choice((1, -1)) for _ in range(n)] for _ in range(DRAWS))
            total = DRAWS
        hits = 0
        for flat in patterns:
            it = iter(flat)
            signs = [[next(it) for _ in b] for b in blocks]
            if abs(stat(signs)) >= abs(observed) - 1e-12:
                hits += 1
        # the observed pattern is one of the draws when they are random
        p = hits / total if n <= EXACT else (hits + 1) / (total + 1)
    return {"ratio": math.exp(observed), "p": p, "n": n, "nodes": len(blocks),
            "too_few": min(len(b) for b in blocks) < stats.MIN_PAIRS}


def disagree(comparisons, lower):
    """Whether one node's interval lies wholly on the better side of 1 and
    another's wholly on the worse side."""
    below = any(c and c.get("hi") is not None and c["hi"] < 1 for c in comparisons)
    above = any(c and c.get("lo") is not None and c["lo"] > 1 for c in comparisons)
    return below and above


def pooled(nodes):
    """Per suite, per cell: each node's comparison and the pooled one,
    Holm-adjusted across every pooled comparison."""
    suites = {}
    for node, docs in nodes.items():
        for name, doc in docs.items():
            suites.setdefault(name, {})[node] = node_pairs(doc)
    rows = []
    for suite, per in suites.items():
        keys = list(dict.fromkeys(k for cells in per.values() for k in cells))
        for k in keys:
            have = {node: cells[k] for node, cells in per.items() if k in cells}
            cell, unit, lower = next(iter(have.values()))[:3]
            p = blocked([have[nd][3] for nd in have])
            rows.append({"suite": suite, "cell": cell, "unit": unit, "lower_is_better": lower,
                         "nodes": {nd: have[nd][4] for nd in have}, "pooled": p,
                         "missing": sorted(set(per) - set(have)),
                         "disagree": disagree([have[nd][4] for nd in have], lower)})
    for suite in suites:  # one family per suite, as in a node's own report
        tests = [r["pooled"] for r in rows if r["suite"] == suite and r["pooled"]
                 and r["pooled"]["p"] is not None and not r["pooled"]["too_few"]]
        for t, padj in zip(tests, stats.holm([t["p"] for t in tests])):
            t["p_adj"] = padj
    return rows


def pooled_verdict(r):
    failed = sum((c or {}).get("failed", 0) for c in r["nodes"].values())
    if failed:
        return f"inconclusive ({failed} failed)"
    p = r["pooled"]
    if not p:
        return "n/a"
    if r["disagree"]:
        return "inconclusive (nodes disagree)"
    if p["too_few"] or "p_adj" not in p:
        return f"inconclusive (fewest pairs on a node below {stats.MIN_PAIRS})"
    if p["p_adj"] >= stats.ALPHA:
        # the blocked permutation test has no interval to call it level by
        return "inconclusive (no difference found)"
    better = p["ratio"] < 1 if r["lower_is_better"] else p["ratio"] > 1
    return "better" if better else "worse"


def write(nodes, outdir):
    """OUT/report.md and OUT/nodes.json from {node: {suite: doc}}."""
    os.makedirs(outdir, exist_ok=True)
    rows = pooled(nodes)
    names = list(nodes)
    md = ["# A/B across nodes", "",
          f"Nodes: {', '.join(names)}. Per node, patched against stock's default on that node, paired by "
          "repetition (as each node's own report); pooled, the mean over nodes of each node's mean "
          "log-ratio, every node one block, with a sign-flip permutation test that flips pairs within "
          "their node, Holm-adjusted across each suite's cells. \"nodes disagree\": one node's interval lies "
          "wholly below 1 and another's wholly above. \"inconclusive (k failed)\": k repetitions failed on "
          "either side, over the nodes; no verdict, whatever the pairs left say.", ""]
    for node, docs in nodes.items():
        for suite, doc in docs.items():
            m, prov = doc.get("machine") or {}, doc.get("provenance") or {}
            md.append(f"- {node}, {suite}: {m.get('cpu', '?')}, {m.get('cpus', '?')} CPUs, kernel "
                      f"{m.get('kernel', '?')}; daemons " + ", ".join(
                          f"{f} {v.get('version')}" for f, v in (doc.get("daemons") or {}).items())
                      + (f"; series `{prov['series']}`" if prov.get("series") else ""))
    md += ["", "| suite | cell | " + " | ".join(names) + " | pooled patched/stock | pooled p (Holm) | verdict |",
           "| --- | --- | " + " | ".join("---" for _ in names) + " | --- | --- | --- |"]
    for r in rows:
        per = []
        for nd in names:
            c = r["nodes"].get(nd)
            if not c:
                per.append("-")
                continue
            t = report.fmt_ratio(dict(c), r["lower_is_better"]).replace(" uncorrected", "")
            per.append(t if f"n={c['n']}" in t else t + f" (n={c['n']})")
        p = r["pooled"] or {}
        md.append(f"| {r['suite']} | {r['cell']} | " + " | ".join(per) + " | "
                  + (f"{p['ratio']:.2f} (n={p['n']}, {p['nodes']} nodes)" if p else "-") + " | "
                  + (f"{p['p_adj']:.2g}" if "p_adj" in p else "-") + f" | {pooled_verdict(r)}"
                  + (f" (not measured on {', '.join(r['missing'])})" if r["missing"] else "") + " |")
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(outdir, "nodes.json"), "w") as f:
        json.dump({"nodes": names, "rows": [{k: v for k, v in r.items()} for r in rows]}, f, indent=1, default=str)
    return rows
