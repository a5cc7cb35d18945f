"""The pull kind's report: its cells' names, its sections after the
summary (the spread of stock's settings, the links as measured, the
timelines, the pulls' coldness), its plots and the warm-up lines after the
samples. kinds/pull.py, which runs the kind, imports them."""
import os

from .. import stats, systems, units
from .. import timeline as ab_timeline
from ..report import PEERS, comparisons, fmt_ratio, fmt_v, keyed, label

# dockerd's default max-concurrent-downloads (ab.systems.dockerd)
DEFAULT_MCD = systems.get("dockerd").DEFAULTS["max-concurrent-downloads"]
# A cold pull makes the registry send at least the image's bytes; this
# fraction of them leaves room for nothing but rounding.
COLD_FRACTION = 0.98


def cell_name(e):
    return f"{e['profile']} / {e['image']}" + (" (patched: first contact)" if e.get("arm") == "fresh" else "")


def sections(doc):
    return [spread_table(doc), link_table(doc), timeline_table(doc), coldness_table(doc)]


def timeline_table(doc):
    """Each capped link's median pull per test host, as the registry saw
    it (ab.timeline; the files in the link's timeline directory)."""
    profiles = (doc.get("link") or {}).get("profiles") or {}
    rows = []
    for name, rec in profiles.items():
        for label, lrec in ((name, rec), (f"{name}, second registry", rec.get("second") or {})):
            for m in (lrec.get("timeline") or {}).get("medians", []):
                rows.append((label, lrec["timeline"]["dir"], m))
    if not rows:
        return ""
    lines = ["## Where the time goes at the registry", "",
             "Each test host's median pull (warm-ups included) as the capping proxy in front of the registry saw it: "
             "seconds from its first blob request; the most blob requests open at once, when that many were first "
             "and last open, and the tail after; the floors its bytes give at the link's rate and at the cap per "
             "connection times the most requests open. Every pull, and a plot of the median ones: the link's "
             "timeline.md and timeline.png.", "",
             "| link | test host | pulls | median pull | requests | ranges | connections | most open | first range | "
             "most open from | until | tail | link floor | cap floor |",
             "|" + " --- |" * 14]
    for label, sub, m in rows:
        lines.append("| " + " | ".join([f"{label} ([timeline]({sub}/timeline.md))", m["host"], str(m["pulls"])]
                                        + ab_timeline.cells(m, sent=False)) + " |")
    return "\n".join(lines) + "\n"


