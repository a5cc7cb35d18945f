"""kind = "checkpoint": docker checkpoint create of memory holders and
applications, alone, all together, and in growing groups (seed 001).

A cell is a scenario (alone, together, incremental) and a [[container]]:
scenario names the one, container the other's name, image its image; an
incremental step adds concurrent (how many were checkpointed at once). In
together, container BATCH is the whole group. Flavor "runc" is the floor:
runc checkpoint --image-path and fsync of a container of the same kind,
measured in the dockerd hosts.

Every flavor runs its containers with its system (ab.systems): stock and
patched are dockerd hosts (docker checkpoint create, docker start
--checkpoint), podman is podman (podman container checkpoint and restore,
with the project's runc and CRIU); the report puts patched against it as a
peer."""
import concurrent.futures
import os
import re
import shutil
import sys
import time
from dataclasses import dataclass, field

from .. import hosts, stats, suite, systems, units
from ..measure import Progress
from ..report import bar_plot, cell_key, fmt_ratio, fmt_v, keyed, median_of, versus
from ..results import Cell
from . import Kind

KEYS = ("scenarios", "container", "leave_running", "restore", "floor", "settle", "warmup")
KEY_FIELDS = ("concurrent",)  # besides scenario and container
SWITCHES = ("floor",)  # floor = false is no floor, in any suite
REPETITIONS = 3
SCENARIOS = ("alone", "together", "incremental")
RUNC = os.path.join(hosts.AB_PREFIX, "bin", "runc")
# A [[container]]'s name names its containers (abcp-<name>), so it is a
# container name's tail.
CONTAINER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*")
# The result entry of a "together" group as a whole: from the requests to the
# last checkpoint done. No [[container]] can have this name.
BATCH = "(batch)"


@dataclass
class Container:
    name: str
    memory: int = 0  # bytes held by a memory holder
    image: str = ""  # or a real application image
    command: list = field(default_factory=list)


@dataclass
class Suite(suite.Suite):
    scenarios: list = field(default_factory=list)
    containers: list = field(default_factory=list)
    leave_running: bool = False
    restore: bool = False
    floor: bool = False  # also time runc checkpoint --image-path + fsync
    settle: float = 0.0  # seconds the containers run before their checkpoint
    # untimed checkpoints of the first container by each flavor before the
    # first repetition, discarded (a daemon's first checkpoint pays for what
    # is not yet cached: CRIU's and runc's binaries, the image's layers)
    warmup: int = 1


# --- the suite file ---------------------------------------------------------

def validate(v, d, s):
    sc = v.typed(d.get("scenarios", ["alone"]), list, ("scenarios",), "a list")
    for x in sc:
        if x not in SCENARIOS:
            v.fail(("scenarios",), f"scenarios: '{x}' is not one of {', '.join(SCENARIOS)}")
    s.scenarios = sc
    s.containers = [container(v, c, i) for i, c in enumerate(v.tables(d, "container"))]
    v.unique(s.containers, "container")
    s.leave_running = v.typed(d.get("leave_running", False), bool, ("leave_running",), "true or false")
    s.restore = v.typed(d.get("restore", False), bool, ("restore",), "true or false")
    s.floor = v.typed(d.get("floor", False), bool, ("floor",), "true or false")
    s.settle = v.seconds(d, (), "settle", 0.0, 0.0)
    s.warmup = v.typed(d.get("warmup", 1), int, ("warmup",), "an integer >= 0")
    if s.warmup < 0:
        v.fail(("warmup",), "warmup: want an integer >= 0")


def refuse(v, d, kind):
    """leave_running and restore are let be (they do nothing elsewhere)."""
    if d.get("floor"):
        v.fail(("floor",), "floor: only checkpoint suites have the runc floor")
    for k in ("container", "scenarios", "settle"):
        if k in d:
            v.fail((k, 0) if k == "container" else (k,), f"{k} belongs to checkpoint suites, not {kind}")


