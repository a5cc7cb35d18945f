"""results.json -> report.md and PNG plots. Everything shown is computed from
the JSON; nothing is scraped from command output."""
import json
import os

from . import stats, units, zns
from .kinds.checkpoint import BATCH

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
    if e.get("scenario") == "pingpong":  # the median round trip of each run
        return [x for x in e.get("p50_us", []) if x is not None], "µs", True
    return e["times_s"], "s", True


def cell_key(e):
    return (e.get("profile"), e.get("image"), e.get("scenario"), e.get("container"), e.get("concurrent"),
            e.get("endpoint"))


def cell_name(e, kind):
    if kind == "pull":
        return f"{e['profile']} / {e['image']}"
    if kind == "checkpoint":
        c = f" (x{e['concurrent']})" if e.get("concurrent") else ""
        return f"{e['scenario']}: {e['container']}{c}"
    if kind == "cpuquota":
        return f"{e['scenario']} @ {e['container']} CPU"
    if e.get("endpoint"):
        return f"{e['scenario']} {e['endpoint']}: {e['container']}"
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
    if unit in ("req/s", "files/s"):
        return f"{x:.0f}" if x >= 100 else f"{x:.2f}"
    if unit == "µs":
        return f"{x:.1f}"
    return f"{x:.3f}"


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


def together_table(doc):
    """Checkpoint suites with "alone" and "together": per flavour, each
    container's time beside the others against its time alone (seed 001,
    Figure 3), and the whole batch."""
    if doc["kind"] != "checkpoint":
        return ""
    es = {(e["flavor"], e["scenario"], e["container"]): e["times_s"] for e in doc["results"]
          if e["flavor"] in ("stock", "patched") and e.get("scenario") in ("alone", "together")}
    rows = []
    for (f, scen, c), together in es.items():
        if scen != "together" or c == BATCH:
            continue
        alone = es.get((f, "alone", c), [])
        rows.append(f"| {f} | {c} | {fmt_v(_med(alone), 's')} | {fmt_v(_med(together), 's')} | "
                    f"{_vs(together, alone, True)} |")
    if not rows:
        return ""
    lines = ["## Together against alone (seed 001, Figure 3)", "",
             "Each container's checkpoint time with all the suite's containers checkpointed at once, against its "
             "time alone (medians; ratio together/alone with a 95% bootstrap CI). The batch is the time from the "
             "requests to the last checkpoint done.", "",
             "| flavour | container | alone | together | together/alone [95% CI] |",
             "| --- | --- | --- | --- | --- |"] + rows
    if ("stock", "together", BATCH) in es or ("patched", "together", BATCH) in es:
        bs, bp = es.get(("stock", "together", BATCH), []), es.get(("patched", "together", BATCH), [])
        lines += ["", "| batch | stock | patched | patched/stock [95% CI] |", "| --- | --- | --- | --- |",
                  f"| all together | {fmt_v(_med(bs), 's')} | {fmt_v(_med(bp), 's')} | {_vs(bp, bs, True)} |"]
    return "\n".join(lines) + "\n"


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
                 f"- machine: {m.get('cpu')}, {m.get('cpus')} CPUs, {m.get('memory_gib')} GiB, kernel {m.get('kernel')}"]


