"""kind = "zns": a checkpoint trace replayed on a model of a zoned device
(hack/ab/zns.py) under each placement policy; no daemons.

A cell is a policy's replay on one geometry: flavor and policy name the
policy, scenario is "replay", and the entry has the geometry, the replay's
metrics, its failed creates and its time series; times_s is empty."""
import dataclasses
import os
import shutil
import sys
from dataclasses import dataclass, field

from .. import hosts, suite, units, zns
from ..measure import Progress

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
    v.keys(t, w, ("chunk", "gc_reserve"))
    if "chunk" in t:
        s.chunk = units.size(v.unit(units.size, v.typed(t["chunk"], str, w + ("chunk",), "a size"), w + ("chunk",)))
    s.gc_reserve = v.typed(t.get("gc_reserve", s.gc_reserve), int, w + ("gc_reserve",), "a number of zones")
    for g in s.geometries:
        for k, msg in zns.placement_problems(g, s.chunk, s.gc_reserve):
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
    doc["placement"] = {"chunk": s.chunk, "gc_reserve": s.gc_reserve}
    r.results.save()
    scan = len(s.geometries) > 1
    prog = Progress(len(s.geometries) * len(s.policies))
    for g in s.geometries:
        sys.stderr.write(f"==> {len(events)} events on {g.describe()}\n")
        for policy in s.policies:
            o = zns.replay(events, g, policy, s.chunk, s.gc_reserve)
            r.results.append(o.entry(dict(doc["placement"]), g))
            m = o.metrics
            on = f" on {units.human_size(g.zone_size)} zones" if scan else ""
            prog.step(f"replay {policy}{on}: relocated {zns.gib(m['relocated_bytes'])}, "
                      f"WA {m['write_amplification']}, {m['resets']} resets, {m['failed']} failed creates")