def container(v, c, i):
    w = ("container", i)
    v.keys(c, w, ("name", "memory", "image", "command"), ("name",), "[[container]]")
    ct = Container(name=v.typed(c["name"], str, w + ("name",), "a string"))
    if not CONTAINER_NAME.fullmatch(ct.name):
        v.fail(w + ("name",), f"{ct.name!r} cannot be part of a container name "
               "(letters, digits, '_', '.', '-'; a letter or digit first)")
    if ("memory" in c) == ("image" in c):
        v.fail(w, "[[container]] needs exactly one of 'memory' (a memory holder) or 'image'")
    if "memory" in c:
        ct.memory = units.size(v.unit(units.size, c["memory"], w + ("memory",)))
    else:
        ct.image = v.typed(c["image"], str, w + ("image",), "an image name")
        ct.command = v.typed(c.get("command", []), list, w + ("command",), "a list")
    return ct


# --- the run ----------------------------------------------------------------

def prepare(r):
    """The application images the [[container]] tables name."""
    apps = sorted({c.image.split("/")[-1].split(":")[0] for c in r.s.containers if c.image})
    if apps:
        hosts.build_images(*apps)


def run(r):
    """Per repetition and scenario, each flavor in the repetition's order
    (runner.Runner.flavor_order): start the group's containers,
    checkpoint them at once, time each and the batch; then the freeze seen
    from inside, the restore; runc's floor after."""
    s = r.s
    n = len(s.containers)
    per = {"alone": n, "together": 1, "incremental": n}
    prog = Progress(sum(per[x] for x in s.scenarios) * s.repetitions * len(r.daemons))
    # runc's floor is measured in each dockerd test host in turn (one per
    # repetition, so it is not always beside the same daemon or after the
    # same flavor), once that host's own checkpoints are cleaned up.
    hosts_ = [f for f in r.daemons if systems.name_of(f) == "dockerd"] or list(r.daemons)

    def floor_host(rep):
        return hosts_[rep % len(hosts_)]
    warm_up(r)
    for rep in range(s.repetitions):
        for scen in s.scenarios:
            for f in r.flavor_order(rep):
                d = r.daemons[f]
                groups = {"alone": [[c] for c in s.containers], "together": [s.containers],
                          "incremental": [s.containers[:k] for k in range(1, n + 1)]}[scen]
                for group in groups:
                    names = [f"abcp-{c.name}" for c in group]
                    try:
                        for c, nm in zip(group, names):
                            start_container(d, c, nm)
                        # A container that has run a while: its start's
                        # writes are done before its checkpoint begins, and
                        # the flavor before it has its images on the disk
                        # (sync waits for their writeback), not in its way.
                        time.sleep(s.settle)
                        hosts.sh("sync")
                        t0 = time.monotonic()
                        with concurrent.futures.ThreadPoolExecutor(len(group)) as ex:
                            futs = [ex.submit(checkpoint, d, nm, f"cp{rep}", s.leave_running, s.sample_timeout)
                                    for nm in names]
                            res = [x.result() for x in futs]
                        batch = time.monotonic() - t0
                        for c, nm, (t, err) in zip(group, names, res):
                            cell = Cell(f, image=c.image or "ab/memholder", params=d.config, scenario=scen,
                                        container=c.name,
                                        kind_fields={"concurrent": len(group)} if scen == "incremental" else {})
                            extra = {}
                            if s.leave_running and c.memory and t is not None:
                                extra["freeze_s"] = freeze(d, nm)
                            if s.restore and scen == "alone" and t is not None:
                                rt, rerr = restore(d, nm, f"cp{rep}", s.leave_running, s.sample_timeout)
                                extra = {"restore_s": round(rt, 4) if rt is not None else None}
                                if rerr:
                                    extra["restore_error"] = rerr
                            r.results.add(cell, t, err, **extra)
                        if scen == "together":
                            # The whole batch: from the requests to the last checkpoint done.
                            bad = [e for _, e in res if e]
                            r.results.add(Cell(f, params=d.config, scenario=scen, container=BATCH),
                                          None if bad else batch, f"a checkpoint failed: {bad[0]}" if bad else None)
                        label = "+".join(c.name for c in group)
                        prog.step(f"checkpoint {scen} {label} {f} rep {rep + 1}: "
                                  + ", ".join(f"{t:.2f}s" if t is not None else "FAILED" for t, _ in res)
                                  + (f" (batch {batch:.2f}s)" if scen == "together" else ""))
                    finally:
                        cleanup(d, names)
                    # runc's floor, with nothing else running in the host
                    if s.floor and scen == "alone" and f == floor_host(rep):
                        for c in group:
                            ft, fr, ferr = floor(d, c, rep, s.leave_running, s.sample_timeout)
                            cell = Cell("runc", image=c.image or "ab/memholder", scenario=scen, container=c.name)
                            extra = {"freeze_s": fr} if s.leave_running and c.memory else {}
                            r.results.add(cell, ft, ferr, floor_host=f, **extra)


