"""The zns-sweep kind's report of equal capacity: the smallest device on which
each policy fails no create (kinds/zns_capacity.py bisects it), its
quantiles with order-statistic intervals, the shares of traces with a failed
create with Wilson intervals, zone-pack against the shared log as issue 47's
target states it, why creates failed just below, and the Pareto plot.
kinds/zns_sweep_report.py's write calls capacity_section."""
import collections
import math
import os
import random
import statistics

from .zns_sweep_report import COLOURS, MAX_OVER_PEAK, NO_RESERVE, _cause, _policies, _space, _wa, mean_ci


def quantile_ci(xs, q, level=0.95):
    """(x, lo, hi): the q-quantile of xs by nearest rank (the ceil(q n)-th
    smallest) and its distribution-free order-statistic interval: the
    l-th and u-th smallest with l the largest rank and u the smallest such
    that P(B < l) <= (1 - level) / 2 and P(B < u) >= 1 - (1 - level) / 2,
    B ~ Binomial(n, q) (a bound beyond the sample: None). Values may be
    math.inf (no device stored every create)."""
    xs = sorted(xs)
    n = len(xs)
    if not n:
        return None, None, None
    k = max(1, math.ceil(q * n))
    cdf, acc = [], 0.0  # cdf[j] = P(B <= j)
    for j in range(n + 1):
        acc += math.comb(n, j) * q ** j * (1 - q) ** (n - j)
        cdf.append(acc)
    a = (1 - level) / 2
    # P(B < l) = cdf[l - 1]; the l-th smallest (1-based) is xs[l - 1].
    lows = [l for l in range(1, n + 1) if cdf[l - 1] <= a]
    highs = [u for u in range(1, n + 1) if cdf[u - 1] >= 1 - a]
    lo = xs[max(lows) - 1] if lows else None
    hi = xs[min(highs) - 1] if highs else None
    return xs[k - 1], lo, hi


def wilson(k, n, z=1.959964):
    """(share, lo, hi): k of n and its Wilson score interval (95%)."""
    if not n:
        return None, None, None
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return p, max(0.0, c - h), min(1.0, c + h)


def _boot(seeds, stat, n_boot=2000):
    """The percentile bootstrap 95% interval of stat(a resample of seeds),
    resampled by seed (a fixed seed: the same numbers every time)."""
    rng = random.Random(1)
    xs = sorted(stat(rng.choices(seeds, k=len(seeds))) for _ in range(n_boot))
    return xs[int(0.025 * n_boot)], xs[min(n_boot - 1, int(0.975 * n_boot))]


def capacity_cells(doc, device="main"):
    """(policy, reserve) -> seed -> the min-capacity entry of the report seeds."""
    out = collections.defaultdict(dict)
    for e in doc["results"]:
        if e["scenario"] == "min-capacity" and e.get("half") == "report" and e.get("device", "main") == device:
            out[(e["policy"], e["reserve"])][e["seed"]] = e
    return out


def _cap(e):
    """The smallest device's capacity outside the reserve over the trace's
    peak live data, in % (inf: none up to MAX_OVER_PEAK times the peak)."""
    x = e["metrics"].get("capacity_over_peak")
    return math.inf if x is None else 100 * x


def _peak(doc, device, seed):
    return doc.get("traces" if device == "main" else f"traces:{device}", {})[str(seed)]["peak_live_bytes"]


def _least(doc, device, e):
    """The fewest zones that can hold the trace's peak live data (outside
    the reserve, for the policies it binds): the smallest answer there is."""
    _, _, cap, _ = _space(doc, device)
    return math.ceil(_peak(doc, device, e["seed"]) / cap) + (0 if e["policy"] in NO_RESERVE else e["reserve"])


def _cap_checked(doc, device, e):
    """_cap of the smallest device above which no device asked failed (the
    bisection's answer where its checks found nothing): what a seed that is
    not monotone needs at least, to the devices asked."""
    if e["zones"] is None:
        return math.inf
    _, _, cap, _ = _space(doc, device)
    z = max([e["zones"]] + [int(k) + 1 for k, bad in e.get("asked", {}).items() if bad and int(k) > e["zones"]])
    return 100 * (z - e["reserve"]) * cap / _peak(doc, device, e["seed"])


def _at95(doc, device, policy, reserve):
    """seed -> failed creates of the sweep's cell at 95% fill."""
    return {e["seed"]: e["metrics"]["failed"] for e in doc["results"]
            if e["scenario"] == "sweep" and e.get("half") == "report" and e.get("device", "main") == device
            and e["policy"] == policy and e["reserve"] == reserve and e["fill"] is not None
            and abs(e["fill"] - 0.95) < 1e-9}


