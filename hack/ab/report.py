"""results.json -> report.md and PNG plots. Everything shown is computed from
the JSON; nothing is scraped from command output."""
import json
import os

from . import stats, units, zns

DEFAULT_MCD = 3  # dockerd's default max-concurrent-downloads


def load(outdir):
    with open(os.path.join(outdir, "results.json")) as f:
        return json.load(f)


def label(params):
    return ", ".join(f"{k}={v}" for k, v in sorted((params or {}).items())) or "defaults"


def values(e):
    """(samples, unit, lower_is_better) of a result entry."""
    if e.get("scenario") == "http":
        return [x for x in e.get("rps", []) if x is not None], "req/s", False
    return e["times_s"], "s", True


def cell_key(e):
    return (e.get("profile"), e.get("image"), e.get("scenario"), e.get("container"), e.get("concurrent"))


def cell_name(e, kind):
    if kind == "pull":
        return f"{e['profile']} / {e['image']}"
    if kind == "checkpoint":
        c = f" (x{e['concurrent']})" if e.get("concurrent") else ""
        return f"{e['scenario']}: {e['container']}{c}"
    return f"{e['scenario']}: {e['container']}"


def comparisons(doc):
    """Per cell: patched against stock's default and (for scans) stock's best."""
    cells = {}
    for e in doc["results"]:
        cells.setdefault(cell_key(e), []).append(e)
    out = []
    for key, es in cells.items():
        pat = [e for e in es if e["flavor"] == "patched"]
        sto = [e for e in es if e["flavor"] == "stock"]
        if not pat or not sto:
            continue
        p = pat[0]
        pv, unit, lower = values(p)
        default = [e for e in sto if (e["params"] or {}).get("max-concurrent-downloads", DEFAULT_MCD) == DEFAULT_MCD
                   and len([k for k in (e["params"] or {}) if k != "max-concurrent-downloads"]) == 0] or sto[:1]
        row = {"cell": cell_name(p, doc["kind"]), "key": key, "unit": unit, "lower_is_better": lower,
               "patched": stats.summary(pv), "vs_default": None, "vs_best": None}
        d = default[0]
        row["stock_default"] = {"params": label(d["params"]), "entry": d, **(stats.summary(values(d)[0]) or {})}
        row["vs_default"] = stats.ratio_ci(pv, values(d)[0])
        if len(sto) > 1:
            scored = [(stats.summary(values(e)[0]), e) for e in sto]
            scored = [(s, e) for s, e in scored if s]
            if scored:
                s, best = (min if lower else max)(scored, key=lambda x: x[0]["median"])
                row["stock_best"] = {"params": label(best["params"]), "entry": best, **s}
                row["vs_best"] = stats.ratio_ci(pv, values(best)[0])
                s, worst = (max if lower else min)(scored, key=lambda x: x[0]["median"])
                row["stock_worst"] = {"params": label(worst["params"]), "entry": worst, **s}
        out.append(row)
    return out


def fmt_ratio(r, lower):
    if not r:
        return "n/a"
    if r["lo"] is None:
        return f"{r['ratio']:.2f} (one sample: no interval)"
    mark = "" if r["significant"] else " (n.s.)"
    better = (r["ratio"] < 1) == lower
    arrow = "" if not r["significant"] else (" better" if better else " worse")
    return f"{r['ratio']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}]{mark}{arrow}"


def fmt_v(x, unit):
    if x is None:
        return "-"
    return f"{x:.0f}" if unit == "req/s" else f"{x:.3f}"