def warm_up(r):
    """The suite's warm-up: s.warmup checkpoints of its first container by
    each flavor, in the first repetition's order, before anything is
    timed; kept beside the first scenario's cell of that container as
    warm-ups (warmup_s; no repetition, so no statistic takes them), a
    failure among its errors."""
    s = r.s
    c = s.containers[0]
    scen = s.scenarios[0]
    for f in r.flavor_order(0):
        d = r.daemons[f]
        for w in range(s.warmup):
            name = f"abcp-warm-{c.name}"
            try:
                start_container(d, c, name)
                time.sleep(s.settle)
                hosts.sh("sync")
                t, err = checkpoint(d, name, f"warm{w}", s.leave_running, s.sample_timeout)
            finally:
                cleanup(d, [name])
            cell = Cell(f, image=c.image or "ab/memholder", params=d.config, scenario=scen, container=c.name,
                        kind_fields={"concurrent": 1} if scen == "incremental" else {})
            r.results.add(cell, None, f"warm-up: {err}" if err else None, rep=None,
                          warmup_s=round(t, 4) if t is not None else None)
            sys.stderr.write(f"    warm-up checkpoint {c.name} {f}: "
                             + (f"{t:.2f}s\n" if t is not None else f"FAILED: {err}\n"))


def start_container(d, c, name):
    system = systems.of(d.flavor)
    if c.memory:
        system.run_container(d, name, "ab/memholder", ["memholder", "-r", "200", str(max(1, c.memory >> 20))])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if "verified_passes=" in system.logs(d, name, tail=1):
                return
            time.sleep(0.1)
        raise hosts.HostError(f"{name}: the memory holder did not get ready")
    system.run_container(d, name, c.image, c.command)
    time.sleep(2)


def checkpoint(d, name, cp, leave_running, timeout):
    t0 = time.monotonic()
    p = systems.of(d.flavor).checkpoint(d, name, cp, leave_running, timeout)
    t = time.monotonic() - t0
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1][:300]
    return t, None


def freeze(d, name):
    """How long a memory holder was frozen by a --leave-running checkpoint,
    seen from inside: the longest gap of its 10 ms ticker (maxgap_ms in
    its next report; before the checkpoint it is a few ms)."""
    logs = systems.of(d.flavor).logs
    before = logs(d, name).count("\n")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = logs(d, name).splitlines()
        if len(lines) > before:
            m = re.search(r"maxgap_ms=([\d.]+)", lines[-1])
            return round(float(m.group(1)) / 1000, 4) if m else None
        time.sleep(0.1)
    return None


def restore(d, name, cp, leave_running, timeout):
    system = systems.of(d.flavor)
    if leave_running:
        system.stop(d, name)
    t0 = time.monotonic()
    p = system.restore(d, name, cp, timeout)
    t = time.monotonic() - t0
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1][:300]
    return t, None


