"""kind = "zns-sweep": the placement policies of hack/zoned/zns-replay swept over
how full the device is, the reserve, and many generated traces (seeds), with
the baselines tuned on one half of the seeds and every policy reported on
the other; no daemons.

A cell is one replay: a policy (flavor and policy), a seed (its trace), a
reserve and a fill, scenario "sweep"; or, scenario "min-capacity", the
smallest device on which a policy fails no create of a seed's trace under a
reserve. Fill is the trace's peak live data (every create stored, block
padded) as a share of the usable capacity, the zones outside the reserve:
a device of reserve + ceil(peak / (fill x zone capacity)) zones. A
[[devices]] device given its real zone count (zones) keeps it in every
cell: there the trace is fitted instead, every image scaled by one factor
so that the peak is the fill's share of the zones outside the reserve.

The traces (generate) are not in lockstep: every container has its own
memory, interval, retention and start, and a share of them (misfit) change
their retention or interval partway, so that both the lifetimes their past
checkpoints had (zone-pack's predictor) and the lifetime they declare (the
hint, interval x keep at the start) are wrong after it; a share (irregular)
checkpoint at random times, whose lifetimes spread around the declared one;
and a share of checkpoints (pin) is kept 4-16 times the declared
lifetime."""
import collections
import concurrent.futures
import dataclasses
import math
import os
import random
import statistics
import sys
from dataclasses import dataclass, field

from .. import suite, units, zns
from ..measure import Progress
from ..results import Cell
from . import Kind
from .zns_sweep_report import cell_name, failures, summary_table, write
from .zns_capacity import CHECK_ABOVE, CHECK_BELOW, START_FILL, UP_FILLS, run_min_capacity, smallest_passing

KEYS = ("sweep", "traces", "device", "devices")
SWITCHES = ()
REPETITIONS = 1  # a replay is deterministic; the seeds are the repetitions

BASELINES_WITH_CLEANER = ("shared-log", "multi-log", "hint-log", "oracle", "shared-log-idle", "multi-log-idle",
                          "hint-log-idle", "oracle-idle")


@dataclass
class TraceMix:
    """The generator's parameters (generate)."""
    containers: int = 10
    memory: list = field(default_factory=lambda: ["16MiB", "32MiB", "64MiB", "128MiB"])
    intervals_s: list = field(default_factory=lambda: [60.0, 120.0, 300.0, 600.0])
    keeps: list = field(default_factory=lambda: [1, 2, 3, 4])
    duration_s: float = 3 * 3600.0
    jitter: float = 0.05
    skip: float = 0.1
    misfit: float = 0.3
    irregular: float = 0.3
    pin: float = 0.05
    overhead: int = 512 << 10


@dataclass
class Device:
    """A device of thousands of zones ([[devices]]): its geometry and time
    model, the cells replayed on it, and how its traces scale the sweep's
    (scaled, so that the trace's peak live data fills thousands of its zones
    and its write rate stays below the device's bandwidth)."""
    name: str
    geometry: zns.Geometry
    costs: zns.Costs
    fills: list
    reserves: list
    seeds: int  # the first this many of the report seeds
    chunk: int
    containers: int
    memory_scale: float
    interval_scale: float
    duration_s: float
    policies: list = None  # its own (a subset of the sweep's), or None: the sweep's
    zones: int = 0  # a real device's zone count, every cell's (fitted); 0: each cell sized to its trace

    def mix(self, m):
        """The sweep's TraceMix m scaled to this device."""
        return TraceMix(**dict(vars(m), containers=self.containers,
                               memory=[units.human_size(int(units.size(x) * self.memory_scale)) for x in m.memory],
                               intervals_s=[x * self.interval_scale for x in m.intervals_s],
                               duration_s=self.duration_s))


