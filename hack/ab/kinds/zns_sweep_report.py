"""The zns-sweep kind's report: its cells' names and failure rule, the summary
and latency tables, why creates failed, the verdicts against zone-pack, the
safe fills and least capacities, the plots and the whole report.md (write). kinds/zns_sweep.py,
which runs the kind, imports them, and kinds/zns_capacity.py MAX_OVER_PEAK and NO_RESERVE;
the equal-capacity section is kinds/zns_capacity_report.py."""
import collections
import json
import os
import random
import re
import statistics

from .. import units
from ..report import header


# The largest device min_capacity tries: usable capacity this many times
# the peak live data (a fill of 25%).
MAX_OVER_PEAK = 4
# The policies that never relocate: the reserve binds neither.
NO_RESERVE = ("zone-aware", "zone-tail")


def cell_name(e):
    f = "-" if e.get("fill") is None else f"{e['fill']:.0%}"
    return f"{e['policy']} seed {e['seed']} reserve {e['reserve']} fill {f}"


def failures(doc):
    """None: failed creates are what a sweep measures, not failures of the run."""
    return []


def mean_ci(xs, level=0.95, n_boot=2000):
    """(mean, lo, hi): the mean of xs and its percentile bootstrap interval
    (a fixed seed: the same numbers every time)."""
    xs = [x for x in xs if x is not None]
    if not xs:
        return None, None, None
    m = statistics.fmean(xs)
    if len(xs) == 1:
        return m, m, m
    rng = random.Random(1)
    boots = sorted(statistics.fmean(rng.choices(xs, k=len(xs))) for _ in range(n_boot))
    a = (1 - level) / 2
    return m, boots[int(a * n_boot)], boots[min(n_boot - 1, int((1 - a) * n_boot))]


def ci_text(xs):
    """'mean [lo, hi]' of xs (mean_ci) to 3 decimals, or '-' when xs has no value."""
    m, lo, hi = mean_ci(xs)
    return "-" if m is None else f"{m:.3f} [{lo:.3f}, {hi:.3f}]"


def _cells(doc, scenario="sweep", half="report", device="main"):
    out = collections.defaultdict(dict)  # (policy, reserve, fill) -> seed -> metrics
    for e in doc["results"]:
        if e["scenario"] == scenario and e.get("half") == half and e.get("device", "main") == device:
            out[(e["policy"], e["reserve"], e["fill"])][e["seed"]] = e["metrics"]
    return out


def _wa(m):
    return m["write_amplification"] if m["write_amplification"] is not None else 1.0


def _space(doc, device):
    """(reserves, fills, zone capacity, traces) of device's cells."""
    sw = doc["sweep"]
    if device == "main":
        return sw["reserves"], sw["fills"], sw.get("device", {}).get("zone_capacity"), doc.get("traces", {})
    d = next(x for x in sw["devices"] if x["name"] == device)
    return d["reserves"], d["fills"], d["geometry"]["zone_capacity"], doc.get(f"traces:{device}", {})


def _policies(doc, device="main"):
    """The policies replayed on device: a [[devices]] device's own, else the sweep's."""
    sw = doc["sweep"]
    if device != "main":
        d = next(x for x in sw["devices"] if x["name"] == device)
        return d.get("policies") or sw["policies"]
    return sw["policies"]


def _policy_grid(doc, device, cells, caption, text):
    """Per reserve, a table of fill by policy: caption(reserve) above it,
    each cell text(the metrics of its report seeds' replays)."""
    policies = _policies(doc, device)
    reserves, fills, _, _ = _space(doc, device)
    lines = []
    for reserve in reserves:
        lines += [caption(reserve), "", "| fill | " + " | ".join(policies) + " |", "| --- |" + " --- |" * len(policies)]
        for fill in fills:
            row = [f"{fill:.0%}"] + [text(list(cells.get((p, reserve, fill), {}).values())) for p in policies]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def summary_table(doc, device="main"):
    def text(c):
        wa = ci_text([_wa(x) for x in c])
        return wa if wa == "-" else f"{wa}; {statistics.fmean(x['failed'] for x in c):.1f} failed"
    return _policy_grid(doc, device, _cells(doc, device=device),
                        lambda reserve: f"Reserve {reserve}: write amplification, mean over the report seeds "
                        "[95% bootstrap interval]; failed creates per trace, mean.", text)