def floor(d, c, rep, leave_running, timeout):
    """The floor under a daemon's checkpoint: runc checkpoint --image-path
    on a container of the same kind, into a directory on the daemon's
    data disk, plus fsync of every file and the directory (what makes the
    daemon's checkpoint durable); runc is ended after timeout seconds.
    Returns (seconds, freeze, error)."""
    name = f"abcp-{c.name}-floor"
    imgdir = os.path.join(d.vardir(), f"floor-{c.name}-{rep}")
    try:
        start_container(d, c, name)
        cid = d.docker("inspect", "-f", "{{.Id}}", name).stdout.strip()
        os.makedirs(imgdir)
        cmd = [RUNC, "--root", d.runc_root(), "checkpoint", "--image-path", imgdir]
        if leave_running:
            cmd.append("--leave-running")
        t0 = time.monotonic()
        # runc finds criu on PATH: the one the daemons use
        path = os.path.dirname(RUNC) + os.pathsep + os.environ.get("PATH", "")
        p = hosts.sh(*cmd, cid, env={"PATH": path}, check=False, timeout=timeout)
        if p.returncode == 0:
            for dirpath, _, files in os.walk(imgdir):
                for fn in files:
                    fd = os.open(os.path.join(dirpath, fn), os.O_RDONLY)
                    os.fsync(fd)
                    os.close(fd)
                fd = os.open(dirpath, os.O_RDONLY)
                os.fsync(fd)
                os.close(fd)
        t = time.monotonic() - t0
        if p.returncode != 0:
            return None, None, (p.stderr.strip().splitlines() or ["runc checkpoint failed"])[-1][:300]
        fr = freeze(d, name) if leave_running and c.memory else None
        return t, fr, None
    finally:
        cleanup(d, [name])
        shutil.rmtree(imgdir, ignore_errors=True)


def cleanup(d, names):
    if names:
        systems.of(d.flavor).remove(d, names)


# --- the report -------------------------------------------------------------

def cell_name(e):
    c = f" (x{e['concurrent']})" if e.get("concurrent") else ""
    return f"{e['scenario']}: {e['container']}{c}"


def sections(doc):
    return [floor_table(doc), together_table(doc)]


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
        same = [e for e in doc["results"] if cell_key(e, "checkpoint") == cell_key(r, "checkpoint")]
        by = {e["flavor"]: e for e in same}
        rs = stats.summary(r["times_s"])

        def time_of(f):
            e = by.get(f)
            m = stats.summary(e["times_s"]) if e else None
            return f"{fmt_v(m['median'], 's')} s" if m else "-"

        def ratio(f):
            # where runc failed every time the cell shows its failures, not "-"
            e = by.get(f)
            c = stats.ratio_ci(keyed(e), keyed(r)) if e else None
            return fmt_ratio(c, True) if c else "-"

        def frz(f):
            e = by.get(f)
            v = [x for x in (e or {}).get("freeze_s", []) if x is not None]
            return f"{fmt_v(stats.summary(v)['median'], 's')} s" if v else "-"

        rmed = f"{fmt_v(rs['median'], 's')} s" if rs else "-"
        lines.append(f"| {r['container']} | {rmed} | {time_of('stock')} | {time_of('patched')} | {ratio('patched')} | "
                     f"{ratio('stock')} | {frz('runc')} | {frz('patched')} |")
    return "\n".join(lines) + "\n"