def write(outdir):
    doc = load(outdir)
    if doc["kind"] == "zns":
        return write_zns(outdir, doc)
    plots = plot(doc, outdir)
    md = header(doc, f"{doc['repetitions']} repetitions") + [
        "- daemons: " + ", ".join(f"{f} {v['version']}" for f, v in doc["daemons"].items())]
    if doc.get("link"):
        md.append(f"- link emulation backend: {doc['link'].get('backend')}")
    md += ["", "Times in seconds (lower is better) unless marked req/s. Ratios are patched/stock of the medians "
           "with a 95% bootstrap confidence interval; \"n.s.\" marks a difference that is not significant "
           "(the interval contains 1).", "", "## Summary", "", summary_table(doc), ""]
    st = spread_table(doc) or floor_table(doc)
    if st:
        md += [st, ""]
    for section in (together_table(doc), http_table(doc), pingpong_table(doc), cpuquota_tables(doc)):
        if section:
            md += [section, ""]
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
        many = sum(len(c) for c in groups.values()) > 14
        fig, axes = plt.subplots(1, len(groups), squeeze=False,
                                 figsize=(min(16, sum(max(4, (0.6 if many else 1.2) * len(c)) for c in groups.values())),
                                          4.8 if many else 4))
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
            ax.set_xticklabels(cells, rotation=45 if many else 30, ha="right", fontsize=7 if many else 8)
            what = {"checkpoint": "checkpoint time", "cpuquota": "time to read every file"}.get(kind, "time")
            ax.set_ylabel({"s": f"{what} (s)", "req/s": "requests/s",
                           "µs": "TCP round trip, p50 (µs)"}.get(unit, unit) + ", median, min-max")
            ax.grid(axis="y", alpha=0.3)
            ax.legend()
        fig.suptitle(f"{doc['suite']}: stock vs patched")
        fig.tight_layout()
        name = f"{kind}.png"
        fig.savefig(os.path.join(outdir, name), dpi=120)
        out.append(name)
        out += plot_placements(doc, outdir, plt) + plot_cpuquota(doc, outdir, plt)
    plt.close("all")
    return out


# --- overhead: native, bridge, published port, host ------------------------

PLACEMENTS = ("native", "bridge", "published", "host")
PLACEMENT_NOTE = {"native": "a process in the test host", "bridge": "container on the bridge, at its address",
                  "published": "container on the bridge, at 127.0.0.1 through a published port",
                  "host": "container on the host network"}


def _entries(doc, scenario, **match):
    return [e for e in doc["results"] if e.get("scenario") == scenario
            and all(e.get(k) == v for k, v in match.items())]


def _placements(es):
    seen = {e["container"] for e in es}
    return [p for p in PLACEMENTS if p in seen]


def _samples(es, flavour, placement, field):
    for e in es:
        if e["flavor"] == flavour and e["container"] == placement:
            return [x for x in e.get(field, []) if x is not None]
    return []


def _med(xs):
    s = stats.summary(xs)
    return s["median"] if s else None


def _vs(a, b, lower):
    """a/b of medians with its interval, or '-'."""
    return fmt_ratio(stats.ratio_ci(a, b), lower) if a and b else "-"