def latency_table(doc, device="main"):
    """Per reserve and fill, every policy's create latency: the median and
    the 99th percentile over a trace's stored creates, and its relocation
    stall's 99th percentile, each a mean over the report seeds, the p99
    with its 95% bootstrap interval; "" when the device has no time model."""
    cells = _cells(doc, device=device)
    if not any(m.get("create_latency_p99_s") is not None for c in cells.values() for m in c.values()):
        return ""

    def text(c):
        p50 = [x["create_latency_p50_s"] for x in c if x.get("create_latency_p50_s") is not None]
        m, lo, hi = mean_ci([x.get("create_latency_p99_s") for x in c])
        st = [x["stall_p99_s"] for x in c if x.get("stall_p99_s") is not None]
        if m is None:
            return "-"
        return (f"{1e3 * statistics.fmean(p50):.0f} / {1e3 * m:.0f} [{1e3 * lo:.0f}, {1e3 * hi:.0f}]; "
                f"stall {1e3 * statistics.fmean(st):.0f}")
    return _policy_grid(doc, device, cells,
                        lambda reserve: f"Reserve {reserve}: create latency in ms, p50 / p99 [95% interval of the "
                        "p99's mean]; relocation stall p99, means over the report seeds.", text)


def _cause(reason):
    """A failed create's reason with its numbers left out: its cause."""
    return re.sub(r"\d+(\.\d+)?(B|KiB|MiB|GiB|TiB)?", "N", reason)


def failure_table(doc, device="main", min_fill=0.95):
    """Why creates failed, per reserve, fill (from min_fill) and policy that
    failed any on the report seeds: how many, on how many traces, each
    cause's count, and the dead data on the device when they failed (in
    zones: what relocation could have freed), median [max]; "" when the
    results keep no failures (a sweep from before they were kept)."""
    if not any("failures" in e for e in doc["results"] if e["scenario"] == "sweep"):
        return ""
    _, _, cap, _ = _space(doc, device)
    by = collections.defaultdict(list)  # (reserve, fill, policy) -> [(seed, failure)]
    seeds = collections.defaultdict(set)
    for e in doc["results"]:
        if e["scenario"] != "sweep" or e.get("half") != "report" or e.get("device", "main") != device:
            continue
        if e["fill"] is None or e["fill"] < min_fill - 1e-9:
            continue
        seeds[(e["reserve"], e["fill"])].add(e["seed"])
        for f in e.get("failures", []):
            by[(e["reserve"], e["fill"], e["policy"])].append((e["seed"], f))
    lines = ["| reserve | fill | policy | failed (traces with any) | causes | dead data when it failed, zones: "
             "median [max] |", "| --- | --- | --- | --- | --- | --- |"]
    order = {p: i for i, p in enumerate(doc["sweep"]["policies"])}
    for (reserve, fill, p), fs in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1], order.get(kv[0][2], 99))):
        causes = collections.Counter(_cause(f["reason"]) for _, f in fs)
        dead = [f.get("dead_bytes", 0) / cap for _, f in fs] if cap else []
        lines.append(f"| {reserve} | {fill:.0%} | {p} | {len(fs)} ({len({s for s, _ in fs})} of "
                     f"{len(seeds[(reserve, fill)])}) | "
                     + "; ".join(f"{c}: {n}" for c, n in causes.most_common()) + " | "
                     + (f"{statistics.median(dead):.1f} [{max(dead):.1f}]" if dead else "-") + " |")
    return "\n".join(lines) + "\n"


