"""kind = "zns": a checkpoint trace replayed on a model of a zoned device
under each placement policy (hack/ab/zns.py, which runs hack/zoned/zns-replay: the
daemon's own device model and placement); no daemons.

A cell is a policy's replay on one geometry: flavor and policy name the
policy, scenario is "replay", and the entry has the geometry, the replay's
metrics, its failed creates and its time series; times_s is empty."""
import dataclasses
import json
import os
import shutil
import sys
from dataclasses import dataclass, field

from .. import hosts, suite, units, zns
from ..measure import Progress
from ..report import header
from . import Kind

KEYS = ("trace", "geometry", "policies", "placement")
SWITCHES = ()
REPETITIONS = 1  # a replay is deterministic


@dataclass
class Suite(suite.Suite):
    # a trace (a CSV file, or the generator's parameters) replayed on a model
    # of a zoned device under each placement policy
    trace_file: str = ""
    trace: zns.TraceParams = None
    geometries: list = field(default_factory=list)  # [zns.Geometry]: one, or a scan of zone sizes
    geometry: zns.Geometry = None  # the one, or the scan's whose time series the report plots
    policies: list = field(default_factory=list)
    chunk: int = zns.MiB
    gc_reserve: int = 2
    heads: int = 0  # multi-log's host heads; 0: the device's open limit less one
    cleaner: str = "greedy"  # the logs' victim rule (zns.CLEANERS)

    needs_hosts = False


# --- the suite file ---------------------------------------------------------

def validate(v, d, s):
    """A replay on a model of the device (no daemons: the loader refuses their keys)."""
    if s.repetitions != 1:
        v.fail(("repetitions",), "repetitions: a replay is deterministic, want 1")
    pol = v.typed(d.get("policies", list(zns.POLICIES)), list, ("policies",), "a list")
    if not pol:
        v.fail(("policies",), "policies: want at least one")
    for x in pol:
        if x not in zns.POLICIES:
            v.fail(("policies",), f"policies: '{x}' is not one of {', '.join(zns.POLICIES)}")
    if len(set(pol)) != len(pol):
        v.fail(("policies",), "policies: a policy is listed twice")
    s.policies = pol
    geometry(v, v.typed(d.get("geometry", {}), dict, ("geometry",), "a [geometry] table"), s)
    placement(v, v.typed(d.get("placement", {}), dict, ("placement",), "a [placement] table"), s)
    t = d.get("trace", {})
    if isinstance(t, str):
        path = os.path.join(os.path.dirname(v.path), t)
        try:
            zns.read_trace(path)
        except zns.TraceError as e:
            v.fail(("trace",), f"trace: {e}")
        s.trace_file = path
    else:
        s.trace = trace(v, v.typed(t, dict, ("trace",), "a CSV file name or a [trace] table"))