def http_table(doc):
    """Seed 004's comparison: per endpoint, requests/s and latency of the
    server as a native process and in each container placement, per flavour,
    each against native; the seed's requests/s beside where it gives them."""
    es = _entries(doc, "http")
    if not es:
        return ""
    seed = (doc.get("seed") or {}).get("http_rps") or {}
    flavours = [f for f in ("stock", "patched") if any(e["flavor"] == f for e in es)]
    endpoints = list(dict.fromkeys(e.get("endpoint") or "/" for e in es))
    head = ["endpoint", "placement"] + [f"{f} req/s" for f in flavours]
    head += ["patched/stock [95% CI]"] if len(flavours) == 2 else []
    head += [f"{f} / native [95% CI]" for f in flavours] + ["seed req/s", "seed / native"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lat = ["| endpoint | placement | " + " | ".join(f"{f} mean / p50 / p99 (ms)" for f in flavours) + " |",
           "| --- | --- |" + " --- |" * len(flavours)]
    for ep in endpoints:
        sub = [e for e in es if (e.get("endpoint") or "/") == ep]
        sd = seed.get(ep) or {}
        for pl in _placements(sub):
            rps = {f: _samples(sub, f, pl, "rps") for f in flavours}
            cells = [ep, pl] + [f"{fmt_v(_med(rps[f]), 'req/s')}" for f in flavours]
            if len(flavours) == 2:
                cells.append(_vs(rps["patched"], rps["stock"], False))
            for f in flavours:
                native = _samples(sub, f, "native", "rps")
                cells.append("1" if pl == "native" and native else _vs(rps[f], native, False))
            sv, sn = sd.get(pl), sd.get("native")
            cells.append(fmt_v(sv, "req/s") if isinstance(sv, (int, float)) else "-")
            cells.append(f"{sv / sn:.2f}" if isinstance(sv, (int, float)) and isinstance(sn, (int, float)) and sn
                         else "-")
            rows.append("| " + " | ".join(cells) + " |")
            lc = []
            for f in flavours:
                m = [_med(_samples(sub, f, pl, k)) for k in ("latency_mean_s", "times_s", "latency_p99_s")]
                lc.append(" / ".join(f"{x * 1e3:.2f}" if x is not None else "-" for x in m))
            lat.append(f"| {ep} | {pl} | " + " | ".join(lc) + " |")
    used = _placements(es)
    out = ["## HTTP: native, bridge, published port, host (seed 004)", "",
           "The same server and the same wrk in each flavour's test host: "
           + "; ".join(f"{p}: {PLACEMENT_NOTE[p]}" for p in used)
           + ". Medians of the repetitions; \"/ native\" is each placement's requests/s over the native "
             "process's in the same flavour (above 1: faster than native)."
           + (" Seed 004 measured on a 4-vCPU AWS instance with wrk -t32 and Node 18; its bridge container was "
              "reached through a published port." if seed else ""), ""]
    out += rows + ["", "Latency (wrk's mean and percentiles, medians of the repetitions):", ""] + lat
    return "\n".join(out) + "\n"


def pingpong_table(doc):
    """Seed 002's point: message passing over the container network. Round
    trips of a small message per placement, per flavour, against native."""
    es = _entries(doc, "pingpong")
    if not es:
        return ""
    mp = (doc.get("seed") or {}).get("message_passing") or {}
    flavours = [f for f in ("stock", "patched") if any(e["flavor"] == f for e in es)]
    head = ["placement"] + [f"{f} mean / p50 / p99 (µs)" for f in flavours]
    head += ["patched/stock, p50 [95% CI]"] if len(flavours) == 2 else []
    head += [f"{f} / native, p50 [95% CI]" for f in flavours]
    head += ["seed: Docker / bare metal"] if mp else []
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    n = {x for e in es for x in e.get("round_trips", []) if x}
    cpus = {x for e in es for x in e.get("cpus", []) if x}
    pinned = ""
    if len(cpus) == 1:
        srv, cli = cpus.pop().split(",")
        pinned = (f". In each, the server runs on CPU {srv} and the client on CPU {cli}" if srv != cli
                  else f". In each, both run on CPU {srv}")
    for pl in _placements(es):
        cells = [pl]
        for f in flavours:
            m = [_med(_samples(es, f, pl, k)) for k in ("mean_us", "p50_us", "p99_us")]
            cells.append(" / ".join(fmt_v(x, "µs") for x in m))
        p50 = {f: _samples(es, f, pl, "p50_us") for f in flavours}
        if len(flavours) == 2:
            cells.append(_vs(p50["patched"], p50["stock"], True))
        for f in flavours:
            native = _samples(es, f, "native", "p50_us")
            cells.append("1" if pl == "native" and native else _vs(p50[f], native, True))
        if mp:
            v = mp.get("mpi_communication_time")
            cells.append(f"{v:.2f} (MPI communication time)" if pl == "bridge" and isinstance(v, (int, float))
                         else "-")
        rows.append("| " + " | ".join(cells) + " |")
    where = {"native": "two processes in the test host", "bridge": "two containers on the bridge network",
             "host": "two containers on the host network"}
    out = ["## TCP ping-pong: message passing (seed 002)", "",
           f"A client and a server exchange a small message {', '.join(map(str, sorted(n)))} times, one round "
           "trip after the other (hack/testimages/pingpong), as "
           + "; ".join(f"{p}: {where[p]}" for p in _placements(es)) + pinned
           + ". Each run's mean, median (p50) and 99th percentile round trip, medians of the repetitions; the "
             "ratios are of the p50s (a run's mean moves with a few preempted round trips)."]
    if mp:
        said = [f"{what} {mp[k]}x bare metal's" for k, what in (("mpi_communication_time", "MPI communication time"),
                                                                 ("run_time_mean", "run time on average"),
                                                                 ("run_time_max", "run time at most"))
                if isinstance(mp.get(k), (int, float))]
        out[-1] += f" Seed 002 ({mp.get('note', 'MPI over the container network')}): " + ", ".join(said) + "."
    return "\n".join(out + [""] + rows) + "\n"


def plot_placements(doc, outdir, plt):
    """overhead-placements.png: per endpoint (and ping-pong), each placement
    against native, per flavour, with the seed's ratio beside."""
    panels = []
    seed = (doc.get("seed") or {}).get("http_rps") or {}
    for ep in dict.fromkeys(e.get("endpoint") or "/" for e in _entries(doc, "http")):
        sub = [e for e in _entries(doc, "http") if (e.get("endpoint") or "/") == ep]
        panels.append((f"HTTP {ep}: requests/s", sub, "rps", False, seed.get(ep) or {}, "seed 004"))
    pp = _entries(doc, "pingpong")
    if pp:
        mp = (doc.get("seed") or {}).get("message_passing") or {}
        v = mp.get("mpi_communication_time")
        panels.append(("TCP ping-pong: median round trip", pp, "p50_us", True,
                       {"native": 1.0, "bridge": v} if isinstance(v, (int, float)) else {},
                       "seed 002: MPI communication time"))
    panels = [p for p in panels if "native" in _placements(p[1])]
    if not panels:
        return []
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4), squeeze=False)
    for ax, (title, es, field, lower, sd, seed_label) in zip(axes[0], panels):
        pls = _placements(es)
        flavours = [f for f in ("stock", "patched") if any(e["flavor"] == f for e in es)]
        series = [(f, f"C{i}") for i, f in enumerate(flavours)]
        has_seed = any(isinstance(sd.get(p), (int, float)) for p in pls if p != "native")
        width = 0.8 / (len(series) + (1 if has_seed else 0))
        for j, (f, colour) in enumerate(series):
            native = _med(_samples(es, f, "native", field))
            ys, lo, hi = [], [], []
            for p in pls:
                xs = _samples(es, f, p, field)
                m = _med(xs)
                r = m / native if m is not None and native else 0
                ys.append(r)
                lo.append(r - min(xs) / native if xs and native else 0)
                hi.append(max(xs) / native - r if xs and native else 0)
            ax.bar([i + (j - (len(series) - (0 if has_seed else 1)) / 2) * width for i in range(len(pls))], ys,
                   width, yerr=[lo, hi], capsize=3, color=colour, label=f)
        if has_seed:
            sn = sd.get("native")
            ys = [sd[p] / sn if isinstance(sd.get(p), (int, float)) and sn else 0 for p in pls]
            ax.bar([i + (len(series) - (len(series)) / 2) * width for i in range(len(pls))], ys, width,
                   color="0.75", hatch="//", edgecolor="0.4", label=seed_label)
        ax.axhline(1, color="k", lw=0.8)
        ax.set_xticks(range(len(pls)))
        ax.set_xticklabels(pls)
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("relative to native (" + ("lower" if lower else "higher") + " is better)")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    fig.suptitle(f"{doc['suite']}: each placement against a native process (medians, min-max)")
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "overhead-placements.png"), dpi=120)
    return ["overhead-placements.png"]