def verdicts(doc, against="zone-pack", device="main"):
    """zone-pack against every other policy in every reserve and fill, paired
    by seed over the report seeds: the mean difference (zone-pack's minus
    the other's) of failed creates and of write amplification, each with
    its 95% bootstrap interval. zone-pack 'wins' (or 'loses') on failed
    creates when their interval excludes 0; else on write amplification
    when its interval does, unless the mean difference of failed creates
    goes the other way ('mixed': lower write amplification for more failed
    creates, or the reverse); else they 'tie'. No correction for the number
    of comparisons: a table of them is read as a pattern, not one by one.
    With a time model, the 99th percentile of create latency is compared
    the same way, on its own (latency: wins, loses or ties)."""
    sw = doc["sweep"]
    cells = _cells(doc, device=device)
    reserves, fills, _, _ = _space(doc, device)
    out = []
    for reserve in reserves:
        for fill in fills:
            mine = cells.get((against, reserve, fill), {})
            for p in sw["policies"]:
                if p == against:
                    continue
                other = cells.get((p, reserve, fill), {})
                seeds = sorted(set(mine) & set(other))
                if not seeds:
                    continue
                f = mean_ci([mine[k]["failed"] - other[k]["failed"] for k in seeds])
                w = mean_ci([_wa(mine[k]) - _wa(other[k]) for k in seeds])
                v, on = "ties", ""
                if f[1] > 0 or f[2] < 0:
                    v, on = ("wins" if f[0] < 0 else "loses"), "failed creates"
                elif w[1] > 0 or w[2] < 0:
                    v, on = ("wins" if w[0] < 0 else "loses"), "write amplification"
                    if f[0] != 0 and (f[0] < 0) != (w[0] < 0):
                        v = "mixed"  # the other way on failed creates, if not significantly
                e = {"reserve": reserve, "fill": fill, "policy": p, "n": len(seeds),
                     "failed_diff": list(f), "wa_diff": list(w), "verdict": v, "on": on}
                if all(mine[k].get("create_latency_p99_s") is not None and
                       other[k].get("create_latency_p99_s") is not None for k in seeds):
                    d = mean_ci([mine[k]["create_latency_p99_s"] - other[k]["create_latency_p99_s"] for k in seeds])
                    e["p99_latency_diff_s"] = list(d)
                    e["latency"] = ("wins" if d[0] < 0 else "loses") if d[1] > 0 or d[2] < 0 else "ties"
                if device != "main":
                    e["device"] = device
                out.append(e)
    return out


def _reserve_table(policies, reserves, cell):
    """A table of a row per reserve and a column per policy, each cell
    cell(policy, reserve)."""
    lines = ["| reserve | " + " | ".join(policies) + " |", "| --- |" + " --- |" * len(policies)]
    for reserve in reserves:
        lines.append("| " + " | ".join([str(reserve)] + [cell(p, reserve) for p in policies]) + " |")
    return "\n".join(lines)


def safe_fill_table(doc, device="main"):
    """Per reserve and policy: the device (every zone) over the peak live
    data at the largest swept fill at which the policy fails no create,
    nor at any smaller fill, per report seed; mean [95% bootstrap
    interval], and how many seeds failed even at the smallest fill."""
    cells = _cells(doc, device=device)
    reserves, fills, cap, traces = _space(doc, device)

    def cell(p, reserve):
        xs, none = [], 0
        seeds = sorted(set().union(*(cells.get((p, reserve, f), {}).keys() for f in fills)))
        for seed in seeds:
            peak = traces[str(seed)]["peak_live_bytes"]
            best = None
            for f in sorted(fills):
                m = cells.get((p, reserve, f), {}).get(seed)
                if m is None or m["failed"] > 0:
                    break
                best = f
            if best is None:
                none += 1
                continue
            e = next(e for e in doc["results"] if e["scenario"] == "sweep" and e["policy"] == p
                     and e["seed"] == seed and e["reserve"] == reserve and e["fill"] == best
                     and e.get("half") == "report" and e.get("device", "main") == device)
            # (a device of a real zone count: the peak of the trace fitted to it)
            xs.append(e["zones"] * cap / e.get("peak_live_bytes", peak))
        text = ci_text(xs)
        return text + f" ({none} fail at {min(fills):.0%})" if none else text

    return _reserve_table(_policies(doc, device), reserves, cell)


