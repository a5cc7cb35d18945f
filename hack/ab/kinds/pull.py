"""kind = "pull": cold pulls of images of random layers from the registry,
over an emulated link (seed 000).

A cell is one [[profile]] (the link) and one [[image]]: profile and image
name them; scenario and container are null. A daemon option given as a list
(max-concurrent-downloads) is a scan: one cell per value."""
import os
import re
import sys
from dataclasses import dataclass, field

from .. import hosts, stats, suite, units
from ..measure import Progress, hyperfine, interleave
from ..report import DEFAULT_MCD, comparisons, fmt_ratio, fmt_v, label
from ..results import Cell

KEYS = ("profile", "image", "warmup")
KEY_FIELDS = ()  # besides profile and image
SWITCHES = ("warmup",)  # warmup = 0 is no warm-up, in any suite
SCANS = True  # a daemon option given as a list: one variant per value
REPETITIONS = 3


@dataclass
class Profile:
    """The link between a test host and the registry, in the numbers
    hack/link.sh takes."""
    name: str
    rtt_ms: float = 0.0
    rate_bits_per_s: int = None  # None: as fast as the veth goes
    loss_pct: float = 0.0
    jitter_ms: float = 0.0
    queue: int = 1000  # packets


@dataclass
class Image:
    name: str
    layers: list  # sizes in bytes

    @property
    def total(self):
        return sum(self.layers)


@dataclass
class Suite(suite.Suite):
    profiles: list = field(default_factory=list)
    images: list = field(default_factory=list)
    warmup: int = 0  # untimed pulls per variant before each cell's repetitions


# --- the suite file ---------------------------------------------------------

def validate(v, d, s):
    s.warmup = _warmup(v, d)
    s.profiles = [profile(v, p, i) for i, p in enumerate(v.tables(d, "profile"))]
    s.images = [image(v, p, i) for i, p in enumerate(v.tables(d, "image"))]
    v.unique(s.profiles, "profile")
    v.unique(s.images, "image")


def refuse(v, d, kind):
    if _warmup(v, d):
        v.fail(("warmup",), "warmup: only pull suites have warm-up pulls")
    for k in ("profile", "image"):
        if k in d:
            v.fail((k, 0), f"[[{k}]] belongs to pull suites, not {kind}")


def _warmup(v, d):
    w = v.typed(d.get("warmup", 0), int, ("warmup",), "an integer >= 0")
    if w < 0:
        v.fail(("warmup",), "warmup: want an integer >= 0")
    return w


def profile(v, p, i):
    w = ("profile", i)
    v.keys(p, w, ("name", "rtt", "rate", "loss", "jitter", "queue"), ("name",), "[[profile]]")
    prof = Profile(name=v.typed(p["name"], str, w + ("name",), "a string"))
    # parsed once, here: the link gets plain numbers (hosts.link_args)
    for k, attr, fn in (("rtt", "rtt_ms", units.milliseconds), ("rate", "rate_bits_per_s", units.bits_per_second),
                        ("loss", "loss_pct", units.percentage), ("jitter", "jitter_ms", units.milliseconds)):
        if k in p:
            setattr(prof, attr, fn(v.unit(fn, v.typed(p[k], str, w + (k,), "a string"), w + (k,))))
    if "queue" in p:
        prof.queue = v.typed(p["queue"], int, w + ("queue",), "packets, a non-negative integer")
    return prof


def image(v, p, i):
    w = ("image", i)
    v.keys(p, w, ("name", "layers"), ("name", "layers"), "[[image]]")
    layers = v.typed(p["layers"], list, w + ("layers",), "a list of sizes")
    if not layers:
        v.fail(w + ("layers",), "layers: want at least one layer")
    sizes = [units.size(v.unit(units.size, x, w + ("layers",))) for x in layers]
    return Image(name=v.typed(p["name"], str, w + ("name",), "a string"), layers=sizes)


# --- the run ----------------------------------------------------------------