def summary_table(doc):
    if doc["kind"] == "zns":
        return zns_table(doc)
    rows = comparisons(doc)
    lines = ["| cell | stock default | patched | patched/stock default [95% CI] | stock best | patched/best |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        u = r["unit"]
        sd = r["stock_default"]
        sb = r.get("stock_best")
        lines.append("| {} | {} {} ({}) | {} {} | {} | {} | {} |".format(
            r["cell"], fmt_v(sd.get("median"), u), u, sd["params"],
            fmt_v((r["patched"] or {}).get("median"), u), u, fmt_ratio(r["vs_default"], r["lower_is_better"]),
            f"{fmt_v(sb['median'], u)} {u} ({sb['params']})" if sb else "-",
            fmt_ratio(r["vs_best"], r["lower_is_better"]) if sb else "-"))
    return "\n".join(lines)


def spread_table(doc):
    """Pull scans, like seed 000's Table 1: per link and image, stock's best and
    worst setting, the difference (worst - best) / best, the seed's published
    difference where it gives one, and patched against both."""
    if doc["kind"] != "pull":
        return ""
    seed = (doc.get("seed") or {}).get("best_vs_worst_pct") or {}
    lines = ["| link | image | stock best | stock worst | worst vs best | seed: worst vs best | "
             "patched | patched/best [95% CI] | patched/default 3 [95% CI] |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    mcd = lambda e: (e["params"] or {}).get("max-concurrent-downloads", DEFAULT_MCD)
    for r in comparisons(doc):
        b, w, ps = r.get("stock_best"), r.get("stock_worst"), r["patched"]
        if not b:
            continue
        prof, img = r["key"][0], r["key"][1]
        sp = seed.get(prof, {}).get(img) if isinstance(seed.get(prof), dict) else None
        dflt = mcd(r["stock_default"]["entry"]) == DEFAULT_MCD
        lines.append("| {} | {} | {} s (c={}) | {} s (c={}) | {:.0f}% | {} | {} | {} | {} |".format(
            prof, img, fmt_v(b["median"], "s"), mcd(b["entry"]), fmt_v(w["median"], "s"), mcd(w["entry"]),
            100 * (w["median"] - b["median"]) / b["median"],
            f"{sp:.2f}%" if isinstance(sp, (int, float)) else "-",
            f"{fmt_v(ps['median'], 's')} s" if ps else "-",
            fmt_ratio(r["vs_best"], True) if ps else "-",
            fmt_ratio(r["vs_default"], True) if ps and dflt else "-"))
    if len(lines) == 2:
        return ""
    note = seed.get("note", "")
    return "\n".join(["## Best vs worst concurrency (seed 000, Table 1)", "",
                      "Stock's fastest and slowest max-concurrent-downloads per cell (medians), and the patched "
                      "daemon with its defaults." + (f" Seed: {note}" if note else ""), ""] + lines) + "\n"


def floor_table(doc):
    """Checkpoint suites with floor = true: each daemon against runc
    checkpoint --image-path plus fsync on the same kind of container."""
    runc = [e for e in doc["results"] if e["flavor"] == "runc"]
    if not runc:
        return ""
    lines = ["## The floor: runc checkpoint --image-path + fsync", "",
             "| container | runc | stock | patched | patched/runc [95% CI] | stock/runc [95% CI] | "
             "freeze runc | freeze patched |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in runc:
        same = [e for e in doc["results"] if cell_key(e) == cell_key(r)]
        by = {e["flavor"]: e for e in same}
        rs = stats.summary(r["times_s"])

        def med(f):
            e = by.get(f)
            m = stats.summary(e["times_s"]) if e else None
            return f"{fmt_v(m['median'], 's')} s" if m else "-"

        def ratio(f):
            e = by.get(f)
            return fmt_ratio(stats.ratio_ci(e["times_s"], r["times_s"]), True) if e and rs else "-"

        def frz(f):
            e = by.get(f)
            v = [x for x in (e or {}).get("freeze_s", []) if x is not None]
            return f"{fmt_v(stats.summary(v)['median'], 's')} s" if v else "-"

        rmed = f"{fmt_v(rs['median'], 's')} s" if rs else "-"
        lines.append(f"| {r['container']} | {rmed} | {med('stock')} | {med('patched')} | {ratio('patched')} | "
                     f"{ratio('stock')} | {frz('runc')} | {frz('patched')} |")
    return "\n".join(lines) + "\n"


def write(outdir):
    doc = load(outdir)
    if doc["kind"] == "zns":
        return write_zns(outdir, doc)
    plots = plot(doc, outdir)
    m = doc["machine"]
    md = [f"# {doc['suite']} ({doc['kind']})", ""]
    if doc.get("description"):
        md += [doc["description"], ""]
    md += [f"- suite file: `{doc.get('suite_file')}`, {doc['repetitions']} repetitions, "
           f"started {doc['started']}, finished {doc.get('finished') or '-'}"
           + (" **(interrupted: partial results)**" if doc.get("interrupted") else ""),
           f"- machine: {m.get('cpu')}, {m.get('cpus')} CPUs, {m.get('memory_gib')} GiB, kernel {m.get('kernel')}",
           "- daemons: " + ", ".join(f"{f} {v['version']}" for f, v in doc["daemons"].items())]
    if doc.get("link"):
        md.append(f"- link emulation backend: {doc['link'].get('backend')}")
    md += ["", "Times in seconds (lower is better) unless marked req/s. Ratios are patched/stock of the medians "
           "with a 95% bootstrap confidence interval; \"n.s.\" marks a difference that is not significant "
           "(the interval contains 1).", "", "## Summary", "", summary_table(doc), ""]
    st = spread_table(doc) or floor_table(doc)
    if st:
        md += [st, ""]
    for p in plots:
        md += [f"![{p}]({p})", ""]
    md += ["## Every sample", "", "| flavour | cell | params | n | median | min | max | samples | errors |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for e in doc["results"]:
        v, u, _ = values(e)
        s = stats.summary(v) or {}
        errs = "; ".join(sorted(set(e.get("errors", []))))[:200]
        md.append(f"| {e['flavor']} | {cell_name(e, doc['kind'])} | {label(e['params'])} | {s.get('n', 0)} | "
                  f"{fmt_v(s.get('median'), u)} | {fmt_v(s.get('min'), u)} | {fmt_v(s.get('max'), u)} | "
                  f"{', '.join(fmt_v(x, u) for x in v)} | {errs} |")
    warm = [e for e in doc["results"] if e.get("warmup_s")]
    if warm:
        md += ["", "## Warm-up pulls (not in the statistics)", "",
               "Each variant's first pulls of each image over each link, before the measured ones.", "",
               "| flavour | cell | params | warm-up times |", "| --- | --- | --- | --- |"]
        for e in warm:
            md.append(f"| {e['flavor']} | {cell_name(e, doc['kind'])} | {label(e['params'])} | "
                      f"{', '.join(fmt_v(x, 's') if x is not None else 'failed' for x in e['warmup_s'])} |")
    restores = [e for e in doc["results"] if e.get("restore_s")]
    if restores:
        md += ["", "## Restores", "", "| flavour | container | restored | restore time (median) | errors |",
               "| --- | --- | --- | --- | --- |"]
        for e in restores:
            ok = [x for x in e["restore_s"] if x is not None]
            med = stats.summary(ok)
            md.append(f"| {e['flavor']} | {e['container']} | {len(ok)}/{len(e['restore_s'])} | "
                      f"{fmt_v(med['median'], 's') if med else '-'} | "
                      f"{'; '.join(sorted(set(e.get('restore_error', []))))[:200]} |")
    frozen = [e for e in doc["results"] if any(x is not None for x in e.get("freeze_s", []))]
    if frozen:
        md += ["", "## Freeze (--leave-running), seen from inside the container", "",
               "The longest gap of the memory holder's 10 ms ticker around the checkpoint.", "",
               "| flavour | cell | median freeze (s) | samples |", "| --- | --- | --- | --- |"]
        for e in frozen:
            v = [x for x in e["freeze_s"] if x is not None]
            md.append(f"| {e['flavor']} | {cell_name(e, doc['kind'])} | {fmt_v(stats.summary(v)['median'], 's')} | "
                      f"{', '.join(fmt_v(x, 's') for x in v)} |")
    if doc.get("seed"):
        md += ["", "## Published numbers (seed)", "", "```", json.dumps(doc["seed"], indent=1), "```"]
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return doc


def plot(doc, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = []
    kind = doc["kind"]
    res = doc["results"]
    if not res:
        return out
    if kind == "pull":
        profiles = sorted({e["profile"] for e in res}, key=lambda p: [e["profile"] for e in res].index(p))
        fig, axes = plt.subplots(1, len(profiles), figsize=(5 * len(profiles), 4), squeeze=False)
        for ax, prof in zip(axes[0], profiles):
            images = sorted({e["image"] for e in res if e["profile"] == prof})
            for i, img in enumerate(images):
                color = f"C{i}"
                sto = [e for e in res if e["profile"] == prof and e["image"] == img and e["flavor"] == "stock"]
                pts = []
                for e in sto:
                    s = stats.summary(e["times_s"])
                    if s:
                        pts.append(((e["params"] or {}).get("max-concurrent-downloads", DEFAULT_MCD), s))
                pts.sort(key=lambda x: x[0])
                if pts:
                    xs = [p[0] for p in pts]
                    ax.errorbar(xs, [p[1]["median"] for p in pts],
                                yerr=[[p[1]["median"] - p[1]["min"] for p in pts], [p[1]["max"] - p[1]["median"] for p in pts]],
                                marker="o", color=color, capsize=3, label=f"stock {img}")
                for e in res:
                    if e["profile"] == prof and e["image"] == img and e["flavor"] == "patched":
                        s = stats.summary(e["times_s"])
                        if s:
                            ax.axhline(s["median"], color=color, linestyle="--", label=f"patched {img}")
            ax.set_title(f"{doc['suite']}, link: {prof}")
            ax.set_xlabel("max-concurrent-downloads (stock)")
            ax.set_ylabel("cold pull time (s)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, "pull.png"), dpi=120)
        out.append("pull.png")
    else:
        # One panel per unit: seconds (lower is better), req/s (higher is better).
        groups = {}
        for e in res:
            c = cell_name(e, kind)
            cells = groups.setdefault(values(e)[1], [])
            if c not in cells:
                cells.append(c)
        fig, axes = plt.subplots(1, len(groups), squeeze=False,
                                 figsize=(sum(max(4, 1.2 * len(c)) for c in groups.values()), 4))
        for ax, (unit, cells) in zip(axes[0], groups.items()):
            flavours = [f for f in ("stock", "patched", "runc") if any(e["flavor"] == f for e in res)]
            width = 0.8 / len(flavours)
            for j, f in enumerate(flavours):
                meds, lo, hi = [], [], []
                for c in cells:
                    es = [e for e in res if cell_name(e, kind) == c and e["flavor"] == f]
                    s = stats.summary(values(es[0])[0]) if es else None
                    meds.append(s["median"] if s else 0)
                    lo.append(s["median"] - s["min"] if s else 0)
                    hi.append(s["max"] - s["median"] if s else 0)
                ax.bar([i + (j - (len(flavours) - 1) / 2) * width for i in range(len(cells))], meds, width, yerr=[lo, hi],
                       capsize=3, label=f)
            ax.set_xticks(range(len(cells)))
            ax.set_xticklabels(cells, rotation=30, ha="right", fontsize=8)
            what = {"checkpoint": "checkpoint time"}.get(kind, "time")
            ax.set_ylabel(f"{what} (s), median, min-max" if unit == "s" else "requests/s, median, min-max")
            ax.grid(axis="y", alpha=0.3)
            ax.legend()
        fig.suptitle(f"{doc['suite']}: stock vs patched")
        fig.tight_layout()
        name = f"{kind}.png"
        fig.savefig(os.path.join(outdir, name), dpi=120)
        out.append(name)
    plt.close("all")
    return out


# --- zns: placement replays ---------------------------------------------

def _geometry(doc, e):
    """The geometry entry e was replayed on (older results: the document's)."""
    return e.get("geometry") or doc.get("geometry")


def zns_geometries(doc):
    """The geometries of the replays, smallest zones first: more than one
    when the suite scanned zone sizes."""
    out = []
    for e in doc["results"]:
        g = _geometry(doc, e)
        if g not in out:
            out.append(g)
    return sorted(out, key=lambda g: (g["zone_size"], g["zone_capacity"], g["zones"]))


def zns_plotted(doc):
    """The geometry whose time series a scan's report plots: the suite's
    plot_zone_size (the largest zone size unless set), and its entries."""
    geoms = zns_geometries(doc)
    g = doc.get("geometry") if doc.get("geometry") in geoms else geoms[-1]
    return g, [e for e in doc["results"] if _geometry(doc, e) == g]


def _not_stored(e):
    return sum(f["bytes"] for f in e.get("failures", []))


def zns_table(doc):
    """One row per placement policy; for a scan of zone sizes, one per zone
    size and policy."""
    if len(zns_geometries(doc)) > 1:
        return zns_scan_table(doc)
    lines = ["| policy | " + " | ".join(c for c, _ in zns.ROWS) + " |",
             "| --- |" + " --- |" * len(zns.ROWS)]
    for e in doc["results"]:
        lines.append(f"| {e['policy']} | " + " | ".join(fn(e["metrics"]) for _, fn in zns.ROWS) + " |")
    return "\n".join(lines)


SCAN_COLUMNS = (
    ("relocated by GC", lambda e: zns.gib(e["metrics"]["relocated_bytes"])),
    ("write amplification", lambda e: zns.ROWS[2][1](e["metrics"])),
    ("zone resets", lambda e: str(e["metrics"]["resets"])),
    ("mixed zones (max)", lambda e: str(e["metrics"]["mixed_zones_max"])),
    ("used-zone utilisation (mean)", lambda e: zns.pct(e["metrics"]["util_used_mean"])),
    ("failed creates", lambda e: f"{e['metrics']['failed']} of {e['metrics']['creates']}"),
    ("not stored", lambda e: zns.gib(_not_stored(e))),
)


def zns_scan_table(doc):
    geoms = zns_geometries(doc)
    capped = any(g["zone_capacity"] != g["zone_size"] for g in geoms)
    head = ["zone size", "zones"] + (["zone capacity"] if capped else []) + ["policy"] + [c for c, _ in SCAN_COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for g in geoms:
        for e in (e for e in doc["results"] if _geometry(doc, e) == g):
            cells = [units.human_size(g["zone_size"]), str(g["zones"])]
            cells += [units.human_size(g["zone_capacity"])] if capped else []
            cells += [e["policy"]] + [fn(e) for _, fn in SCAN_COLUMNS]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _scan_device(geoms):
    """The scan's devices in a line: what varies, then what does not."""
    ns = {g["zones"] * g["zone_size"] for g in geoms}
    sizes = ", ".join(units.human_size(g["zone_size"]) for g in geoms)
    out = f"zone sizes {sizes} (" + ", ".join(str(g["zones"]) for g in geoms) + " zones"
    out += f", a {units.human_size(ns.pop())} namespace)" if len(ns) == 1 else ")"
    caps = {g["zone_capacity"] / g["zone_size"] for g in geoms}
    if caps != {1.0}:
        out += "; capacity " + ", ".join(units.human_size(g["zone_capacity"]) for g in geoms)
    g = zns.Geometry(**geoms[0])
    return out + "; " + g.describe().split("; ", 1)[1]


def write_zns(outdir, doc):
    geoms = zns_geometries(doc) if doc["results"] else []
    scan = len(geoms) > 1
    if scan:
        shown, entries = zns_plotted(doc)
        note = f"{units.human_size(shown['zone_size'])} zones"
        plots = plot_zns_scan(doc, outdir, geoms)
        series = plot_zns(doc, outdir, entries, note)
    else:
        plots, series = plot_zns(doc, outdir), []
    m, t, pl = doc["machine"], doc.get("trace", {}), doc.get("placement", {})
    g = zns.Geometry(**doc["geometry"]) if doc.get("geometry") else None
    src = (f"`{t['file']}`" if t.get("file") else
           "generated: " + ", ".join(f"{k} = {v}" for k, v in (t.get("generated") or {}).items()))
    md = [f"# {doc['suite']} ({doc['kind']})", ""]
    if doc.get("description"):
        md += [doc["description"], ""]
    md += [f"- suite file: `{doc.get('suite_file')}`, a deterministic replay (no daemons), "
           f"started {doc['started']}, finished {doc.get('finished') or '-'}"
           + (" **(interrupted: partial results)**" if doc.get("interrupted") else ""),
           f"- machine: {m.get('cpu')}, {m.get('cpus')} CPUs, {m.get('memory_gib')} GiB, kernel {m.get('kernel')}",
           f"- trace: {src}; {t.get('creates', 0)} creates and {t.get('deletes', 0)} deletes of "
           f"{', '.join(t.get('containers', []))} over {t.get('duration_s', 0):g} s, "
           f"{zns.gib(t.get('bytes', 0))} in all; replayed from `{t.get('csv')}` (sha256 {t.get('sha256', '')[:16]}...)",
           f"- device: {g.describe() if g else '-'}" if not scan else
           f"- devices, every policy replayed on each: {_scan_device(geoms)}",
           f"- placement: concurrent images interleaved in {units.human_size(pl.get('chunk', 0))} chunks; "
           f"the shared log keeps {pl.get('gc_reserve')} empty zones for its collector",
           "", "## Summary", "", zns_table(doc), "",
           "Host written: block-padded bytes of the images (and of the failed images' partial writes). "
           "Relocated: live bytes the shared log's greedy collector copied out of a zone before resetting it. "
           "Write amplification: (host + relocated) / host. Mixed zones: zones holding data (live or dead, "
           "until their reset) of more than one container. Used-zone utilisation: live bytes / (non-empty zones "
           "x zone capacity); device utilisation: live bytes / all zones' capacity. Both are sampled after every "
           "delete and after every group of creates taken together; the minimum is over those samples, the mean "
           "weights each sample by how long it held (in trace time). "
           "A create that cannot fit fails and the replay goes on; the trace's later delete of that checkpoint "
           "then finds nothing to delete." + (" Not stored: the trace's bytes of the failed creates." if scan else ""),
           ""]
    for p in plots:
        md += [f"![{p}]({p})", ""]
    if scan:
        md += [f"## Over time, on {note}", "", f"The replays on {zns.Geometry(**shown).describe()}.", "",
               "| policy | " + " | ".join(c for c, _ in zns.ROWS) + " |", "| --- |" + " --- |" * len(zns.ROWS)]
        md += [f"| {e['policy']} | " + " | ".join(fn(e["metrics"]) for _, fn in zns.ROWS) + " |" for e in entries]
        md += [""]
        for p in series:
            md += [f"![{p}]({p})", ""]
    name = (lambda e: f"{units.human_size(_geometry(doc, e)['zone_size'])} {e['policy']}") if scan else \
        (lambda e: e["policy"])
    ordered = [e for g_ in geoms for e in doc["results"] if _geometry(doc, e) == g_] if scan else doc["results"]
    md += ["## Every metric", "", "| metric | " + " | ".join(name(e) for e in ordered) + " |",
           "| --- |" + " --- |" * len(ordered)]
    for k in (ordered[0]["metrics"] if ordered else {}):
        md.append(f"| {k} | " + " | ".join(str(e["metrics"].get(k)) for e in ordered) + " |")
    fails = [(e, f) for e in ordered for f in e.get("failures", [])]
    if fails:
        zs = "zone size | " if scan else ""
        md += ["", "## Failed creates", "", f"| {zs}policy | time (s) | container | checkpoint | bytes | why |",
               "|" + " --- |" * (7 if scan else 6)]
        for e, f in fails:
            zc = f"{units.human_size(_geometry(doc, e)['zone_size'])} | " if scan else ""
            md.append(f"| {zc}{e['policy']} | {f['time_s']:g} | {f['container']} | {f['checkpoint']} | "
                      f"{units.human_size(f['bytes'])} | {f['reason']} |")
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    return doc


def _instants(ts, vs):
    """Samples -> per distinct time: (times, value after the last sample there,
    highest value there), in percent."""
    t, settled, peak = [], [], []
    for x, v in zip(ts, vs):
        v = float("nan") if v is None else 100 * v
        if t and t[-1] == x:
            settled[-1] = v
            peak[-1] = max(peak[-1], v) if peak[-1] == peak[-1] else v
        else:
            t.append(x)
            settled.append(v)
            peak.append(v)
    return t, settled, peak


def _time_axis(ts):
    """Trace seconds in a readable unit: (scale, label)."""
    span = max(ts, default=0)
    if span >= 3 * 3600:
        return 1 / 3600, "trace time (h)"
    if span >= 180:
        return 1 / 60, "trace time (min)"
    return 1, "trace time (s)"


ZNS_COLOUR = {"shared-log": "C3", "zone-aware": "C0"}
ZNS_MARKER = {"shared-log": "o", "zone-aware": "s"}


def plot_zns_scan(doc, outdir, geoms):
    """zns-zone-size.png: each policy's relocation (and write amplification)
    and failed creates against the zone size."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator, NullLocator

    policies = list(dict.fromkeys(e["policy"] for e in doc["results"]))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11.5, 4.6))
    xs = [g["zone_size"] / (1 << 20) for g in geoms]
    creates = max((e["metrics"]["creates"] for e in doc["results"]), default=0)
    for pol in policies:
        c, mk = ZNS_COLOUR.get(pol), ZNS_MARKER.get(pol, "o")
        by = {json_key(_geometry(doc, e)): e for e in doc["results"] if e["policy"] == pol}
        pts = [(x, by[json_key(g)]) for x, g in zip(xs, geoms) if json_key(g) in by]
        px = [x for x, _ in pts]
        rel = [e["metrics"]["relocated_bytes"] / (1 << 30) for _, e in pts]
        a1.plot(px, rel, marker=mk, color=c, lw=1.6, ms=6, clip_on=False,
                label=pol if any(rel) else f"{pol}: nothing relocated (WA 1.000)")
        for x, e in pts:
            wa = e["metrics"]["write_amplification"]
            if e["metrics"]["relocated_bytes"] and wa is not None:
                a1.annotate(f"WA {wa:.3f}", (x, e["metrics"]["relocated_bytes"] / (1 << 30)), xytext=(0, 8),
                            textcoords="offset points", ha="center", fontsize=8, color=c)
        fail = [e["metrics"]["failed"] for _, e in pts]
        a2.plot(px, fail, marker=mk, color=c, lw=1.6, ms=6, clip_on=False,
                label=pol if any(fail) else f"{pol}: none failed")
        for x, e in pts:
            if e["metrics"]["failed"]:
                a2.annotate(zns.gib(_not_stored(e)), (x, e["metrics"]["failed"]), xytext=(0, 8),
                            textcoords="offset points", ha="center", fontsize=8, color=c)
    ns = {g["zones"] * g["zone_size"] for g in geoms}
    xlabel = "zone size" + (f" (zones = {units.human_size(ns.pop())} namespace / zone size)" if len(ns) == 1 else "")
    a1.set_ylabel("relocated by GC (GiB)")
    a1.set_title("(a) bytes relocated by garbage collection")
    a2.set_ylabel(f"failed creates (of {creates})")
    a2.set_title("(b) creates that found no room (label: GiB not stored)")
    a2.yaxis.set_major_locator(MaxNLocator(integer=True))
    for a in (a1, a2):
        a.set_xscale("log", base=2)
        a.set_xticks(xs)
        a.set_xticklabels([units.human_size(g["zone_size"]) for g in geoms])
        a.xaxis.set_minor_locator(NullLocator())
        a.set_xlabel(xlabel)
        a.grid(alpha=0.3)
        a.legend(fontsize=8, loc="upper left")
        a.set_xlim(xs[0] / 1.3, xs[-1] * 1.3)
        hi = max(a.get_ylim()[1] * 1.12, 1)
        a.set_ylim(-0.03 * hi, hi)  # a line at 0 stays clear of the axis
    fig.suptitle(f"{doc['suite']}: placement against zone size")
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "zns-zone-size.png"), dpi=120)
    plt.close("all")
    return ["zns-zone-size.png"]


def json_key(g):
    return json.dumps(g, sort_keys=True)


def plot_zns(doc, outdir, res=None, note=""):
    """The time series: space utilisation, relocation and mixed zones. res:
    the entries to plot (default: all); note: what the titles add (a scan's
    zone size)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    res = doc["results"] if res is None else res
    if not res:
        return []
    scale, xlabel = _time_axis([t for e in res for t in e["series"]["t_s"]])
    colour = ZNS_COLOUR
    out = []
    on = f", {note}" if note else ""

    def x(e):
        return [t * scale for t in e["series"]["t_s"]]

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for e in res:
        c = colour.get(e["policy"])
        for key, ls, what in (("util_used", "-", "live / used zones"), ("util_total", "--", "live / device")):
            # The line: the state once every event of an instant is done (it
            # holds until the next); a dot: the peak within the instant (a
            # round's new images before its old ones go).
            t, settled, peak = _instants(e["series"]["t_s"], e["series"][key])
            ax.step([v * scale for v in t], settled, where="post", color=c, lw=1.5 if ls == "-" else 1, ls=ls,
                    label=f"{e['policy']}: {what}")
            if ls == "-":
                ax.plot([v * scale for v in t], peak, ".", color=c, ms=3.5, alpha=0.7,
                        label=f"{e['policy']}: peak within a round")
    ax.set_ylim(0, 105)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("space utilisation (%)")
    ax.set_title(f"{doc['suite']}: space utilisation{on}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "zns-utilisation.png"), dpi=120)
    out.append("zns-utilisation.png")

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for e in res:
        c = colour.get(e["policy"])
        a1.step(x(e), [b / (1 << 30) for b in e["series"]["relocated_bytes"]], where="post", color=c, lw=1.6,
                label=f"{e['policy']} ({zns.gib(e['metrics']['relocated_bytes'])})")
        a2.step(x(e), e["series"]["mixed_zones"], where="post", color=c, lw=1.4, label=e["policy"])
    a1.set_ylabel("relocated by GC, cumulative (GiB)")
    a1.set_title("bytes relocated by garbage collection")
    a2.set_ylabel("zones")
    a2.set_title("zones holding more than one container's data")
    for a in (a1, a2):
        a.set_xlabel(xlabel)
        a.grid(alpha=0.3)
        a.legend(fontsize=8, loc="upper left")
        a.set_ylim(bottom=0)
    fig.suptitle(doc["suite"] + on)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "zns-relocation.png"), dpi=120)
    out.append("zns-relocation.png")
    plt.close("all")
    return out