def table_section(title, text, table):
    """A report section of a table that a sweep may not have (no time model,
    no failed create): its heading, what it holds, the table; nothing
    without the table."""
    if not table:
        return []
    return [f"## {title}", "", text, "", table]


def write(outdir, doc):
    sw = doc["sweep"]
    plots = plot(doc, outdir)
    vs = verdicts(doc)
    ts = doc.get("traces", {})
    hint_ok = [t["hint_within_2x"] for t in ts.values() if t.get("hint_within_2x") is not None]
    past_ok = [t["history_within_2x"] for t in ts.values() if t.get("history_within_2x") is not None]
    tm = sw["traces"]
    g = sw["device"]
    md = header(doc, "a deterministic replay (no daemons)") + [
        f"- traces: {sw['seeds']} seeds (1-{sw['tune_seeds']} tune the baselines' cleaner, "
        f"{sw['tune_seeds'] + 1}-{sw['seeds']} are reported); each {tm['containers']} containers of "
        f"{', '.join(tm['memory'])}, intervals {', '.join(f'{x:g}' for x in tm['intervals_s'])} s, keeping "
        f"{', '.join(map(str, tm['keeps']))}, over {tm['duration_s']:g} s; {tm['misfit']:.0%} of containers change "
        f"retention or interval partway, {tm.get('irregular', 0):.0%} checkpoint at random times (exponential gaps), "
        f"{tm['pin']:.0%} of checkpoints pinned 4-16 declared lifetimes; "
        f"lifetimes within 2x of the hint: {statistics.fmean(hint_ok):.0%} of deleted checkpoints, of the "
        f"container's past median: {statistics.fmean(past_ok):.0%} (means over the traces)",
        f"- device: zones of {units.human_size(g['zone_size'])} (capacity {units.human_size(g['zone_capacity'])}), "
        f"max open {g['max_open']}, max active {g['max_active']}, {g['block']}-byte blocks; zones = reserve + "
        "ceil(peak live / (fill x zone capacity)), so fill is the trace's peak live data over the zones outside "
        "the reserve",
        f"- time model: {costs_text(sw.get('costs'))}",
        f"- reserves {', '.join(map(str, sw['reserves']))}; fills {', '.join(f'{f:.0%}' for f in sw['fills'])}; "
        f"cleaners chosen on the tuning seeds: "
        + ", ".join(f"{p} {c}" for p, c in doc.get("chosen_cleaners", {}).items()),
        "", "## Write amplification and failed creates", "", summary_table(doc),
        "Write amplification: (host + relocated) / host bytes. A failed create stores nothing and the trace "
        "goes on, so a policy that fails creates writes less: read write amplification beside failed creates.",
        ""]
    for p in plots:
        md += [f"![{p}]({p})", ""]
    md += table_section(
        "Create latency and relocation stalls",
        "A create's latency runs from its arrival in the trace to its last byte on the device, relocation "
        "on its path (its stall) and waiting for the device or a stream slot included (the time model: "
        "docs/patches.md). Failed creates have none.", latency_table(doc))
    md += ["## zone-pack against each policy", "",
           "Paired by seed over the report seeds: the mean difference, zone-pack's minus the other's (negative: "
           "zone-pack lower), [95% bootstrap interval]. zone-pack wins or loses on failed creates where their "
           "interval excludes 0, else on write amplification where its interval does (mixed: the mean of failed "
           "creates goes the other way); else a tie. No correction for the number of comparisons.", "",
           "The latency verdict compares the 99th percentile of create latency the same way, on its own.", ""]
    md += verdict_lines(vs, sw["policies"])
    md += table_section(
        "Why creates failed",
        "Every failed create of the report seeds from 95% fill, by its reason with the numbers left out "
        "(results.json keeps each one with its numbers, its time and the device's dead bytes and empty "
        "zones then).", failure_table(doc))
    md += ["## The smallest device each policy needs", "",
           "From the sweep itself: the device's capacity (every zone, the reserve's too) over the trace's peak "
           "live data at the largest swept fill at which the policy fails no create (nor at a smaller one), "
           "mean over the report seeds [95% bootstrap interval]: an upper bound of the smallest device, to the "
           "grid of fills.", "", safe_fill_table(doc), ""]
    for d in sw.get("devices", []):
        md += device_section(doc, d)
        vs += verdicts(doc, device=d["name"])
    from .zns_capacity_report import capacity_section
    md += capacity_section(doc, outdir)
    with open(os.path.join(outdir, "report.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(outdir, "verdicts.json"), "w") as f:
        json.dump(vs, f, indent=1)
    return doc


def costs_text(c):
    if not c:
        return "none (no latency)"
    mb = lambda x: f"{x / 1e6:g} MB/s"
    return (f"the device appends {mb(c['write_bw'])} in all, a zone {mb(c['zone_bw'] or c['write_bw'])}, reads "
            f"{mb(c['read_bw'] or c['write_bw'])}; a reset takes {1e3 * c['reset_s']:g} ms, a finish "
            f"{1e3 * c['finish_s']:g} ms")


def verdict_lines(vs, policies):
    """The verdicts' table and their count per policy."""
    timed = any("latency" in v for v in vs)
    md = ["| reserve | fill | against | verdict | on | failed creates (diff) | write amplification (diff) |"
          + (" p99 latency, ms (diff) | latency |" if timed else ""),
          "| --- | --- | --- | --- | --- | --- | --- |" + (" --- | --- |" if timed else "")]
    for v in vs:
        f, w = v["failed_diff"], v["wa_diff"]
        row = (f"| {v['reserve']} | {v['fill']:.0%} | {v['policy']} | {v['verdict']} | {v['on'] or '-'} | "
               f"{f[0]:+.2f} [{f[1]:+.2f}, {f[2]:+.2f}] | {w[0]:+.4f} [{w[1]:+.4f}, {w[2]:+.4f}] |")
        if timed:
            d = v.get("p99_latency_diff_s")
            row += (f" {1e3 * d[0]:+.0f} [{1e3 * d[1]:+.0f}, {1e3 * d[2]:+.0f}] | {v['latency']} |" if d
                    else " - | - |")
        md.append(row)
    count = collections.Counter((v["policy"], v["verdict"]) for v in vs)
    lcount = collections.Counter((v["policy"], v.get("latency")) for v in vs)
    md += ["", "In all: " + "; ".join(
        f"against {p}: {count[(p, 'wins')]} wins, {count[(p, 'ties')]} ties, {count[(p, 'mixed')]} mixed, "
        f"{count[(p, 'loses')]} losses"
        + (f" (p99 latency: {lcount[(p, 'wins')]} wins, {lcount[(p, 'ties')]} ties, {lcount[(p, 'loses')]} losses)"
           if timed else "")
        for p in policies if p != "zone-pack") + ".", ""]
    return md


def device_section(doc, d):
    """The report of a [[devices]] device: its setup, write amplification,
    failed creates, latency, the verdicts and the smallest device."""
    g, tm = d["geometry"], d["traces"]
    ts = doc.get(f"traces:{d['name']}", {})
    zones = [e["zones"] for e in doc["results"] if e.get("device") == d["name"]]
    if d.get("zones"):
        peaks = [f["peak_live_bytes"] for t in ts.values() for f in t.get("fitted", {}).values()]
        scales = [f["scale"] for t in ts.values() for f in t.get("fitted", {}).values()]
        size = (f"{d['zones']} zones in every cell (the real device's), each trace fitted to the cell's fill "
                f"(images scaled {min(scales, default=0):.3f}x to {max(scales, default=0):.3f}x, "
                f"{min(peaks, default=0) / 2**30:.0f} to {max(peaks, default=0) / 2**30:.0f} GiB peak live data)")
    else:
        size = f"{min(zones, default=0)} to {max(zones, default=0)} zones over the cells"
    md = [f"## Device {d['name']}", "",
          f"- zones of {units.human_size(g['zone_size'])} (capacity {units.human_size(g['zone_capacity'])}), max open "
          f"{g['max_open']}, max active {g['max_active']}; {size}; chunk {units.human_size(d['chunk'])}",
          f"- time model: {costs_text(d.get('costs'))}",
          f"- traces: report seeds {', '.join(sorted(ts, key=int))}, each {tm['containers']} containers of "
          f"{', '.join(tm['memory'])}, intervals {', '.join(f'{x:g}' for x in tm['intervals_s'])} s, over "
          f"{tm['duration_s']:g} s (the sweep's mix otherwise); about "
          f"{statistics.fmean(t['creates'] for t in ts.values()):.0f} creates and "
          f"{statistics.fmean(t['peak_live_bytes'] for t in ts.values()) / 2**30:.0f} GiB peak live data each"
          f"{' before fitting' if d.get('zones') else ''}, written at {statistics.fmean(t['bytes'] / max(t['duration_s'], 1) for t in ts.values()) / 1e6:.0f} MB/s "
          "on average" if ts else "- traces: none",
          f"- reserves {', '.join(map(str, d['reserves']))}; fills {', '.join(f'{f:.0%}' for f in d['fills'])}; the "
          "cleaners chosen on the sweep's tuning seeds", "",
          summary_table(doc, d["name"]), latency_table(doc, d["name"])]
    ft = failure_table(doc, d["name"], min_fill=0)
    if ft:
        md += ["Why creates failed (every fill):", "", ft]
    md += verdict_lines(verdicts(doc, device=d["name"]), _policies(doc, d["name"]))
    md += ["The smallest device from the fills swept (the same ratio as above):", "",
           safe_fill_table(doc, d["name"]), ""]
    return md


COLOURS = {"shared-log": "tab:gray", "zone-aware": "tab:brown", "multi-log": "tab:blue", "zone-tail": "tab:olive",
           "zone-pack": "tab:red", "hint-log": "tab:green", "oracle": "black"}


def plot(doc, outdir):
    """zns-sweep-wa.png: write amplification against fill, a panel per
    reserve, a line per policy with its interval; zns-sweep-failed.png: the
    failed creates the same way; zns-sweep-latency.png: the p99 of create
    latency, with a time model."""
    # A report without its figures is not the study: a missing matplotlib
    # is an error (install python3-matplotlib), not a silent skip.
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sw = doc["sweep"]
    cells = _cells(doc)
    out = []
    figs = [("zns-sweep-wa.png", _wa, "write amplification"),
            ("zns-sweep-failed.png", lambda m: m["failed"], "failed creates per trace")]
    if any(m.get("create_latency_p99_s") is not None for c in cells.values() for m in c.values()):
        figs.append(("zns-sweep-latency.png", lambda m: None if m.get("create_latency_p99_s") is None
                     else 1e3 * m["create_latency_p99_s"], "p99 create latency (ms)"))
    for name, fn, ylabel in figs:
        fig, axes = plt.subplots(1, len(sw["reserves"]), figsize=(4.2 * len(sw["reserves"]), 3.6), sharey=True,
                                 squeeze=False)
        for ax, reserve in zip(axes[0], sw["reserves"]):
            for p in sw["policies"]:
                pts = [(f, *mean_ci([fn(x) for x in cells.get((p, reserve, f), {}).values()])) for f in sw["fills"]]
                pts = [x for x in pts if x[1] is not None]
                if not pts:
                    continue
                xs = [100 * x[0] for x in pts]
                # A log's idle variant in its colour, dashed.
                colour = COLOURS.get(p.removesuffix("-idle"))
                ax.plot(xs, [x[1] for x in pts], marker="o", ms=3, label=p, color=colour,
                        linestyle="--" if p.endswith("-idle") else "-")
                ax.fill_between(xs, [x[2] for x in pts], [x[3] for x in pts], alpha=0.15, color=colour)
            ax.set_title(f"reserve {reserve}")
            ax.set_xlabel("fill: peak live / usable capacity (%)")
            ax.grid(alpha=0.3)
        axes[0][0].set_ylabel(ylabel)
        axes[0][-1].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, name), dpi=90)
        plt.close(fig)
        out.append(name)
    return out
