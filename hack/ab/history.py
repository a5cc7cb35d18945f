"""The history of the committed results: an index of every comparison
(patched against stock's default, its best, each peer's best) keyed by
series, suite and cell, and a static HTML page that draws each comparison
measured on more than one series across them, with change points marked.

A change point is where a comparison's ratio changed from one series to
the next it was measured on: Welch's test on the two runs' log-ratios
(ab.compare.change), Holm-adjusted across every such step of the index,
better or worse in the five words (level within the suite's margin, else
inconclusive). The runs were not interleaved, so a change point says that
the two runs differ, the machine's drift included; two commits in one run
(binary = "commit:<rev>") tell a commit's effect apart.

usage: python3 -m ab.history MEASUREMENTS OUTDIR   (from hack/, PYTHONPATH=.)
       writes OUTDIR/index.json and OUTDIR/index.html"""
import html
import json
import os
import sys

from . import compare, kinds, report, stats


def entries(root):
    """Every comparison of the results under root, in the order of their
    runs' start: dicts of the index."""
    out = []
    for d, _, files in sorted(os.walk(root)):
        if "results.json" not in files:
            continue
        doc = report.load(d)
        series = (doc.get("provenance") or {}).get("series")
        if not series or doc.get("kind") not in kinds.NAMES or kinds.get(doc["kind"]).summary_table is not None:
            continue
        try:
            rows = report.comparisons(doc)
        except (KeyError, ValueError, TypeError, report.Unpairable):
            continue  # results older than what the report reads
        for row in rows:
            for against, r in report.named(row):
                if r["ratio"] is None:
                    continue
                out.append({"series": series, "started": doc.get("started"), "suite": doc["suite"],
                            "cell": row["cell"], "against": against, "dir": os.path.relpath(d, root),
                            "ratio": r["ratio"], "lo": r["lo"], "hi": r["hi"], "n": r["n"],
                            "failed": r.get("failed", 0), "lower_is_better": row["lower_is_better"],
                            "verdict": stats.verdict(r, row["lower_is_better"], r.get("p_adj")),
                            "_r": r})
    out.sort(key=lambda e: (e["started"] or "", e["suite"], e["cell"], e["against"]))
    return out


def histories(es):
    """The index's comparisons measured on more than one series, by
    (suite, cell, against), each a list in the order of the runs, the steps
    between consecutive points judged (change points, Holm across all)."""
    by = {}
    for e in es:
        by.setdefault((e["suite"], e["cell"], e["against"]), []).append(e)
    out = {k: v for k, v in by.items() if len({e["series"] for e in v}) > 1}
    steps = []
    for pts in out.values():
        for a, b in zip(pts, pts[1:]):
            t = compare.change(a["_r"], b["_r"])
            b["step"] = t
            steps.append(t)
    stats.adjust(steps)
    for pts in out.values():
        for p in pts[1:]:
            t = p["step"]
            p["step_ratio"] = t["ratio"]
            p["step_verdict"] = stats.verdict(t, p["lower_is_better"], t.get("p_adj"))
            p["change_point"] = stats.decided(p["step_verdict"])
    return out


