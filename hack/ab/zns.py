"""Checkpoint placement on a zoned (ZNS) SSD, replayed from a trace.

A zone is written only at its write pointer and freed only by resetting all of
it. Checkpoint images of several containers appended to one shared log share
zones, so deleting one image leaves dead data in zones that still hold other
images' live data, and garbage collection has to copy (relocate) that live data
before it can reset the zone. Placements that know images and their lifetimes
keep data that dies together in the same zones, and relocate nothing. This
module measures them on the same geometry and trace.

The replay itself is hack/zoned/zns-replay, a Go command built inside the patched
moby tree (hack/zoned/zns-replay.sh): its device is the daemon's own model of a zoned
device (daemon/internal/zoned.Model), whose rules a placement cannot break
without stopping the replay, and its policy zone-pack is the daemon's own
placement (zoned.Placer); the others are the baselines it is measured against.
This module has the geometry, the replay and the command line; the traces
(reading, generating, recording from a daemon's log) are ab.zns_trace's,
given here under this module's name too.

    PYTHONPATH=hack python3 -m ab.zns --trace FILE [--zone-size 64MiB ...] [--json out.json]
    PYTHONPATH=hack python3 -m ab.zns gen-trace --out FILE [--rounds 48 ...]
    PYTHONPATH=hack python3 -m ab.zns trace-from-log patched-dockerd.log --out FILE [--together 1s]
"""
import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from . import units
from .results import Cell

# the traces (ab.zns_trace), also under this module's name: ab.zns.read_trace
# and the others are what the study's scripts, its tests and the zns kinds call
from .zns_trace import (  # noqa: F401 (given under this name)
    CLEANERS, DELETED, HEADER, HINT, OPS, POLICIES, Event, MiB, TraceError, TraceParams, check_order,
    describe_trace, generate, logs_deletes, parse_trace, read_trace, trace_digest, trace_from_log, write_trace,
)


# --- the device ------------------------------------------------------------