def _pct(x):
    return "-" if x is None else ("none" if math.isinf(x) else f"{x:.1f}")


def capacity_rows(doc, device="main"):
    """Per policy and reserve: the smallest device's capacity (capacity_over_peak,
    %) median, p90 and max with order-statistic intervals; relocated GiB,
    write amplification and p99 create latency there (means with bootstrap
    intervals); the share of traces with any failed create at 95% fill with
    its Wilson interval; the seeds whose checks broke monotonicity."""
    cells = capacity_cells(doc, device)
    reserves = sorted({r for _, r in cells})
    rows = []
    for reserve in reserves:
        for p in _policies(doc, device):
            c = cells.get((p, reserve))
            if not c:
                continue
            es = [c[k] for k in sorted(c)]
            caps = [_cap(e) for e in es]
            ok = [e for e in es if e["zones"] is not None]
            f95 = _at95(doc, device, p, reserve)
            rows.append({
                "policy": p, "reserve": reserve, "n": len(es), "none": len(es) - len(ok),
                "median": quantile_ci(caps, 0.5), "p90": quantile_ci(caps, 0.9), "max": max(caps),
                "p90_checked": quantile_ci([_cap_checked(doc, device, e) for e in es], 0.9),
                "at_least": sum(1 for e in ok if e["zones"] == _least(doc, device, e)),
                "relocated_gib": mean_ci([e["metrics"]["relocated_bytes"] / 2**30 for e in ok]),
                "wa": mean_ci([_wa(e["metrics"]) for e in ok]),
                "p99_ms": mean_ci([1e3 * e["metrics"]["create_latency_p99_s"] for e in ok
                                   if e["metrics"].get("create_latency_p99_s") is not None]),
                "any_failed_95": wilson(sum(1 for v in f95.values() if v > 0), len(f95)) + (len(f95),),
                "broken": sorted(e["seed"] for e in es if e.get("broken")),
                "probes": sum(e["metrics"].get("probes", 0) for e in es),
            })
    return rows


def _ci3(t, f="{:.1f}"):
    x, lo, hi = t
    if x is None:
        return "-"
    g = lambda v: "?" if v is None else ("none" if math.isinf(v) else f.format(v))
    return f"{g(x)} [{g(lo)}, {g(hi)}]"