def index(root):
    """The index (JSON-ready): every entry, and the histories by key."""
    es = entries(root)
    hs = histories(es)
    clean = lambda e: {k: (round(v, 6) if isinstance(v, float) else v) for k, v in e.items()
                       if k not in ("_r", "step")}
    return {"entries": [clean(e) for e in es],
            "histories": [{"suite": k[0], "cell": k[1], "against": k[2], "points": [clean(p) for p in v]}
                          for k, v in sorted(hs.items())]}


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>moby-ab: results across series</title>
<style>
body {{ font: 13px sans-serif; margin: 16px; }} h2 {{ font-size: 14px; margin: 18px 0 4px; }}
table {{ border-collapse: collapse; margin: 4px 0 12px; }} td, th {{ border: 1px solid #d0d7de; padding: 2px 6px; }}
.cp {{ color: #cf222e; font-weight: bold; }}
</style></head><body>
<h1>Results across series</h1>
<p>{intro}</p>
<div id="charts"></div>
<script id="data" type="application/json">{data}</script>
<script>
const data = JSON.parse(document.getElementById("data").textContent);
const root = document.getElementById("charts");
const W = 520, H = 140, PAD = 36;
for (const h of data.histories) {{
  const sec = document.createElement("section");
  sec.className = "history";
  const title = document.createElement("h2");
  title.textContent = h.suite + ": " + h.cell + " \u2014 patched against " + h.against;
  sec.appendChild(title);
  const pts = h.points;
  const ys = pts.flatMap(p => [p.lo ?? p.ratio, p.hi ?? p.ratio, 1]);
  const lo = Math.log(Math.min(...ys) / 1.05), hi = Math.log(Math.max(...ys) * 1.05);
  const x = i => PAD + (pts.length === 1 ? 0 : i * (W - 2 * PAD) / (pts.length - 1));
  const y = v => H - 20 - (Math.log(v) - lo) / (hi - lo) * (H - 30);
  let svg = `<svg width="${{W}}" height="${{H}}" xmlns="http://www.w3.org/2000/svg">`;
  svg += `<line x1="${{PAD}}" x2="${{W - PAD}}" y1="${{y(1)}}" y2="${{y(1)}}" stroke="#8c959f" stroke-dasharray="3 3"/>`;
  pts.forEach((p, i) => {{
    if (p.lo !== null && p.hi !== null)
      svg += `<line x1="${{x(i)}}" x2="${{x(i)}}" y1="${{y(p.lo)}}" y2="${{y(p.hi)}}" stroke="#0969da" stroke-width="2"/>`;
    svg += `<circle cx="${{x(i)}}" cy="${{y(p.ratio)}}" r="3.5" fill="#0969da"/>`;
    if (p.change_point)
      svg += `<circle class="change-point" cx="${{x(i)}}" cy="${{y(p.ratio)}}" r="8" fill="none" stroke="#cf222e" stroke-width="2"/>`;
    svg += `<text x="${{x(i)}}" y="${{H - 4}}" font-size="10" text-anchor="middle">${{p.series}}</text>`;
  }});
  sec.insertAdjacentHTML("beforeend", svg + "</svg>");
  const t = document.createElement("table");
  t.insertAdjacentHTML("beforeend", "<tr><th>series</th><th>started</th><th>ratio</th><th>interval</th><th>n</th>" +
    "<th>verdict</th><th>change from the point before</th><th>results</th></tr>");
  for (const p of pts) {{
    const tr = document.createElement("tr");
    tr.className = "point";
    tr.dataset.key = h.suite + "|" + h.cell + "|" + h.against + "|" + p.series + "|" + p.dir;
    const step = p.step_ratio === undefined ? "-" : p.step_ratio.toFixed(3) + " " + p.step_verdict;
    tr.innerHTML = `<td>${{p.series}}</td><td>${{p.started}}</td><td class="ratio">${{p.ratio.toFixed(3)}}</td>` +
      `<td>${{p.lo === null ? "-" : "[" + p.lo.toFixed(3) + ", " + p.hi.toFixed(3) + "]"}}</td><td>${{p.n}}</td>` +
      `<td>${{p.verdict}}</td><td class="${{p.change_point ? "cp" : ""}}">${{step}}</td><td>${{p.dir}}</td>`;
    t.appendChild(tr);
  }}
  sec.appendChild(t);
  root.appendChild(sec);
}}
</script></body></html>
"""


def page(idx):
    """The HTML page of an index: the data embedded, drawn by its script."""
    n_cp = sum(p.get("change_point", False) for h in idx["histories"] for p in h["points"])
    intro = html.escape(
        f"{len(idx['entries'])} comparisons of the committed results, {len(idx['histories'])} of them measured on "
        f"more than one series, drawn below (ratio and Holm interval per series, 1 dashed); {n_cp} change points "
        "(ringed): the ratio changed from the series before, Welch's test Holm-adjusted across every step. The "
        "runs were not interleaved: a change point includes the machine's drift between them.")
    data = json.dumps({"histories": idx["histories"]}, sort_keys=True).replace("</", "<\\/")
    return PAGE.format(intro=intro, data=data)


def dump(idx):
    """index.json: an entry or a history a line (small, and readable in a
    diff)."""
    line = lambda x: json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return ("{\"entries\": [\n" + ",\n".join(line(e) for e in idx["entries"]) + "\n],\n\"histories\": [\n"
            + ",\n".join(line(h) for h in idx["histories"]) + "\n]}\n")


def write(root, outdir):
    idx = index(root)
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "index.json"), "w") as f:
        f.write(dump(idx))
    with open(os.path.join(outdir, "index.html"), "w") as f:
        f.write(page(idx))
    return idx


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    idx = write(sys.argv[1], sys.argv[2])
    print(f"{len(idx['entries'])} comparisons, {len(idx['histories'])} histories -> {sys.argv[2]}")