@dataclass
class Suite(suite.Suite):
    policies: list = field(default_factory=list)
    fills: list = field(default_factory=list)  # fractions
    reserves: list = field(default_factory=list)
    seeds: int = 20
    tune_seeds: int = 10
    cleaners: list = field(default_factory=lambda: list(zns.CLEANERS))
    chunk: int = zns.MiB
    min_capacity: bool = True
    mix: TraceMix = None
    geometry: zns.Geometry = None  # zones is set per cell
    costs: zns.Costs = None  # the device's time model (None: none)
    devices: list = field(default_factory=list)  # [Device]
    jobs: int = 2  # replays run at once

    needs_hosts = False


# --- the suite file ---------------------------------------------------------

def validate(v, d, s):
    """[sweep] what is swept; [traces] the generator; [device] the zones."""
    if s.repetitions != 1:
        v.fail(("repetitions",), "repetitions: the seeds are the repetitions, want 1")
    w = ("sweep",)
    t = v.typed(d.get("sweep", {}), dict, w, "a [sweep] table")
    v.keys(t, w, ("policies", "fills", "reserves", "seeds", "tune_seeds", "cleaners", "chunk", "min_capacity", "jobs"))
    pol = v.typed(t.get("policies", list(zns.POLICIES)), list, w + ("policies",), "a list")
    for x in pol:
        if x not in zns.POLICIES:
            v.fail(w + ("policies",), f"policies: '{x}' is not one of {', '.join(zns.POLICIES)}")
    if not pol or len(set(pol)) != len(pol):
        v.fail(w + ("policies",), "policies: want at least one, each once")
    s.policies = pol
    fills = v.typed(t.get("fills", ["50%", "70%", "80%", "90%", "95%"]), list, w + ("fills",), "a list of percentages")
    s.fills = []
    for f in fills:
        x = units.percent(v.unit(units.percent, v.typed(f, str, w + ("fills",), "a percentage"), w + ("fills",)))
        if not 0 < x <= 1:
            v.fail(w + ("fills",), f"fills: want above 0% and at most 100%, got {f!r}")
        s.fills.append(x)
    s.reserves = v.typed(t.get("reserves", [0, 1, 2]), list, w + ("reserves",), "a list of zone counts")
    for r in s.reserves:
        if not isinstance(r, int) or r < 0:
            v.fail(w + ("reserves",), f"reserves: want zone counts >= 0, got {r!r}")
    s.seeds = v.typed(t.get("seeds", s.seeds), int, w + ("seeds",), "a number of seeds")
    s.tune_seeds = v.typed(t.get("tune_seeds", s.seeds // 2), int, w + ("tune_seeds",), "a number of seeds")
    if not 1 <= s.tune_seeds < s.seeds:
        v.fail(w + ("tune_seeds",), f"tune_seeds: want 1 to seeds - 1 ({s.seeds - 1}), got {s.tune_seeds}")
    s.cleaners = v.typed(t.get("cleaners", list(zns.CLEANERS)), list, w + ("cleaners",), "a list")
    for c in s.cleaners:
        if c not in zns.CLEANERS:
            v.fail(w + ("cleaners",), f"cleaners: '{c}' is not one of {', '.join(zns.CLEANERS)}")
    if not s.cleaners:
        v.fail(w + ("cleaners",), "cleaners: want at least one")
    if "chunk" in t:
        s.chunk = units.size(v.unit(units.size, v.typed(t["chunk"], str, w + ("chunk",), "a size"), w + ("chunk",)))
    s.min_capacity = v.typed(t.get("min_capacity", True), bool, w + ("min_capacity",), "true or false")
    s.jobs = v.typed(t.get("jobs", s.jobs), int, w + ("jobs",), "a number of replays")
    if s.jobs < 1:
        v.fail(w + ("jobs",), "jobs: want at least 1")

    w = ("traces",)
    t = v.typed(d.get("traces", {}), dict, w, "a [traces] table")
    v.keys(t, w, ("containers", "memory", "intervals", "keeps", "duration", "jitter", "skip", "misfit", "irregular",
                  "pin", "overhead"))
    m = TraceMix()
    m.containers = v.typed(t.get("containers", m.containers), int, w + ("containers",), "a number")
    if m.containers < 1:
        v.fail(w + ("containers",), "containers: want at least 1")
    if "memory" in t:
        m.memory = [units.human_size(units.size(v.unit(units.size, v.typed(x, str, w + ("memory",), "a size"),
                                                       w + ("memory",))))
                    for x in v.typed(t["memory"], list, w + ("memory",), "a list of sizes")]
    if "intervals" in t:
        m.intervals_s = [units.duration(v.unit(units.duration, v.typed(x, str, w + ("intervals",), "a duration"),
                                               w + ("intervals",)))
                         for x in v.typed(t["intervals"], list, w + ("intervals",), "a list of durations")]
    if "keeps" in t:
        m.keeps = v.typed(t["keeps"], list, w + ("keeps",), "a list of counts")
    for k, lst in (("memory", m.memory), ("intervals", m.intervals_s), ("keeps", m.keeps)):
        if not lst:
            v.fail(w + (k,), f"{k}: want at least one")
    if any(not isinstance(k, int) or k < 1 for k in m.keeps):
        v.fail(w + ("keeps",), "keeps: want counts >= 1")
    if "duration" in t:
        m.duration_s = units.duration(v.unit(units.duration, v.typed(t["duration"], str, w + ("duration",),
                                                                     "a duration"), w + ("duration",)))
    for k in ("jitter", "skip", "misfit", "irregular", "pin"):
        if k in t:
            x = units.percent(v.unit(units.percent, v.typed(t[k], str, w + (k,), "a percentage"), w + (k,)))
            if not 0 <= x < 1:
                v.fail(w + (k,), f"{k}: want 0% to below 100%")
            setattr(m, k, x)
    if "overhead" in t:
        m.overhead = units.size(v.unit(units.size, v.typed(t["overhead"], str, w + ("overhead",), "a size"),
                                       w + ("overhead",)))
    s.mix = m

    w = ("device",)
    t = v.typed(d.get("device", {}), dict, w, "a [device] table")
    v.keys(t, w, DEVICE_KEYS)
    s.geometry, s.costs = _device(v, t, w, s.chunk)

    s.devices = []
    seen = set()
    for i, t in enumerate(v.typed(d.get("devices", []), list, ("devices",), "an array of [[devices]] tables")):
        w = ("devices", i)
        t = v.typed(t, dict, w, "a [[devices]] table")
        v.keys(t, w, DEVICE_KEYS + ("name", "fills", "reserves", "seeds", "chunk", "containers", "memory_scale",
                                    "interval_scale", "duration", "policies", "zones"))
        name = v.typed(t.get("name", ""), str, w + ("name",), "a name")
        if not name or name == "main" or name in seen:
            v.fail(w + ("name",), f"name: want a name of its own (not 'main'), got {name!r}")
        seen.add(name)
        chunk = s.chunk
        if "chunk" in t:
            chunk = units.size(v.unit(units.size, v.typed(t["chunk"], str, w + ("chunk",), "a size"), w + ("chunk",)))
        g, c = _device(v, t, w, chunk)
        fills = [units.percent(v.unit(units.percent, v.typed(f, str, w + ("fills",), "a percentage"), w + ("fills",)))
                 for f in v.typed(t.get("fills", ["90%", "95%"]), list, w + ("fills",), "a list of percentages")]
        if not fills or not all(0 < f <= 1 for f in fills):
            v.fail(w + ("fills",), "fills: want percentages above 0% and at most 100%")
        reserves = v.typed(t.get("reserves", [0]), list, w + ("reserves",), "a list of zone counts")
        if not reserves or any(not isinstance(r, int) or r < 0 for r in reserves):
            v.fail(w + ("reserves",), f"reserves: want zone counts >= 0, got {reserves!r}")
        seeds = v.typed(t.get("seeds", 5), int, w + ("seeds",), "a number of seeds")
        if not 1 <= seeds <= s.seeds - s.tune_seeds:
            v.fail(w + ("seeds",), f"seeds: want 1 to the report seeds ({s.seeds - s.tune_seeds}), got {seeds}")
        num = lambda k, dflt: v.typed(t.get(k, dflt), (int, float), w + (k,), "a number")
        dev = Device(name=name, geometry=g, costs=c, fills=fills, reserves=reserves, seeds=seeds, chunk=chunk,
                     containers=v.typed(t.get("containers", s.mix.containers), int, w + ("containers",), "a number"),
                     memory_scale=num("memory_scale", 1), interval_scale=num("interval_scale", 1),
                     duration_s=s.mix.duration_s)
        if "duration" in t:
            dev.duration_s = units.duration(v.unit(units.duration, v.typed(t["duration"], str, w + ("duration",),
                                                                           "a duration"), w + ("duration",)))
        for k in ("containers", "memory_scale", "interval_scale"):
            if getattr(dev, k) <= 0:
                v.fail(w + (k,), f"{k}: want a number above 0")
        if "zones" in t:
            dev.zones = v.typed(t["zones"], int, w + ("zones",), "a number of zones")
            least = max(max(reserves) + 1, g.max_open, g.max_active)
            if dev.zones < least:
                v.fail(w + ("zones",), f"zones: want at least {least} (above the largest reserve, and the open and "
                                       f"active limits), got {dev.zones}")
        if "policies" in t:
            pol = v.typed(t["policies"], list, w + ("policies",), "a list")
            if not pol or len(set(pol)) != len(pol) or any(x not in s.policies for x in pol):
                v.fail(w + ("policies",), f"policies: want some of the sweep's ({', '.join(s.policies)}), each once")
            dev.policies = [x for x in s.policies if x in pol]
        s.devices.append(dev)


DEVICE_KEYS = ("zone_size", "zone_capacity", "max_open", "max_active", "block", "write_bw", "zone_bw", "read_bw",
               "reset_time", "finish_time")


def _device(v, t, w, chunk):
    """A [device] table: (zns.Geometry with a placeholder zone count,
    zns.Costs or None). Bandwidths are sizes per second ("2000MB"), times
    durations ("5ms")."""
    g = zns.Geometry()
    size = lambda k: units.size(v.unit(units.size, v.typed(t[k], str, w + (k,), "a size"), w + (k,)))
    for k in ("zone_size", "block"):
        if k in t:
            setattr(g, k, size(k))
    g.zone_capacity = size("zone_capacity") if "zone_capacity" in t else g.zone_size
    for k in ("max_open", "max_active"):
        if k in t:
            setattr(g, k, v.typed(t[k], int, w + (k,), "a number of zones"))
    g.zones = max(g.max_open, g.max_active, 1)  # a placeholder: every cell sets its own
    for k, msg in g.problems():
        v.fail(w + (k,), f"{k}: {msg}")
    for k, msg in zns.placement_problems(g, chunk, 0):
        v.fail(w + (k,), f"{k}: {msg}")
    c = None
    if any(k in t for k in ("write_bw", "zone_bw", "read_bw", "reset_time", "finish_time")):
        c = zns.Costs()
        for k in ("write_bw", "zone_bw", "read_bw"):
            if k in t:
                setattr(c, k, float(size(k)))
        for k, a in (("reset_time", "reset_s"), ("finish_time", "finish_s")):
            if k in t:
                setattr(c, a, units.duration(v.unit(units.duration, v.typed(t[k], str, w + (k,), "a duration"),
                                                    w + (k,))))
        for k, msg in c.problems():
            k = {"reset_s": "reset_time", "finish_s": "finish_time"}.get(k, k)
            v.fail(w + (k,), f"{k}: {msg}")
    return g, c


def refuse(v, d, kind):
    for k in KEYS:
        if k in d:
            v.fail(v.first(d, k), f"{k} belongs to zns-sweep suites, not {kind}")


# --- the traces -------------------------------------------------------------

def generate(m, seed):
    """TraceMix, seed -> [zns.Event] (with hints), the same for the same
    arguments. Every container: a memory, an interval and a retention (keep
    its last k) drawn from the lists, a random start within its interval;
    it declares interval x keep as every checkpoint's lifetime (the hint).
    An irregular container checkpoints at random (exponential gaps of its
    interval's mean), so its checkpoints' lifetimes spread around the one
    it declares. A misfit container changes its retention (another k) or its interval (a
    quarter or four times) at a random time in the middle of the trace; a
    pinned checkpoint leaves the retention and is deleted 4-16 declared
    lifetimes later (if within the trace)."""
    rng = random.Random(seed)
    cs = []
    for i in range(m.containers):
        c = {"name": f"c{i}", "mem": units.size(rng.choice(m.memory)), "interval": rng.choice(m.intervals_s),
             "keep": rng.choice(m.keeps), "change": None, "n": 0}
        c["hint"] = c["interval"] * c["keep"]
        if rng.random() < m.misfit:
            c["change"] = (rng.uniform(0.3, 0.7) * m.duration_s, rng.choice(("keep", "interval")))
        c["irregular"] = rng.random() < m.irregular
        c["next"] = rng.uniform(0, c["interval"])
        cs.append(c)
    events, kept, pinned = [], {c["name"]: collections.deque() for c in cs}, []
    while True:
        c = min((c for c in cs if c["next"] < m.duration_s), key=lambda c: c["next"], default=None)
        t = round(c["next"]) if c else math.inf
        while pinned and round(pinned[0][0]) <= t and pinned[0][0] < m.duration_s:
            when, name, cp = pinned.pop(0)
            events.append(zns.Event(round(when), "delete", name, cp))
        if c is None:
            return events
        if c["change"] and c["next"] >= c["change"][0]:
            if c["change"][1] == "keep":
                c["keep"] = rng.choice([k for k in m.keeps if k != c["keep"]] or [c["keep"] + 1])
            else:
                c["interval"] *= rng.choice((0.25, 4.0))
            c["change"] = None
        if rng.random() >= m.skip:
            cp = f"cp{c['n']}"
            c["n"] += 1
            size = int(c["mem"] * (1 + rng.uniform(-m.jitter, m.jitter))) + m.overhead
            events.append(zns.Event(t, "create", c["name"], cp, max(1, size), hint=float(c["hint"])))
            if rng.random() < m.pin:
                pinned.append((c["next"] + c["hint"] * rng.uniform(4, 16), c["name"], cp))
                pinned.sort()
            else:
                kept[c["name"]].append(cp)
            while len(kept[c["name"]]) > c["keep"]:
                events.append(zns.Event(t, "delete", c["name"], kept[c["name"]].popleft()))
        c["next"] += c["interval"] * (rng.expovariate(1.0) if c["irregular"] else 1.0)


def peak_live(events, g):
    """The most live data (block padded) the trace holds at once, every
    create stored: after a group of creates taken together, before the
    deletes at that time."""
    live, peak, size = 0, 0, {}
    for e in events:
        if e.op == "create":
            size[e.key] = g.padded(e.bytes)
            live += size[e.key]
            peak = max(peak, live)
        else:
            live -= size.pop(e.key)
    return peak


# A fitted trace's peak is within this many steps of its target: the peak is
# nearly proportional to the factor (block padding and rounding aside), so
# one or two steps reach it; more mean the trace cannot be fitted.
FIT_STEPS = 8


def fitted(events, g, target):
    """events with every create's bytes scaled by one factor so that their
    peak live data (block padded) is at most target and within a zone's
    capacity of it: (events, factor, peak). Times, containers, retention and
    lifetimes stay the trace's; only its images are larger or smaller. How a
    device of a real zone count is filled to a given share."""
    k = 1.0
    for _ in range(FIT_STEPS):
        ev = [dataclasses.replace(e, bytes=max(1, round(e.bytes * k))) if e.op == "create" else e for e in events]
        peak = peak_live(ev, g)
        if target - g.zone_capacity < peak <= target:
            return ev, k, peak
        if peak == 0:
            break
        k *= (target - g.zone_capacity / 2) / peak
    raise ValueError(f"no scale of the trace puts its peak live data within a zone of {units.human_size(int(target))}")


def lifetimes(events):
    """How often a checkpoint lived within a factor 2 of its hint, and of
    the median of its container's earlier lifetimes (the predictor's
    guess), among those deleted: what the traces do to the predictors."""
    born, hint, past = {}, {}, collections.defaultdict(list)
    n = ok_hint = ok_past = guessed = 0
    for e in events:
        if e.op == "create":
            born[e.key], hint[e.key] = e.time_s, e.hint
            continue
        life = e.time_s - born[e.key]
        if life <= 0:
            continue
        n += 1
        ok_hint += hint[e.key] > 0 and 0.5 <= life / hint[e.key] <= 2
        prev = past[e.container]
        if prev:
            guessed += 1
            ok_past += 0.5 <= life / statistics.median(prev[-8:]) <= 2
        prev.append(life)
    return {"deleted": n, "hint_within_2x": ok_hint / n if n else None,
            "history_within_2x": ok_past / guessed if guessed else None}


# --- the run ----------------------------------------------------------------

METRICS = ("creates", "failed", "host_bytes", "relocated_bytes", "write_amplification", "util_used_mean", "resets",
           "gc_runs")
TIME_METRICS = ("create_latency_p50_s", "create_latency_p99_s", "create_latency_max_s", "stall_p99_s", "stall_max_s",
                "stall_total_s", "stalled_creates")


def _replay(path, g, policies, chunk, reserve, cleaner, costs=None):
    """{policy: (its metrics, its failed creates as results.json keeps them)}."""
    outs = zns.replay_trace(path, g, policies, chunk, reserve, 0, cleaner=cleaner, costs=costs)
    keys = METRICS + (TIME_METRICS if costs else ())
    return {o.policy: ({k: o.metrics.get(k) for k in keys}, [dataclasses.asdict(f) for f in o.failures])
            for o in outs}


def sized(g0, zones):
    """g0 with zones zones (its open and active limits at most that)."""
    g = zns.Geometry(**dict(vars(g0), zones=zones))
    g.max_open, g.max_active = min(g.max_open, zones), min(g.max_active, zones)
    return g


def fill_zones(peak, g0, reserve, fill):
    """The zones of a device whose zones outside the reserve hold peak at fill."""
    return reserve + math.ceil(peak / (fill * g0.zone_capacity))


def run(r):
    """Every seed's trace on a device of every reserve and fill under every
    policy; the baselines' cleaner chosen on the tuning seeds (the first
    tune_seeds), then every policy replayed on the others with it, with the
    device's time model if it has one; then, on the first report seeds, each
    [[devices]] device with its own (scaled) traces; and, with min_capacity,
    the smallest device each policy needs for the report seeds' traces.
    Replays run jobs at a time; the results are in the same order whatever
    the jobs."""
    s = r.s
    doc = r.results.doc
    g0 = s.geometry
    doc["sweep"] = {"policies": s.policies, "fills": s.fills, "reserves": s.reserves, "seeds": s.seeds,
                    "tune_seeds": s.tune_seeds, "cleaners": s.cleaners, "chunk": s.chunk,
                    "traces": dict(vars(s.mix)), "device": {k: v for k, v in vars(g0).items() if k != "zones"},
                    "costs": dict(vars(s.costs)) if s.costs else None,
                    "devices": [{"name": d.name, "geometry": {k: v for k, v in vars(d.geometry).items() if k != "zones"},
                                 "costs": dict(vars(d.costs)) if d.costs else None, "fills": d.fills,
                                 "reserves": d.reserves, "seeds": d.seeds, "chunk": d.chunk,
                                 "policies": d.policies or s.policies, "zones": d.zones or None,
                                 "traces": dict(vars(d.mix(s.mix)))} for d in s.devices]}
    if s.min_capacity:
        doc["sweep"]["min_capacity"] = {"start_fill": START_FILL, "up_fills": list(UP_FILLS),
                                        "check_above": list(CHECK_ABOVE), "check_below": list(CHECK_BELOW)}
    tdir = os.path.join(r.tmp, "traces")
    os.makedirs(tdir, exist_ok=True)
    tune = range(1, s.tune_seeds + 1)
    report = range(s.tune_seeds + 1, s.seeds + 1)

    def trace(device, events, seed, g):
        path = os.path.join(tdir, f"{device}-seed{seed}.csv")
        zns.write_trace(path, events)
        info = zns.describe_trace(events)
        peak = peak_live(events, g)
        key = "traces" if device == "main" else f"traces:{device}"
        doc.setdefault(key, {})[str(seed)] = {
            "creates": info["creates"], "deletes": info["deletes"], "bytes": info["bytes"], "duration_s":
            max((e.time_s for e in events), default=0), "peak_live_bytes": peak, "sha256": zns.trace_digest(path),
            **lifetimes(events)}
        return path, peak

    def fit(d, base, seed, reserve, fill):
        """A device of d.zones zones: the seed's trace (base) fitted to fill
        its zones outside the reserve."""
        events, k, peak = fitted(base, d.geometry, fill * (d.zones - reserve) * d.geometry.zone_capacity)
        path = os.path.join(tdir, f"{d.name}-seed{seed}-reserve{reserve}-fill{fill:g}.csv")
        zns.write_trace(path, events)
        doc[f"traces:{d.name}"][str(seed)].setdefault("fitted", {})[f"{reserve}/{fill:g}"] = {
            "scale": round(k, 6), "bytes": zns.describe_trace(events)["bytes"], "peak_live_bytes": peak,
            "sha256": zns.trace_digest(path)}
        return path, peak

    traces = {("main", seed): trace("main", generate(s.mix, seed), seed, g0) for seed in range(1, s.seeds + 1)}
    for d in s.devices:
        for seed in list(report)[:d.seeds]:
            base = generate(d.mix(s.mix), seed)
            traces[(d.name, seed)] = trace(d.name, base, seed, d.geometry)
            if d.zones:
                for reserve in d.reserves:
                    for fill in d.fills:
                        traces[(d.name, seed, reserve, fill)] = fit(d, base, seed, reserve, fill)
    r.results.save()

    # A task: (device, seed, half, reserve, fill, geometry, chunk, cleaner, policies, costs, cleaner_of,
    # its trace's key in traces: (device, seed), or (device, seed, reserve, fill) for a fitted one).
    def execute(tasks, label):
        zns.replayer()  # built once, before the replays that run it at once
        prog = Progress(len(tasks))
        with concurrent.futures.ThreadPoolExecutor(max_workers=s.jobs) as pool:
            futs = [pool.submit(_replay, traces[t[11]][0], t[5], t[8], t[6], t[3], t[7], t[9]) for t in tasks]
            for i, (t, f) in enumerate(zip(tasks, futs)):
                got = f.result()
                device, seed, half, reserve, fill, g, _, _, _, _, cleaner_of, key = t
                fields = {"device": device}
                if len(key) == 4:  # fitted: its own peak
                    fields["peak_live_bytes"] = traces[key][1]
                for p, (m, failed) in got.items():
                    doc["results"].append(Cell(p, params={"reserve": reserve, "cleaner": cleaner_of(p)},
                                               scenario="sweep",
                                               kind_fields={"policy": p, "seed": seed, "half": half,
                                                            "reserve": reserve, "fill": fill, "zones": g.zones,
                                                            **fields}).entry(metrics=m, failures=failed))
                prog.step(f"{label}: {device} seed {seed} reserve {reserve} fill {fill:.0%} {t[7]}")
                if i % 100 == 99:
                    r.results.save()
        r.results.save()

    cells = [(rv, f) for rv in s.reserves for f in s.fills]
    with_cleaner = [p for p in s.policies if p in BASELINES_WITH_CLEANER]
    tasks = []
    for seed in tune:
        for reserve, fill in cells:
            g = sized(g0, fill_zones(traces[("main", seed)][1], g0, reserve, fill))
            for c in s.cleaners:
                pols = s.policies if c == s.cleaners[0] else with_cleaner
                if pols:
                    tasks.append(("main", seed, "tune", reserve, fill, g, s.chunk, c, pols, s.costs,
                                  lambda p, c=c: c if p in BASELINES_WITH_CLEANER else None, ("main", seed)))
    execute(tasks, "tune")
    chosen = choose_cleaners(doc, s)
    doc["chosen_cleaners"] = chosen
    r.results.save()
    sys.stderr.write(f"==> cleaners chosen on seeds 1-{s.tune_seeds}: {chosen}\n")
    by_cleaner = collections.defaultdict(list)
    for p in s.policies:
        by_cleaner[chosen.get(p, s.cleaners[0])].append(p)
    tasks = []
    for seed in report:
        for reserve, fill in cells:
            g = sized(g0, fill_zones(traces[("main", seed)][1], g0, reserve, fill))
            for c, pols in by_cleaner.items():
                tasks.append(("main", seed, "report", reserve, fill, g, s.chunk, c, pols, s.costs, chosen.get,
                              ("main", seed)))
    for d in s.devices:
        for seed in list(report)[:d.seeds]:
            for reserve in d.reserves:
                for fill in d.fills:
                    if d.zones:
                        key = (d.name, seed, reserve, fill)
                        g = sized(d.geometry, d.zones)
                    else:
                        key = (d.name, seed)
                        g = sized(d.geometry, fill_zones(traces[key][1], d.geometry, reserve, fill))
                    for c, pols in by_cleaner.items():
                        pols = [p for p in pols if p in (d.policies or s.policies)]
                        if pols:
                            tasks.append((d.name, seed, "report", reserve, fill, g, d.chunk, c, pols, d.costs,
                                          chosen.get, key))
    execute(tasks, "report")
    if s.min_capacity:
        run_min_capacity(r, traces, report, chosen)


def choose_cleaners(doc, s):
    """Per baseline with a cleaner: the one with the fewest failed creates,
    then the least write amplification, on the tuning seeds (over every
    reserve and fill); greedy on a tie."""
    score = collections.defaultdict(lambda: [0, 0.0, 0])
    for e in doc["results"]:
        if e.get("half") != "tune" or e["scenario"] != "sweep" or e["policy"] not in BASELINES_WITH_CLEANER:
            continue
        x = score[(e["policy"], e["params"]["cleaner"])]
        x[0] += e["metrics"]["failed"]
        x[1] += e["metrics"]["write_amplification"] or 1.0
        x[2] += 1
    out = {}
    for p in s.policies:
        if p not in BASELINES_WITH_CLEANER:
            continue
        cands = [(score[(p, c)][0], round(score[(p, c)][1], 6), c != "greedy", c) for c in s.cleaners
                 if score[(p, c)][2]]
        out[p] = min(cands)[3] if cands else s.cleaners[0]
    return out


# --- the report -------------------------------------------------------------

KEY_FIELDS = ("policy", "seed", "half", "reserve", "fill")


KIND = Kind(name="zns-sweep", KEYS=KEYS, SWITCHES=SWITCHES, REPETITIONS=REPETITIONS,
            Suite=Suite, validate=validate, refuse=refuse, run=run, KEY_FIELDS=KEY_FIELDS,
            cell_name=cell_name, failures=failures, summary_table=summary_table, write=write)