def geometry(v, t, s):
    """[geometry]: one device, or a scan of zone sizes (zone_size a list),
    each replayed with every policy. `namespace` instead of `zones` keeps
    the device's size across the scan (zones = namespace // zone_size);
    zone_capacity is the zone size when left out, and may be a fraction of
    it ("75%"), which then scales with the zone size."""
    w = ("geometry",)
    v.keys(t, w, ("zone_size", "zone_capacity", "zones", "namespace", "max_open", "max_active", "block",
                  "plot_zone_size"))
    d = zns.Geometry()
    size = lambda k, x: units.size(v.unit(units.size, v.typed(x, str, w + (k,), "a size"), w + (k,)))
    block = size("block", t["block"]) if "block" in t else d.block
    scan = isinstance(t.get("zone_size"), list)
    if scan:
        if not t["zone_size"]:
            v.fail(w + ("zone_size",), "zone_size: an empty list scans nothing")
        sizes = [size("zone_size", x) for x in t["zone_size"]]
        if len(set(sizes)) != len(sizes):
            v.fail(w + ("zone_size",), "zone_size: a size is listed twice")
    elif "zone_size" in t:
        v.typed(t["zone_size"], str, w + ("zone_size",), "a size or a list of sizes (a scan)")
        sizes = [size("zone_size", t["zone_size"])]
    else:
        sizes = [d.zone_size]
    where_of = {}  # the key a geometry's problem is reported at, when not its own
    if "zone_capacity" not in t:
        capacity = lambda z: d.zone_capacity if "zone_size" not in t else z
    else:
        k = "zone_capacity"
        val = v.typed(t[k], str, w + (k,), 'a size, or a fraction of the zone size like "75%"')
        if val.endswith("%"):
            frac = units.percent(v.unit(units.percent, val, w + (k,)))
            if frac <= 0:
                v.fail(w + (k,), f"{k}: want a fraction above 0% of the zone size, got {val!r}")
            capacity = lambda z: int(z * frac) // block * block  # whole blocks
        else:
            c = size(k, val)
            if scan and c > min(sizes):
                v.fail(w + (k,), f"{k}: {units.human_size(c)} exceeds the scan's zone size "
                                 f"{units.human_size(min(sizes))}; give the capacity of every zone size as a "
                                 f'fraction of it (e.g. "75%")')
            capacity = lambda z: c
    if "zones" in t and "namespace" in t:
        v.fail(w + ("namespace",), "namespace: give zones or namespace, not both "
                                   "(zones = namespace / zone size)")
    if "namespace" in t:
        ns = size("namespace", t["namespace"])
        for z in sizes:
            if ns < z:
                v.fail(w + ("namespace",), f"namespace: {units.human_size(ns)} holds no zone of "
                                           f"{units.human_size(z)}")
        zones = lambda z: ns // z
        where_of["zones"] = "namespace"
    elif "zones" in t:
        n = v.typed(t["zones"], int, w + ("zones",), "a number of zones")
        zones = lambda z: n
    elif scan:
        v.fail(w + ("zone_size",), "zone_size: a scan of zone sizes needs namespace (the same device in "
                                   "zones of each size) or zones")
    else:
        zones = lambda z: d.zones
    limits = {k: v.typed(t[k], int, w + (k,), "a number of zones") if k in t else getattr(d, k)
              for k in ("max_open", "max_active")}
    s.geometries = []
    for z in sizes:
        g = zns.Geometry(zone_size=z, zone_capacity=capacity(z), zones=zones(z), block=block, **limits)
        for k, msg in g.problems():
            where = where_of.get(k, k)
            v.fail(w + (where,), f"{where}: {msg}" + (f" (zone size {units.human_size(z)})" if scan else ""))
        s.geometries.append(g)
    if "plot_zone_size" in t:
        p = size("plot_zone_size", t["plot_zone_size"])
        if p not in sizes:
            v.fail(w + ("plot_zone_size",), f"plot_zone_size: {t['plot_zone_size']} is not a zone size of "
                                            f"the geometry ({', '.join(map(units.human_size, sizes))})")
    else:
        p = max(sizes)
    s.geometry = s.geometries[sizes.index(p)]


def placement(v, t, s):
    w = ("placement",)
    v.keys(t, w, ("chunk", "gc_reserve", "heads", "cleaner"))
    if "chunk" in t:
        s.chunk = units.size(v.unit(units.size, v.typed(t["chunk"], str, w + ("chunk",), "a size"), w + ("chunk",)))
    s.gc_reserve = v.typed(t.get("gc_reserve", s.gc_reserve), int, w + ("gc_reserve",), "a number of zones")
    s.heads = v.typed(t.get("heads", s.heads), int, w + ("heads",), "a number of heads")
    s.cleaner = v.typed(t.get("cleaner", s.cleaner), str, w + ("cleaner",), "a victim rule")
    for g in s.geometries:
        for k, msg in zns.placement_problems(g, s.chunk, s.gc_reserve, s.heads, s.cleaner):
            scan = f" (zone size {units.human_size(g.zone_size)})" if len(s.geometries) > 1 else ""
            v.fail(w + (k,), f"{k}: {msg}{scan}")