# --- cpuquota: workers against async I/O under a CPU limit (seed 003) ------

def cpu_value(c, ncpu):
    """A CPU limit for an axis: no limit counts as the machine's CPUs."""
    return float(ncpu or 1) if c is None else float(c)


def _cq_cells(doc):
    """(mode labels in suite order, CPU limits from the most to the least)."""
    es = [e for e in doc["results"] if "mode" in e]
    modes = list(dict.fromkeys(e["scenario"] for e in es))
    ncpu = (doc.get("machine") or {}).get("cpus")
    cpus = sorted({e.get("cpus") for e in es}, key=lambda c: -cpu_value(c, ncpu) - (0.001 if c is None else 0))
    return es, modes, cpus, ncpu


def _cq(es, flavour, mode, cpus, field="times_s"):
    for e in es:
        if e["flavor"] == flavour and e["scenario"] == mode and e.get("cpus") == cpus:
            return [x for x in e.get(field, []) if x is not None]
    return []


def crossover(doc, flavour):
    """Per worker mode: the CPU limits where it beats async (time to read
    every file, the ratio's 95% interval below 1), where it loses (above 1),
    and where the two cannot be told apart."""
    es, modes, cpus, _ = _cq_cells(doc)
    if "async" not in modes:
        return {}
    out = {}
    for m in modes:
        if not m.startswith("workers"):
            continue
        pays, ties, costs = [], [], []
        for c in cpus:
            r = stats.ratio_ci(_cq(es, flavour, m, c), _cq(es, flavour, "async", c))
            if not r:
                continue
            (ties if not r["significant"] else pays if r["ratio"] < 1 else costs).append(c)
        out[m] = (pays, ties, costs)
    return out