@dataclass
class Geometry:
    zone_size: int = 64 * MiB
    zone_capacity: int = 64 * MiB  # writable bytes of a zone, <= zone_size
    zones: int = 32
    max_open: int = 8  # 0: no limit (as sysfs reports it)
    max_active: int = 8  # 0: no limit
    block: int = 4096

    def problems(self):
        """[(field, message)]: why this is no device."""
        out = []
        if self.block < 512 or self.block & (self.block - 1):
            out.append(("block", f"want a power of two >= 512 bytes, got {self.block}"))
        for k in ("zone_size", "zone_capacity"):
            v = getattr(self, k)
            if v <= 0 or (self.block > 0 and v % self.block):
                out.append((k, f"want a positive multiple of the block size ({self.block}), got {v}"))
        if self.zone_capacity > self.zone_size:
            out.append(("zone_capacity", f"capacity {units.human_size(self.zone_capacity)} exceeds "
                                         f"the zone size {units.human_size(self.zone_size)}"))
        if self.zones < 1:
            out.append(("zones", f"want at least one zone, got {self.zones}"))
        for k in ("max_open", "max_active"):
            v = getattr(self, k)
            if v < 0 or v > self.zones:
                out.append((k, f"want 0 (no limit) to {self.zones} zones, got {v}"))
        if self.max_open and self.max_active and self.max_open > self.max_active:
            out.append(("max_open", f"{self.max_open} open zones exceed {self.max_active} active ones "
                                    "(an open zone is active)"))
        return out

    @property
    def capacity(self):
        return self.zones * self.zone_capacity

    def padded(self, n):
        """Bytes a write of n takes on the device: whole blocks."""
        return -(-n // self.block) * self.block

    def describe(self):
        lim = lambda n: str(n) if n else "no limit"
        cap = "" if self.zone_capacity == self.zone_size else f", capacity {units.human_size(self.zone_capacity)}"
        return (f"{self.zones} zones of {units.human_size(self.zone_size)}{cap} "
                f"({units.human_size(self.zones * self.zone_size)} namespace, "
                f"{units.human_size(self.capacity)} writable); max open {lim(self.max_open)}, "
                f"max active {lim(self.max_active)}; {self.block}-byte blocks")


def max_heads(g):
    """The most host heads a multi-head log can keep open beside the
    collector's on g (16 when the device sets no limit)."""
    limits = [x for x in (g.max_open, g.max_active) if x]
    return max(1, (min(limits) if limits else 17) - 1)


@dataclass
class Costs:
    """The device's time model (hack/zoned/zns-replay/timing.go): bandwidths in
    bytes per second, times in seconds; zone_bw and read_bw 0 take the
    device's write bandwidth."""
    write_bw: float = 0.0
    zone_bw: float = 0.0
    read_bw: float = 0.0
    reset_s: float = 0.0
    finish_s: float = 0.0

    def problems(self):
        out = []
        for k in ("write_bw", "zone_bw", "read_bw", "reset_s", "finish_s"):
            if getattr(self, k) < 0:
                out.append((k, f"want a value >= 0, got {getattr(self, k)}"))
        if self.write_bw <= 0:
            out.append(("write_bw", "want the device's bandwidth (> 0) for a time model"))
        elif self.zone_bw > self.write_bw:
            out.append(("zone_bw", f"a zone cannot append faster than the device ({self.zone_bw:g} > "
                                   f"{self.write_bw:g} bytes/s)"))
        return out

    def args(self):
        return ["--write-bw", str(int(self.write_bw)), "--zone-bw", str(int(self.zone_bw)),
                "--read-bw", str(int(self.read_bw)), "--reset-time", f"{self.reset_s * 1e6:.0f}us",
                "--finish-time", f"{self.finish_s * 1e6:.0f}us"]


def placement_problems(g, chunk, gc_reserve, heads=0, cleaner="greedy"):
    """[(key, message)]: why these placement parameters do not fit the geometry."""
    out = []
    if heads < 0 or heads > max_heads(g):
        out.append(("heads", f"want 0 (as many as the open limit allows) to {max_heads(g)} "
                             f"(the open limit less the collector's head), got {heads}"))
    if chunk <= 0 or chunk % g.block:
        out.append(("chunk", f"want a positive multiple of the block size ({g.block}), got {chunk}"))
    if not 0 <= gc_reserve < g.zones:
        out.append(("gc_reserve", f"want 0 to {g.zones - 1} zones, got {gc_reserve}"))
    if cleaner not in CLEANERS:
        out.append(("cleaner", f"want one of {', '.join(CLEANERS)}, got {cleaner!r}"))
    return out


# --- the replay -------------------------------------------------------------

class ReplayError(Exception):
    """The replayer could not run, or a placement broke a rule of the device."""


@dataclass
class Failure:
    time_s: float
    container: str
    checkpoint: str
    bytes: int
    reason: str
    dead_bytes: int = 0  # written bytes no longer live on the device when it failed
    empty_zones: int = 0


@dataclass
class Outcome:
    policy: str
    metrics: dict
    failures: list
    series: dict

    def entry(self, params, geometry=None):
        """A results.json entry (the fields every kind has, then the replay's);
        with the Geometry it was replayed on, entries of a scan say which."""
        geo = {"geometry": dataclasses.asdict(geometry)} if geometry else {}
        cell = Cell(self.policy, params=params, scenario="replay", kind_fields={"policy": self.policy, **geo})
        return cell.entry(times_s=[],
                          errors=[f"{f.time_s:g}s {f.container}/{f.checkpoint}: {f.reason}" for f in self.failures],
                          metrics=self.metrics, failures=[dataclasses.asdict(f) for f in self.failures],
                          series=self.series)


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_replayer = None
# How the replayer is started (the harness's tests that pretend the test
# hosts put the real one back here: a replay is no command on a test host).
_Popen = subprocess.Popen


def _run(cmd):
    """(exit status, standard output, standard error) of cmd."""
    with _Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as p:
        out, err = p.communicate()
    return p.returncode, out, err


def replayer():
    """The replay command, hack/zoned/zns-replay/: built from the patched tree by
    hack/zoned/zns-replay.sh (once per process), or the one ZNS_REPLAY names, or
    build/zns-replay where there is no patched tree to build it from (a
    bundle for test nodes)."""
    global _replayer
    if _replayer:
        return _replayer
    path = os.environ.get("ZNS_REPLAY")
    built = os.path.join(ROOT, "build", "zns-replay")
    if not path and not os.path.isdir(os.path.join(ROOT, "build", "moby-patched")) and os.path.exists(built):
        path = built
    if not path:
        rc, out, err = _run([os.path.join(ROOT, "hack", "zoned", "zns-replay.sh"), "build"])
        if rc:
            raise ReplayError(f"building the replayer (hack/zoned/zns-replay.sh build) failed:\n{err.strip()}")
        path = out.strip().splitlines()[-1]
    _replayer = path
    return path


# The series every replay has, sampled after every step (a delete, or a
# group of creates taken together); zone_t_s and zone_live_pct, the
# occupancy map, only where asked for.
SERIES = ("t_s", "events", "live_bytes", "used_zones", "util_used", "util_total", "host_bytes",
          "relocated_bytes", "resets", "mixed_zones")
OCCUPANCY_SAMPLES = 120  # at most this many states of every zone kept for the occupancy map


def replay_trace(path, g, policies=POLICIES, chunk=MiB, gc_reserve=2, heads=0, occupancy=False, cleaner="greedy",
                 costs=None):
    """Replay the trace file at path on a model of the device g under each
    policy: [Outcome]. The replay is hack/zoned/zns-replay's, the daemon's own
    device model (daemon/internal/zoned) and, for zone-pack, the daemon's
    own placement. occupancy: also keep every zone's state (live % of its
    capacity, -1 empty) at up to OCCUPANCY_SAMPLES steps spread over the
    trace, as series zone_t_s and zone_live_pct, for the occupancy map.
    costs: the device's time model (Costs), or None for none."""
    cmd = [replayer(), "--trace", path, "--zone-size", str(g.zone_size), "--zone-capacity", str(g.zone_capacity),
           "--zones", str(g.zones), "--max-open", str(g.max_open), "--max-active", str(g.max_active),
           "--block", str(g.block), "--chunk", str(chunk), "--gc-reserve", str(gc_reserve), "--heads", str(heads),
           "--cleaner", cleaner]
    for p in policies:
        cmd += ["--policy", p]
    if occupancy:
        cmd.append("--occupancy")
    if costs is not None:
        cmd += costs.args()
    rc, out, err = _run(cmd)
    if rc:
        raise ReplayError(err.strip() or f"{cmd[0]} exited {rc}")
    doc = json.loads(out)
    return [Outcome(o["policy"], _floats(o["metrics"], FLOAT_METRICS), [Failure(**_floats(f, ("time_s",)))
                                                                        for f in o["failures"]],
                    _floats(o["series"], FLOAT_SERIES)) for o in doc["outcomes"]]


# What is a float even where its value is whole (JSON from Go writes 1.0 as 1).
FLOAT_METRICS = ("write_amplification", "util_used_min", "util_used_mean", "util_total_mean", "util_total_max")
FLOAT_SERIES = ("t_s", "util_used", "util_total", "zone_t_s")


def _floats(d, keys):
    for k in keys:
        v = d.get(k)
        if isinstance(v, list):
            d[k] = [float(x) if isinstance(x, int) else x for x in v]
        elif isinstance(v, int):
            d[k] = float(v)
    return d


def replay(events, g, policy, chunk=MiB, gc_reserve=2, heads=0, occupancy=False, cleaner="greedy"):
    """Run the events through one placement: an Outcome."""
    return compare(events, g, [policy], chunk, gc_reserve, heads, occupancy, cleaner)[0]


def compare(events, g, policies=POLICIES, chunk=MiB, gc_reserve=2, heads=0, occupancy=False, cleaner="greedy"):
    """Run the events through each placement (replay_trace, on a trace file
    of them): [Outcome]."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.csv")
        write_trace(path, events)
        return replay_trace(path, g, policies, chunk, gc_reserve, heads, occupancy, cleaner)


# --- presenting ------------------------------------------------------------

def gib(n):
    return f"{n / (1 << 30):.2f} GiB"


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


ROWS = (
    ("host written", lambda m: gib(m["host_bytes"])),
    ("relocated by GC", lambda m: gib(m["relocated_bytes"])),
    ("write amplification", lambda m: "-" if m["write_amplification"] is None else f"{m['write_amplification']:.3f}"),
    ("zone resets", lambda m: str(m["resets"])),
    ("mixed zones (max / end)", lambda m: f"{m['mixed_zones_max']} / {m['mixed_zones_end']}"),
    ("used-zone utilisation (min / mean)", lambda m: f"{pct(m['util_used_min'])} / {pct(m['util_used_mean'])}"),
    ("device utilisation (mean / max)", lambda m: f"{pct(m['util_total_mean'])} / {pct(m['util_total_max'])}"),
    ("peak open / active zones", lambda m: f"{m['peak_open']} / {m['peak_active']}"),
    ("failed creates", lambda m: f"{m['failed']} of {m['creates']}"),
    ("wasted", lambda m: "-" if m.get("wasted_bytes") is None else gib(m["wasted_bytes"])),
)


def table(outcomes):
    """Policies side by side, one metric a line (for a terminal)."""
    w = max(len(r[0]) for r in ROWS)
    cols = [[fn(o.metrics) for _, fn in ROWS] for o in outcomes]
    cw = [max(len(o.policy), *(len(c) for c in col)) for o, col in zip(outcomes, cols)]
    lines = [" " * w + "".join(f"  {o.policy:>{n}}" for o, n in zip(outcomes, cw))]
    for i, (name, _) in enumerate(ROWS):
        lines.append(f"{name:<{w}}" + "".join(f"  {col[i]:>{n}}" for col, n in zip(cols, cw)))
    return "\n".join(lines)


# --- command line ----------------------------------------------------------

def _arg(fn):
    def parse(text):
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["gen-trace"]:
            return gen_main(argv[1:])
        if argv[:1] == ["trace-from-log"]:
            return log_main(argv[1:])
        return replay_main(argv)
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ReplayError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def replay_main(argv):
    d = Geometry()
    p = argparse.ArgumentParser(prog="ab.zns", description="Replay a checkpoint trace on a zoned device under "
                                f"each placement policy ({', '.join(POLICIES)}). "
                                "`ab.zns gen-trace --help`: the default trace.")
    p.add_argument("--trace", required=True, help="CSV: " + ",".join(HEADER))
    p.add_argument("--zone-size", type=_arg(units.size), default=d.zone_size)
    p.add_argument("--zone-capacity", type=_arg(units.size), default=d.zone_capacity)
    p.add_argument("--zones", type=int, default=d.zones)
    p.add_argument("--max-open", type=int, default=d.max_open, help="0: no limit")
    p.add_argument("--max-active", type=int, default=d.max_active, help="0: no limit")
    p.add_argument("--block", type=_arg(units.size), default=d.block)
    p.add_argument("--chunk", type=_arg(units.size), default=MiB, help="interleaving unit of concurrent images")
    p.add_argument("--gc-reserve", type=int, default=2, help="the reserve: live data never exceeds the "
                   "capacity of all zones but these (every policy that relocates)")
    p.add_argument("--cleaner", choices=CLEANERS, default="greedy", help="the logs' victim rule")
    p.add_argument("--heads", type=int, default=0, help="the multi-head log's host heads (0: the open limit less one)")
    p.add_argument("--policy", action="append", choices=POLICIES, help="default: all")
    p.add_argument("--json", help="write the metrics and time series here")
    a = p.parse_args(argv)
    g = Geometry(zone_size=a.zone_size, zone_capacity=a.zone_capacity, zones=a.zones,
                 max_open=a.max_open, max_active=a.max_active, block=a.block)
    for k, msg in g.problems() + placement_problems(g, a.chunk, a.gc_reserve, a.heads, a.cleaner):
        p.error(f"--{k.replace('_', '-')}: {msg}")
    events = read_trace(a.trace)
    outs = replay_trace(a.trace, g, a.policy or POLICIES, a.chunk, a.gc_reserve, a.heads, cleaner=a.cleaner)
    print(f"trace {a.trace}: {len(events)} events; device: {g.describe()}\n")
    print(table(outs))
    if a.json:
        doc = {"trace": dict(describe_trace(events), source=a.trace, sha256=trace_digest(a.trace)),
               "geometry": dataclasses.asdict(g), "placement": {"chunk": a.chunk, "gc_reserve": a.gc_reserve, "heads": a.heads,
                                                                    "cleaner": a.cleaner},
               "results": [o.entry({"chunk": a.chunk, "gc_reserve": a.gc_reserve, "heads": a.heads,
                                    "cleaner": a.cleaner}, g)
                           for o in outs]}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


def log_main(argv):
    p = argparse.ArgumentParser(prog="ab.zns trace-from-log", description=trace_from_log.__doc__)
    p.add_argument("log", nargs="+", help="patched dockerd logs (the harness keeps patched-dockerd.log)")
    p.add_argument("--out", required=True)
    p.add_argument("--keep", type=int, default=None, help="a log without \"Checkpoint deleted\" lines (a daemon "
                   "before 0035): the checkpoints kept per container, the deletes made up (default 3); "
                   "a log with them: not allowed")
    p.add_argument("--together", type=_arg(units.duration), default=1.0,
                   help="creates within this of each other are taken together (default 1s)")
    a = p.parse_args(argv)
    if a.keep is not None and a.keep < 1:
        p.error("--keep: want at least 1")
    lines = []
    for path in a.log:
        try:
            with open(path, errors="replace") as f:
                lines += f.readlines()
        except OSError as e:
            raise TraceError(f"{path}: {e.strerror}") from None
    real = logs_deletes(lines)
    if real and a.keep is not None:
        p.error("--keep: the log has its deletes (\"Checkpoint deleted\" lines); none are made up")
    keep = 3 if a.keep is None else a.keep
    events = trace_from_log(lines, keep, a.together)
    write_trace(a.out, events)
    info = describe_trace(events)
    print(f"{a.out}: {info['creates']} creates, {info['deletes']} deletes, {gib(info['bytes'])} over "
          f"{info['duration_s']:g} s")
    if real:
        # container-removed since 0091, container_removed in the recordings before it
        removed = sum(DELETED in line and ("container-removed=true" in line or "container_removed=true" in line)
                      for line in lines)
        print(f"deletes: the log's (\"Checkpoint deleted\" lines), {removed} of them with their container")
    else:
        print(f"deletes: made up (the log has no \"Checkpoint deleted\" line): each container's last {keep} kept")
    return 0


def gen_main(argv):
    d = TraceParams()
    p = argparse.ArgumentParser(prog="ab.zns gen-trace", description=TraceParams.__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--containers", default=",".join(d.containers), help="memory held, comma-separated")
    p.add_argument("--interval", type=_arg(units.duration), default=d.interval_s, help="e.g. 5m, 300s")
    p.add_argument("--rounds", type=int, default=d.rounds)
    p.add_argument("--keep", type=int, default=d.keep, help="checkpoints kept per container")
    p.add_argument("--jitter", type=_arg(units.percent), default=d.jitter, help="e.g. 5%%")
    p.add_argument("--skip", type=_arg(units.percent), default=d.skip, help="e.g. 10%%")
    p.add_argument("--overhead", type=_arg(units.size), default=d.overhead)
    p.add_argument("--seed", type=int, default=d.rng_seed)
    a = p.parse_args(argv)
    cs = [c.strip() for c in a.containers.split(",") if c.strip()]
    for c in cs:
        try:
            units.size(c)
        except ValueError as e:
            p.error(f"--containers: {e}")
    if not cs or len(set(cs)) != len(cs):
        p.error("--containers: want distinct memory sizes (each names its container)")
    if a.rounds < 1 or a.keep < 1:
        p.error("--rounds and --keep: want at least 1")
    if a.jitter >= 1 or a.skip >= 1:
        p.error("--jitter and --skip: want less than 100%")
    tp = TraceParams(containers=cs, interval_s=a.interval, rounds=a.rounds, keep=a.keep, jitter=a.jitter,
                     overhead=a.overhead, skip=a.skip, rng_seed=a.seed)
    events = generate(tp)
    write_trace(a.out, events)
    info = describe_trace(events)
    print(f"{a.out}: {info['creates']} creates, {info['deletes']} deletes, {gib(info['bytes'])} over "
          f"{info['duration_s']:g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