def trace(v, t):
    """The generator's parameters; the defaults are TraceParams'."""
    w = ("trace",)
    v.keys(t, w, ("containers", "interval", "rounds", "keep", "jitter", "skip", "overhead", "rng_seed"),
           what="[trace] (or trace = \"file.csv\")")
    p = zns.TraceParams()
    if "containers" in t:
        cs = v.typed(t["containers"], list, w + ("containers",), "a list of memory sizes")
        if not cs:
            v.fail(w + ("containers",), "containers: want at least one")
        for c in cs:
            v.unit(units.size, v.typed(c, str, w + ("containers",), "a memory size"), w + ("containers",))
        if len(set(cs)) != len(cs):
            v.fail(w + ("containers",), "containers: a size is listed twice (it names the container)")
        p.containers = cs
    if "interval" in t:
        p.interval_s = units.duration(v.unit(units.duration, v.typed(t["interval"], str, w + ("interval",),
                                                                     "a duration"), w + ("interval",)))
    for k in ("rounds", "keep", "rng_seed"):
        if k in t:
            setattr(p, k, v.typed(t[k], int, w + (k,), "an integer"))
    for k in ("rounds", "keep"):
        if getattr(p, k) < 1:
            v.fail(w + (k,), f"{k}: want an integer >= 1")
    for k in ("jitter", "skip"):
        if k in t:
            frac = units.percent(v.unit(units.percent, v.typed(t[k], str, w + (k,), "a percentage"), w + (k,)))
            if frac >= 1:
                v.fail(w + (k,), f"{k}: want less than 100%")
            setattr(p, k, frac)
    if "overhead" in t:
        p.overhead = units.size(v.unit(units.size, v.typed(t["overhead"], str, w + ("overhead",), "a size"),
                                       w + ("overhead",)))
    return p


def refuse(v, d, kind):
    for k in KEYS:
        if k in d:
            v.fail(v.first(d, k), f"{k} belongs to zns suites, not {kind}")


# --- the run ----------------------------------------------------------------

def run(r):
    """Replay one trace under each placement policy on the model device,
    on every geometry of the suite (one, or a scan of zone sizes). The
    trace is kept beside the results, so the numbers can be reproduced
    (and checked) from this directory alone."""
    s = r.s
    if s.trace_file:
        events = zns.read_trace(s.trace_file)
        source = {"file": os.path.relpath(s.trace_file, hosts.ROOT)}
    else:
        events = zns.generate(s.trace)
        source = {"generated": dataclasses.asdict(s.trace)}
    path = os.path.join(r.out, "trace.csv")
    if s.trace_file:
        shutil.copyfile(s.trace_file, path)  # byte for byte: the digest is the source's
    else:
        zns.write_trace(path, events)
    doc = r.results.doc
    doc["trace"] = dict(source, **zns.describe_trace(events), csv="trace.csv", sha256=zns.trace_digest(path))
    doc["geometry"] = dataclasses.asdict(s.geometry)  # a scan's: the one whose time series are plotted
    doc["geometries"] = [dataclasses.asdict(g) for g in s.geometries]
    doc["placement"] = {"chunk": s.chunk, "gc_reserve": s.gc_reserve, "heads": s.heads, "cleaner": s.cleaner}
    r.results.save()
    scan = len(s.geometries) > 1
    prog = Progress(len(s.geometries) * len(s.policies))
    for g in s.geometries:
        sys.stderr.write(f"==> {len(events)} events on {g.describe()}\n")
        outs = zns.replay_trace(path, g, s.policies, s.chunk, s.gc_reserve, s.heads, occupancy=g == s.geometry,
                                cleaner=s.cleaner)
        for policy, o in zip(s.policies, outs):
            r.results.append(o.entry(dict(doc["placement"]), g))
            m = o.metrics
            on = f" on {units.human_size(g.zone_size)} zones" if scan else ""
            prog.step(f"replay {policy}{on}: relocated {zns.gib(m['relocated_bytes'])}, "
                      f"WA {m['write_amplification']}, {m['resets']} resets, {m['failed']} failed creates")


# --- the report -------------------------------------------------------------

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


def summary_table(doc):
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
    ("wasted", lambda e: zns.ROWS[-1][1](e["metrics"])),
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