def cpus_phrase(cs):
    """[None, 1.5, 1] -> 'with no CPU limit and at 1.5 and 1 CPUs'"""
    nums = [f"{c:g}" for c in cs if c is not None]
    parts = ["with no CPU limit"] if None in cs else []
    if nums:
        listed = nums[0] if len(nums) == 1 else ", ".join(nums[:-1]) + " and " + nums[-1]
        parts.append(f"at {listed} CPU" + ("" if nums == ["1"] else "s"))
    return " and ".join(parts)


def _cpus_label(c):
    return "unlimited" if c is None else f"{c:g}"


def cpuquota_tables(doc):
    es, modes, cpus, ncpu = _cq_cells(doc)
    if not es:
        return ""
    flavours = [f for f in ("stock", "patched") if any(e["flavor"] == f for e in es)]
    out = ["## Where workers stop paying (seed 003)", "",
           "Time to read every file (median of the repetitions, seconds; files/s in brackets) per CPU limit "
           "(`docker run --cpus`), per way of reading: one file after the other, Promise.all over every file "
           "(libuv's pool does the I/O), or N worker threads each reading a slice with Promise.all. "
           "\"workers / async\": above 1, the workers are slower than plain async I/O.", ""]
    worker_modes = [m for m in modes if m.startswith("workers")]
    for f in flavours:
        head = ["CPUs"] + modes + (["fastest"]) + ([f"{m} / async" for m in worker_modes] if "async" in modes else [])
        out += [f"**{f}**", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for c in cpus:
            cells = [_cpus_label(c)]
            best = None
            for m in modes:
                t, fps = _med(_cq(es, f, m, c)), _med(_cq(es, f, m, c, "files_per_s"))
                cells.append(f"{t:.3f} ({fps:.0f})" if t is not None and fps is not None else "-")
                if t is not None and (best is None or t < best[0]):
                    best = (t, m)
            cells.append(best[1] if best else "-")
            if "async" in modes:
                a = _cq(es, f, "async", c)
                cells += [_vs(_cq(es, f, m, c), a, True) for m in worker_modes]
            out.append("| " + " | ".join(cells) + " |")
        verdicts = crossover(doc, f)
        if verdicts:
            out.append("")
        for m, (pays, ties, costs) in verdicts.items():
            said = [f"{what} {cpus_phrase(cs)}" for what, cs in (("faster than async", pays),
                                                                 ("slower", costs), ("no different", ties)) if cs]
            verdict = f"{m}: " + "; ".join(said)
            out.append(f"- {verdict}.")
        out.append("")
    # CPU time and throttling: why the workers stop paying
    out += ["CPU time the reader used (user and system, every thread) and the time the CFS quota held it back "
            "(cpu.stat's throttled time, summed over the CPUs it waited on), medians in seconds:", "",
            "| CPUs | mode | " + " | ".join(f"{f} CPU time / throttled" for f in flavours) + " |",
            "| --- | --- |" + " --- |" * len(flavours)]
    for c in cpus:
        for m in modes:
            cells = []
            for f in flavours:
                cu, th = _med(_cq(es, f, m, c, "cpu_s")), _med(_cq(es, f, m, c, "throttled_s"))
                cells.append(f"{cu:.2f} / {th:.2f}" if cu is not None and th is not None else
                             (f"{cu:.2f} / -" if cu is not None else "-"))
            out.append(f"| {_cpus_label(c)} | {m} | " + " | ".join(cells) + " |")
    seed = doc.get("seed") or {}
    runs = seed.get("runs") or []
    if runs:
        sf = seed.get("files")
        wl = doc.get("workload") or {}
        ours = (f"; ours read {wl['files']} files of {units.human_size(wl['file_size'])}"
                if wl.get("files") and wl.get("file_size") else "")
        out += ["", "### The seed's published runs beside ours", "",
                f"Seed 003 read {sf or '?'} files" + (f" of {seed['file_size']}" if seed.get("file_size") else "")
                + (f" ({seed['note']})" if seed.get("note") else "") + ours
                + ". Files per second puts the runs on one scale.", ""]
        head = ["seed run", "mode", "CPUs", "seed: time (median, runs)", "seed files/s"] + \
            [f"ours, {f}: files/s" for f in flavours]
        out += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for r in runs:
            ts = [x for x in r.get("elapsed_s", []) if isinstance(x, (int, float))]
            mode = r.get("mode", "")
            label = f"workers x{r.get('workers')}" if mode == "workers" else mode
            c = None if r.get("cpus", "unlimited") == "unlimited" else float(r["cpus"])
            med = _med(ts)
            ours = []
            for f in flavours:
                v = _med(_cq(es, f, label, c, "files_per_s"))
                ours.append(fmt_v(v, "files/s") if v is not None else "not measured")
            out.append("| " + " | ".join([r.get("label", label), label, _cpus_label(c),
                                         f"{med:.2f} s ({len(ts)})" if med else "-",
                                         fmt_v(sf / med, "files/s") if med and sf else "-"] + ours) + " |")
    return "\n".join(out) + "\n"


def plot_cpuquota(doc, outdir, plt):
    """cpuquota.png's companion, cpuquota-workers.png: (a) files/s against
    the CPU limit per mode and flavour, the seed's runs as markers; (b) each
    worker mode's time over async's: above 1 the workers cost."""
    es, modes, cpus, ncpu = _cq_cells(doc)
    if not es:
        return []
    flavours = [f for f in ("stock", "patched") if any(e["flavor"] == f for e in es)]
    style = {"stock": "--", "patched": "-"}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 5.2))
    xs = [cpu_value(c, ncpu) for c in cpus]
    for i, m in enumerate(modes):
        for f in flavours:
            pts = [(x, _cq(es, f, m, c, "files_per_s")) for x, c in zip(xs, cpus)]
            pts = [(x, v) for x, v in pts if v]
            if not pts:
                continue
            med = [_med(v) for _, v in pts]
            a1.errorbar([x for x, _ in pts], med, yerr=[[m_ - min(v) for m_, (_, v) in zip(med, pts)],
                                                        [max(v) - m_ for m_, (_, v) in zip(med, pts)]],
                        color=f"C{i}", ls=style.get(f, "-"), marker="o", ms=4, capsize=3, label=f"{m} ({f})")
    seed = doc.get("seed") or {}
    sf = seed.get("files")
    seen_seed = False
    for r in seed.get("runs") or []:
        ts = [x for x in r.get("elapsed_s", []) if isinstance(x, (int, float))]
        if not ts or not sf:
            continue
        mode = r.get("mode", "")
        label = f"workers x{r.get('workers')}" if mode == "workers" else mode
        c = None if r.get("cpus", "unlimited") == "unlimited" else float(r["cpus"])
        colour = f"C{modes.index(label)}" if label in modes else "0.4"
        a1.plot([cpu_value(c, ncpu)], [sf / _med(ts)], marker="D", mfc="none", mec=colour, ms=9, mew=1.5, ls="none")
        seen_seed = True
    a1.set_ylabel("files read per second (median, min-max)")
    a1.set_title("(a) throughput against the CPU limit")
    a1.set_ylim(bottom=0)
    worker_modes = [m for m in modes if m.startswith("workers")]
    if "async" in modes and worker_modes:
        for i, m in enumerate(modes):
            if m not in worker_modes:
                continue
            for f in flavours:
                pts = []
                for x, c in zip(xs, cpus):
                    r = stats.ratio_ci(_cq(es, f, m, c), _cq(es, f, "async", c))
                    if r:
                        pts.append((x, r))
                if not pts:
                    continue
                ys = [r["ratio"] for _, r in pts]
                lo = [r["ratio"] - (r["lo"] if r["lo"] is not None else r["ratio"]) for _, r in pts]
                hi = [(r["hi"] if r["hi"] is not None else r["ratio"]) - r["ratio"] for _, r in pts]
                a2.errorbar([x for x, _ in pts], ys, yerr=[lo, hi], color=f"C{i}", ls=style.get(f, "-"), marker="o",
                            ms=4, capsize=3, label=f"{m} ({f})")
        a2.axhline(1, color="k", lw=0.8)
        top = max(a2.get_ylim()[1], 1.1)
        a2.axhspan(1, top, color="C3", alpha=0.07)
        a2.text(0.02, 0.97, "above 1: workers slower than async", transform=a2.transAxes, va="top", fontsize=8,
                color="C3")
        a2.set_ylim(min(a2.get_ylim()[0], 0.9), top)
        a2.set_ylabel("time with workers / time with async (95% CI)")
        a2.set_title("(b) where workers stop paying")
    else:
        a2.set_visible(False)
    for a in (a1, a2):
        a.set_xticks(xs)
        a.set_xticklabels([("unlimited\n(" + f"{ncpu}" + " CPUs)") if c is None else f"{c:g}" for c in cpus])
        a.set_xlabel("CPU limit (docker run --cpus)")
        a.grid(alpha=0.3)
    # One legend for both panels: a colour per mode, a line style per flavour.
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=f"C{i}", marker="o", ms=4, label=m) for i, m in enumerate(modes)]
    handles += [Line2D([], [], color="0.3", ls=style.get(f, "-"), label=f) for f in flavours]
    if seen_seed:
        handles.append(Line2D([], [], color="0.3", marker="D", mfc="none", ms=8, ls="none",
                              label="seed 003's runs (files/s; colour: mode)"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5), fontsize=8, frameon=False)
    fig.suptitle(f"{doc['suite']}: reading many small files, worker threads against async I/O")
    fig.tight_layout(rect=(0, 0.08 + 0.04 * ((len(handles) - 1) // 5), 1, 1))
    fig.savefig(os.path.join(outdir, "cpuquota-workers.png"), dpi=120)
    return ["cpuquota-workers.png"]


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
    t, pl = doc.get("trace", {}), doc.get("placement", {})
    g = zns.Geometry(**doc["geometry"]) if doc.get("geometry") else None
    src = (f"`{t['file']}`" if t.get("file") else
           "generated: " + ", ".join(f"{k} = {v}" for k, v in (t.get("generated") or {}).items()))
    md = header(doc, "a deterministic replay (no daemons)") + [
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