def link_table(doc):
    """Each link as the suite configured it and as it was measured: the round
    trip (ping) once it was up, the emulator's counters when it came down."""
    profiles = (doc.get("link") or {}).get("profiles") or {}
    if not profiles:
        return ""
    lines = ["## Links as configured and as measured", "",
             f"Backend: {doc['link'].get('backend', '-')}. Measured: the round trip to the registry once the "
             "link was up (median of 5 TCP handshakes); the congestion control the registry's end sent with (its "
             "route's); packets, loss and queue drops the emulator counted over the whole profile, both directions.", "",
             "| link | flavor | rtt configured | rtt measured | rate | loss configured | congestion | packets | "
             "lost (%) | queue drops |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    rows = []
    for name, rec in profiles.items():
        rows.append((name, rec))
        if rec.get("second"):
            rows.append((f"{name}, second registry", rec["second"]))
    for name, rec in rows:
        c = rec.get("configured") or {}
        for f, m in (rec.get("measured") or {}).items():
            em = m.get("emulator") or {}
            dirs = [v for k, v in em.items() if isinstance(v, dict) and "Packets" in v]
            pk = sum(v.get("Packets", 0) for v in dirs)
            lost = sum(v.get("Lost", 0) for v in dirs)
            drops = sum(v.get("QueueDrops", 0) for v in dirs)
            rate = c.get("rate_bits_per_s")
            rate = f"{rate / 1e6:g} Mbit/s" if rate else "unlimited"
            if c.get("registry_conn_rate_bits_per_s"):
                rate += f"; the registry {c['registry_conn_rate_bits_per_s'] / 1e6:g} Mbit/s per connection"
            lines.append("| {} | {} | {} ms | {} | {} | {}% | {} | {} | {} | {} |".format(
                name, f, units.plain(c.get("rtt_ms", 0)),
                f"{m['rtt_ms']:.1f} ms" if m.get("rtt_ms") is not None else "failed",
                rate, units.plain(c.get("loss_pct", 0)), congestion(c, m),
                pk if dirs else "-", f"{lost} ({100 * lost / max(1, pk + lost):.2f}%)" if dirs else "-",
                drops if dirs else "-"))
    return "\n".join(lines) + "\n"


def congestion(configured, measured):
    """The registry end's congestion control as the report shows it: as
    measured, and what was asked for where that differs; results from before
    the link set it say the machine's default was used."""
    want = configured.get("congestion")
    got = (measured.get("congestion") or {}).get("registry")
    if want is None:
        return "the machine's default"
    if got is None:
        return f"{want} (not read back)"
    return want if got == want else f"**{got}** (configured {want})"


def coldness_table(doc):
    """Per cell and variant: what the registry sent per measured pull against
    the image's bytes (a pull below COLD_FRACTION of them failed as warm)."""
    images = doc.get("images") or {}
    rows = [e for e in doc["results"] if e.get("served_bytes") and images.get(e.get("image"))]
    if not rows:
        return ""
    lines = ["## Cold pulls: bytes the registry sent", "",
             f"Per measured pull, the bytes the registry's end of the link sent, against the image's layers. "
             f"A pull that moved less than {COLD_FRACTION:.0%} of them failed as not cold.", "",
             "| flavor | cell | params | image | sent per pull: median (min-max) | median / image |",
             "| --- | --- | --- | --- | --- | --- |"]
    profiles = (doc.get("link") or {}).get("profiles") or {}
    for e in rows:
        # two registries: the image from each
        total = images[e["image"]]["bytes"] * (2 if (profiles.get(e.get("profile")) or {}).get("second") else 1)
        # those of failed pulls are left out, as their times are
        sv = sorted(keyed(e, "served_bytes").values())
        if not sv:
            continue
        med = sv[len(sv) // 2]
        lines.append(f"| {e['flavor']} | {cell_name(e)} | {label(e['params'])} | {units.human_size(total)} | "
                     f"{units.human_size(med)} ({units.human_size(sv[0])}-{units.human_size(sv[-1])}) | "
                     f"{med / total:.3f} |")
    return "\n".join(lines) + "\n"


def spread_table(doc):
    """Pull scans, like seed 000's Table 1: per link and image, stock's best and
    worst setting, the difference (worst - best) / best, the seed's published
    difference where it gives one, and patched against both."""
    seed = (doc.get("seed") or {}).get("best_vs_worst_pct") or {}
    lines = ["| link | image | stock best | stock worst | worst vs best | seed: worst vs best | "
             "patched | patched/best [Holm CI] p | patched/default 3 [Holm CI] p |",
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
            prof, img + (" (patched: first contact)" if r.get("arm") == "fresh" else ""), fmt_v(b["median"], "s"), mcd(b["entry"]), fmt_v(w["median"], "s"), mcd(w["entry"]),
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


def plots(doc, outdir, plt):
    """pull.png: per link, stock's pull time against max-concurrent-downloads
    per image, patched's as a line."""
    res = doc["results"]
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
            # each peer at its best setting (report.PEERS)
            for f in PEERS:
                scored = [(stats.summary(e["times_s"]), e) for e in res
                          if e["profile"] == prof and e["image"] == img and e["flavor"] == f]
                scored = [(s, e) for s, e in scored if s]
                if scored:
                    s, e = min(scored, key=lambda x: x[0]["median"])
                    ax.axhline(s["median"], color=color, linestyle=":",
                               label=f"{f} best {img} ({label(e['params'])})")
        ax.set_title(f"{doc['suite']}, link: {prof}")
        ax.set_xlabel("max-concurrent-downloads (stock)")
        ax.set_ylabel("cold pull time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "pull.png"), dpi=120)
    return ["pull.png"]


def after_samples(doc):
    """The warm-up pulls, apart from the statistics."""
    warm = [e for e in doc["results"] if e.get("warmup_s")]
    if not warm:
        return []
    md = ["", "## Warm-up pulls (not in the statistics)", "",
          "Each variant's first pulls of each image over each link, before the measured ones.", "",
          "| flavor | cell | params | warm-up times |", "| --- | --- | --- | --- |"]
    for e in warm:
        md.append(f"| {e['flavor']} | {cell_name(e)} | {label(e['params'])} | "
                  f"{', '.join(fmt_v(x, 's') if x is not None else 'failed' for x in e['warmup_s'])} |")
    return md