def write(outdir, doc):
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
           f"a reserve of {pl.get('gc_reserve')} zones (live data never exceeds the capacity of the others; any "
           f"zone may be written); the logs' cleaner {pl.get('cleaner', 'greedy')}, on demand (their -idle "
           "variants also after every delete), partly written zones too, a zone reset by the delete that leaves "
           "nothing live in it"
           + (f"; the multi-head log appends at {pl['heads']} heads" if pl.get("heads")
              else "; the multi-head log at as many heads as the open limit allows beside its collector's"
              if "multi-log" in {e.get("policy") for e in doc.get("results", [])} else ""),
           "", "## Summary", "", summary_table(doc), "",
           "Host written: block-padded bytes of the images (and of the failed images' partial writes). "
           "Relocated: live bytes a collector copied out of a zone before resetting it. "
           "Write amplification: (host + relocated) / host. Mixed zones: zones holding data (live or dead, "
           "until their reset) of more than one container. Used-zone utilisation: live bytes / (non-empty zones "
           "x zone capacity); device utilisation: live bytes / all zones' capacity. Both are sampled after every "
           "delete and after every group of creates taken together; the minimum is over those samples, the mean "
           "weights each sample by how long it held (in trace time). "
           "Wasted: capacity that holds no byte of a stored image and was not relocated: the images' block "
           "padding, the partial writes of creates that failed, and the capacity given up by finishing zones "
           "short of it (zone-aware placement rounds every image up to whole zones this way). "
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


ZNS_COLOUR = {"shared-log": "C3", "zone-aware": "C0", "multi-log": "C1", "zone-tail": "C4", "zone-pack": "C2"}
ZNS_MARKER = {"shared-log": "o", "zone-aware": "s", "multi-log": "^", "zone-tail": "v", "zone-pack": "D"}


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
    out += plot_zns_occupancy(doc, outdir, res, note)
    return out


def plot_zns_occupancy(doc, outdir, res, note=""):
    """zns-occupancy.png: every zone's live data over time, a map per
    policy (zones up, trace time across; empty zones blank)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    res = [e for e in res if e["series"].get("zone_live_pct")]
    if not res:
        return []
    scale, xlabel = _time_axis([t for e in res for t in e["series"]["zone_t_s"]])
    fig, axes = plt.subplots(len(res), 1, figsize=(10, 1.2 + 1.9 * len(res)), sharex=True, squeeze=False)
    cmap = matplotlib.colormaps["viridis"].copy()
    cmap.set_bad("white")
    im = None
    for ax, e in zip(axes[:, 0], res):
        m = np.array(e["series"]["zone_live_pct"], dtype=float).T  # zones x samples
        m = np.ma.masked_less(m, 0)
        t = [v * scale for v in e["series"]["zone_t_s"]]
        edges = t + [t[-1] + (t[-1] - t[-2] if len(t) > 1 else 1)]
        im = ax.pcolormesh(edges, np.arange(m.shape[0] + 1), m, cmap=cmap, vmin=0, vmax=100, shading="flat")
        ax.set_ylabel(f"{e['policy']}\nzone", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[-1, 0].set_xlabel(xlabel)
    fig.suptitle(f"{doc['suite']}: live data in each zone" + (f", {note}" if note else "")
                 + " (blank: empty; colour: live % of the zone's capacity)", fontsize=9)
    fig.colorbar(im, ax=axes[:, 0].tolist(), label="live %", shrink=0.8)
    fig.savefig(os.path.join(outdir, "zns-occupancy.png"), dpi=110)
    plt.close("all")
    return ["zns-occupancy.png"]


def failures(doc):
    """None: a replay runs no daemons and has no samples to fail; the
    creates it could not place (errors, failures) are what it measures,
    and its report shows them."""
    return []


KIND = Kind(name="zns", KEYS=KEYS, SWITCHES=SWITCHES, REPETITIONS=REPETITIONS, Suite=Suite,
            validate=validate, refuse=refuse, run=run, summary_table=summary_table, write=write,
            failures=failures)