def run(r):
    """Push the images, then per link: every variant of every flavour pulls
    each image cold, warm-up pulls first, the repetitions in ABAB order."""
    s = r.s
    refs = {}
    for i, img in enumerate(s.images):
        sys.stderr.write(f"==> image {img.name}: {len(img.layers)} layers, {units.human_size(img.total)}, pushing\n")
        repo = "ab-pull/" + re.sub(r"[^a-z0-9]+", "-", img.name.lower()).strip("-")
        refs[img.name] = hosts.push_random_image(repo, "v1", img.layers, seed=i + 1)
    variants = [(f, p) for f in s.flavours for p in s.flavours[f].variants()]
    prog = Progress(len(s.profiles) * len(s.images) * s.repetitions * len(variants))
    backend = hosts.link_backend(s.link_backend)
    r.results.doc["link"] = {"backend": backend}
    for prof in s.profiles:
        for f in r.daemons:
            hosts.link_up(f, prof, backend)
        for img in s.images:
            # Warm-up pulls, untimed by the verdict but kept: what a daemon
            # that has pulled from this registry before does differently
            # (the patched daemon learns per registry) shows from the
            # first measured pull on, and the warm-up times stay visible.
            for w in range(s.warmup):
                for f, params in variants:
                    cell, t, err = pull(r, f, params, prof, img, refs[img.name])
                    r.results.add(cell, None, f"warm-up: {err}" if err else None, rep=None,
                                  warmup_s=round(t, 4) if t is not None else None)
                    sys.stderr.write(f"    warm-up pull {prof.name}/{img.name} {f} {params_label(params)}: "
                                     + (f"{t:.2f}s\n" if t is not None else f"FAILED {err}\n"))
            for rep in range(s.repetitions):
                for f, params in interleave(variants, rep):
                    cell, t, err = pull(r, f, params, prof, img, refs[img.name])
                    r.results.add(cell, t, err, rep=rep)
                    prog.step(f"pull {prof.name}/{img.name} {f} {params_label(params)} rep {rep + 1}: "
                              + (f"{t:.2f}s" if t is not None else f"FAILED {err}"))


def pull(r, f, params, prof, img, ref):
    """One cold pull of ref by flavour f with params: (its cell, seconds, error)."""
    d = r.daemons[f]
    d.apply(params)
    # Cold: no image, no content, and no kept-alive connection to the
    # registry from an earlier pull (ss -K aborts them). A preparation that
    # fails (the image still there, prune or ss failing) fails the sample:
    # hyperfine stops when --prepare does, and the pull is not timed warm.
    cold = (f"docker rmi -f {ref} >/dev/null 2>&1; docker image prune -af >/dev/null && "
            f"! docker image inspect {ref} >/dev/null 2>&1 && "
            f"nsenter --net={d.netns()} ss -K dst {hosts.REGISTRY.split(':')[0]} >/dev/null")
    t, err = hyperfine(r.tmp, d.env, f"docker pull -q {ref}", prepare=cold, failed="hyperfine failed")
    return Cell(f, profile=prof.name, image=img.name, params=params), t, err


def params_label(p):
    return ",".join(f"{k}={v}" for k, v in sorted(p.items())) or "defaults"


# --- the report -------------------------------------------------------------

def cell_name(e):
    return f"{e['profile']} / {e['image']}"


def sections(doc):
    return [spread_table(doc)]


def spread_table(doc):
    """Pull scans, like seed 000's Table 1: per link and image, stock's best and
    worst setting, the difference (worst - best) / best, the seed's published
    difference where it gives one, and patched against both."""
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
          "| flavour | cell | params | warm-up times |", "| --- | --- | --- | --- |"]
    for e in warm:
        md.append(f"| {e['flavor']} | {cell_name(e)} | {label(e['params'])} | "
                  f"{', '.join(fmt_v(x, 's') if x is not None else 'failed' for x in e['warmup_s'])} |")
    return md