def capacity_table(doc, device="main"):
    lines = ["| reserve | policy | median | p90 | max | fill at the p90 | seeds at the least device | relocated GiB | "
             "write amplification | p99 create latency, ms | traces with a failed create at 95% fill | seeds not "
             "monotone | p90, no device asked above failing |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in capacity_rows(doc, device):
        p90 = r["p90"][0]
        share, lo, hi, n = r["any_failed_95"]
        lines.append(
            f"| {r['reserve']} | {r['policy']} | {_ci3(r['median'])} | {_ci3(r['p90'])} | {_pct(r['max'])} | "
            f"{'-' if p90 is None or math.isinf(p90) else f'{1e4 / p90:.1f}%'} | {r['at_least']} | "
            f"{_ci3(r['relocated_gib'], '{:.2f}')} | "
            f"{_ci3(r['wa'], '{:.3f}')} | {_ci3(r['p99_ms'], '{:.0f}')} | "
            + ("-" if share is None else f"{round(share * n)} of {n}: {100 * share:.0f}% [{100 * lo:.0f}, {100 * hi:.0f}]")
            + f" | {len(r['broken'])}" + (f" (seeds {', '.join(map(str, r['broken']))})" if r["broken"] else "")
            + (f"; {r['none']} above {MAX_OVER_PEAK}x" if r["none"] else "") + f" | {_ci3(r['p90_checked'])} |")
    return "\n".join(lines) + "\n"


def capacity_compare(doc, device="main", a="zone-pack", b="shared-log"):
    """Per reserve, a against b paired by seed: the difference of their
    p90 capacities (points of the peak) and the ratio of their mean
    relocated bytes, each with a bootstrap interval over the seeds; and
    their shares of traces with any failed create at 95% fill."""
    cells = capacity_cells(doc, device)
    out = []
    for reserve in sorted({r for _, r in cells}):
        ca, cb = cells.get((a, reserve), {}), cells.get((b, reserve), {})
        seeds = sorted(set(ca) & set(cb))
        if not seeds:
            continue
        p90 = lambda c, ss: quantile_ci([_cap(c[k]) for k in ss], 0.9)[0]
        diff = lambda ss: p90(ca, ss) - p90(cb, ss)
        rel = lambda c, ss: sum(c[k]["metrics"].get("relocated_bytes", 0) for k in ss if c[k]["zones"] is not None)
        ratio = lambda ss: rel(ca, ss) / rel(cb, ss) if rel(cb, ss) else math.inf
        fa, fb = _at95(doc, device, a, reserve), _at95(doc, device, b, reserve)
        both = sorted(set(fa) & set(fb))
        out.append({"reserve": reserve, "n": len(seeds), "a": a, "b": b,
                    "p90_a": p90(ca, seeds), "p90_b": p90(cb, seeds),
                    "p90_diff": (diff(seeds),) + _boot(seeds, diff),
                    "relocated_ratio": (ratio(seeds),) + _boot(seeds, ratio),
                    "any_failed_95_a": wilson(sum(fa[k] > 0 for k in both), len(both)),
                    "any_failed_95_b": wilson(sum(fb[k] > 0 for k in both), len(both)),
                    "any_failed_95_only_a": sum(fa[k] > 0 and fb[k] == 0 for k in both),
                    "any_failed_95_only_b": sum(fb[k] > 0 and fa[k] == 0 for k in both)})
    return out


def capacity_compare_lines(doc, device="main"):
    md = []
    for c in capacity_compare(doc, device):
        d, q = c["p90_diff"], c["relocated_ratio"]
        fa, fb = c["any_failed_95_a"], c["any_failed_95_b"]
        within = d[0] <= 2
        third = q[0] <= 1 / 3
        if fa[0] is None:
            share, no_more = "no cell at 95% fill", None
        else:
            no_more = fa[0] <= fb[0]
            share = (f"traces with a failed create at 95% fill {100 * fa[0]:.0f}% [{100 * fa[1]:.0f}, "
                     f"{100 * fa[2]:.0f}] against {100 * fb[0]:.0f}% [{100 * fb[1]:.0f}, {100 * fb[2]:.0f}] "
                     f"({'no higher' if no_more else 'higher'}; {c['any_failed_95_only_a']} traces fail only under "
                     f"{c['a']}, {c['any_failed_95_only_b']} only under {c['b']})")
        md.append(
            f"- reserve {c['reserve']}, {c['n']} seeds: p90 capacity {c['p90_a']:.1f}% ({c['a']}) against "
            f"{c['p90_b']:.1f}% ({c['b']}), a difference of {d[0]:+.1f} [{d[1]:+.1f}, {d[2]:+.1f}] points "
            f"({'within' if within else 'not within'} 2); relocated bytes at that capacity {q[0]:.2f} "
            f"[{q[1]:.2f}, {q[2]:.2f}] times {c['b']}'s ({'at most' if third else 'more than'} a third); "
            f"{share}. Target " + ("not judged" if no_more is None else "met" if within and third and no_more
                                   else "not met") + ".")
    return md


def capacity_failure_table(doc, device="main"):
    """Why creates failed on the largest device the bisection asked that
    failed (most often one zone below the smallest): causes and dead data."""
    cells = capacity_cells(doc, device)
    _, _, cap, _ = _space(doc, device)
    lines = ["| reserve | policy | failed creates (traces) | causes | dead data when it failed, zones: median [max] |",
             "| --- | --- | --- | --- | --- |"]
    for (p, reserve), c in sorted(cells.items(), key=lambda kv: (kv[0][1], _policies(doc, device).index(kv[0][0]))):
        fs = [f for e in c.values() for f in e.get("failures_below", [])]
        if not fs:
            continue
        causes = collections.Counter(_cause(f["reason"]) for f in fs)
        dead = [f.get("dead_bytes", 0) / cap for f in fs]
        lines.append(f"| {reserve} | {p} | {len(fs)} ({sum(1 for e in c.values() if e.get('failures_below'))}) | "
                     + "; ".join(f"{k}: {n}" for k, n in causes.most_common()) + " | "
                     + f"{statistics.median(dead):.1f} [{max(dead):.1f}] |")
    return "\n".join(lines) + "\n"


def capacity_section(doc, outdir):
    """The smallest device by bisection (kinds/zns_capacity.py, smallest_passing),
    per device; nothing when the run did not bisect."""
    if not any(e["scenario"] == "min-capacity" for e in doc["results"]):
        return []
    mc = doc["sweep"].get("min_capacity", {})
    devices = ["main"] + [d["name"] for d in doc["sweep"].get("devices", [])]
    png = pareto_plot(doc, outdir)
    md = ["## Equal capacity: the smallest device with no failed create", "",
          "For every report seed, reserve and policy, the fewest zones on which the replay (time model on) fails "
          "no create, by bisection over the zone count: first the device of "
          f"{100 * mc.get('start_fill', 0.95):.0f}% fill, then, while it fails, of "
          + ", ".join(f"{100 * f:.0f}%" for f in mc.get("up_fills", [])) + " fill; then bisection between the "
          "largest that failed and the first that passed. The bisection assumes that a larger device never fails "
          "more; the devices " + ", ".join(f"+{d}" for d in mc.get("check_above", [])) + " zones above the answer "
          "(each should store every create) and " + ", ".join(f"-{d}" for d in mc.get("check_below", []))
          + " below it (each should fail one) check it, and a seed where one does not is counted as not monotone "
          "(its answer is still the bisection's; the last column gives the p90 of the smallest device above which "
          "no device asked failed, which for such a seed is larger). The least device is the fewest zones that "
          "hold the peak outside the reserve: no policy can do with less, so a policy whose answer is there for "
          "most seeds is limited by the peak, not by its placement.", "",
          "**Capacity** is the capacity of the zones outside the reserve over the trace's peak live data, in % "
          "(100% would hold the peak exactly; its inverse is the sweep's fill). Median and p90 are the 50th and "
          "90th of the seeds' values in order (nearest rank), each [with its distribution-free 95% order-statistic "
          "interval]; max is the largest. Relocated bytes (GiB per trace), write amplification and p99 create "
          "latency are those of the replay on the smallest device, means [95% bootstrap interval]. The share of "
          "traces with any failed create at 95% fill is the sweep's cell there, with its 95% Wilson interval.", ""]
    for device in devices:
        if not capacity_cells(doc, device):
            continue
        md += [f"### {'32 MiB zones (main device)' if device == 'main' else 'Device ' + device}", "",
               capacity_table(doc, device)]
        lines = capacity_compare_lines(doc, device)
        if lines:
            md += ["zone-pack against the shared log (issue 47's target: p90 capacity within 2 points, at most a third "
                   "of the relocated bytes, no higher a share of traces with a failed create at 95%). Differences "
                   "and ratios with 95% bootstrap intervals, resampled by seed:", ""] + lines + [""]
        md += ["Why creates failed on the largest device that failed (for most seeds one zone below the smallest):",
               "", capacity_failure_table(doc, device)]
    if png:
        md += [f"![{png}]({png})", ""]
    return md


def pareto_plot(doc, outdir):
    """zns-capacity-pareto.png: per device a panel, a point per policy and
    reserve at its p90 capacity (x, with its order-statistic interval) and
    its mean relocated GiB per trace at its smallest device (y, with its
    bootstrap interval)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    devices = [d for d in ["main"] + [x["name"] for x in doc["sweep"].get("devices", [])] if capacity_cells(doc, d)]
    if not devices:
        return None
    fig, axes = plt.subplots(1, len(devices), figsize=(5.2 * len(devices), 4.2), squeeze=False)
    markers = {0: "o", 1: "s", 2: "^"}
    for ax, device in zip(axes[0], devices):
        for r in capacity_rows(doc, device):
            x, xlo, xhi = r["p90"]
            y, ylo, yhi = r["relocated_gib"]
            if x is None or math.isinf(x) or y is None:
                continue
            xlo = x if xlo is None else xlo
            xhi = x if xhi is None or math.isinf(xhi) else xhi
            colour = COLOURS.get(r["policy"].removesuffix("-idle"))
            ax.errorbar([x], [y], xerr=[[x - xlo], [xhi - x]], yerr=[[y - ylo], [yhi - y]], fmt=markers.get(
                r["reserve"], "D"), color=colour, mfc="none" if r["policy"].endswith("-idle") else colour, ms=6,
                capsize=3, label=f"{r['policy']}, reserve {r['reserve']}")
        ax.set_title("32 MiB zones" if device == "main" else device)
        ax.set_xlabel("p90 capacity for no failed create (% of peak live data)")
        ax.set_ylabel("relocated GiB per trace at that capacity (mean)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    name = "zns-capacity-pareto.png"
    fig.savefig(os.path.join(outdir, name), dpi=90)
    plt.close(fig)
    return name