def together_table(doc):
    """Checkpoint suites with "alone" and "together": per flavor, each
    container's time beside the others against its time alone (seed 001,
    Figure 3), and the whole batch."""
    ents = {(e["flavor"], e["scenario"], e["container"]): e for e in doc["results"]
            if e["flavor"] in ("stock", "patched") and e.get("scenario") in ("alone", "together")}
    es = {k: e["times_s"] for k, e in ents.items()}
    ek = {k: keyed(e) for k, e in ents.items()}  # by repetition, for the ratios
    rows = []
    for (f, scen, c), together in es.items():
        if scen != "together" or c == BATCH:
            continue
        alone = es.get((f, "alone", c), [])
        rows.append(f"| {f} | {c} | {fmt_v(median_of(alone), 's')} | {fmt_v(median_of(together), 's')} | "
                    f"{versus(ek[(f, scen, c)], ek.get((f, 'alone', c), {}), True)} |")
    if not rows:
        return ""
    lines = ["## Together against alone (seed 001, Figure 3)", "",
             "Each container's checkpoint time with all the suite's containers checkpointed at once, against its "
             "time alone (medians; ratio together/alone paired by repetition, with its 95% t interval). The batch is the time from the "
             "requests to the last checkpoint done.", "",
             "| flavor | container | alone | together | together/alone [95% CI] |",
             "| --- | --- | --- | --- | --- |"] + rows
    if ("stock", "together", BATCH) in es or ("patched", "together", BATCH) in es:
        bs, bp = es.get(("stock", "together", BATCH), []), es.get(("patched", "together", BATCH), [])
        lines += ["", "| batch | stock | patched | patched/stock [95% CI] |", "| --- | --- | --- | --- |",
                  f"| all together | {fmt_v(median_of(bs), 's')} | {fmt_v(median_of(bp), 's')} | "
                  f"{versus(ek.get(('patched', 'together', BATCH), {}), ek.get(('stock', 'together', BATCH), {}), True)} |"]
    return "\n".join(lines) + "\n"


def plots(doc, outdir, plt):
    return bar_plot(doc, outdir, plt, "checkpoint time")


def after_samples(doc):
    """The warm-up checkpoints, the restores, and the freeze seen from
    inside."""
    md = []
    warm = [e for e in doc["results"] if e.get("warmup_s")]
    if warm:
        md += ["", "## Warm-up checkpoints (not in the statistics)", "",
               "Each flavor's first checkpoints of the first container, before the measured ones.", "",
               "| flavor | container | warm-up times |", "| --- | --- | --- |"]
        for e in warm:
            md.append(f"| {e['flavor']} | {e['container']} | "
                      f"{', '.join(fmt_v(x, 's') if x is not None else 'failed' for x in e['warmup_s'])} |")
    restores = [e for e in doc["results"] if e.get("restore_s")]
    if restores:
        md += ["", "## Restores", "", "| flavor | container | restored | restore time (median) | errors |",
               "| --- | --- | --- | --- | --- |"]
        for e in restores:
            ok = [x for x in e["restore_s"] if x is not None]
            m = stats.summary(ok)
            md.append(f"| {e['flavor']} | {e['container']} | {len(ok)}/{len(e['restore_s'])} | "
                      f"{fmt_v(m['median'], 's') if m else '-'} | "
                      f"{'; '.join(sorted(set(e.get('restore_error', []))))[:200]} |")
    frozen = [e for e in doc["results"] if any(x is not None for x in e.get("freeze_s", []))]
    if frozen:
        md += ["", "## Freeze (--leave-running), seen from inside the container", "",
               "The longest gap of the memory holder's 10 ms ticker around the checkpoint.", "",
               "| flavor | cell | median freeze (s) | samples |", "| --- | --- | --- | --- |"]
        for e in frozen:
            v = [x for x in e["freeze_s"] if x is not None]
            md.append(f"| {e['flavor']} | {cell_name(e)} | {fmt_v(stats.summary(v)['median'], 's')} | "
                      f"{', '.join(fmt_v(x, 's') for x in v)} |")
    return md


KIND = Kind(name="checkpoint", KEYS=KEYS, SWITCHES=SWITCHES, REPETITIONS=REPETITIONS,
            Suite=Suite, validate=validate, refuse=refuse, run=run, KEY_FIELDS=KEY_FIELDS, prepare=prepare,
            cell_name=cell_name, sections=sections, plots=plots, after_samples=after_samples)
