"""kind = "cpuquota": seed 003's reader of many small files, in a container
per CPU limit (docker run --cpus) and way of reading.

A cell is a way of reading and a CPU limit: scenario is the mode's label
(sequential, async, "workers x<n>"), container the limit's ("unlimited",
"0.6"), and mode, workers and cpus say the same as values. The samples are
the time to read every file; files_per_s, cpu_s, throttled_s and run_s
(the container's whole run) come with them."""
import os
import resource
import sys
import time
from dataclasses import dataclass, field

from .. import hosts, suite, units
from ..measure import Progress, parse_json_line, rotate
from ..results import Cell

KEYS = ("cpus", "modes", "workers", "files", "file_size")
SWITCHES = ()
REPETITIONS = 3
READ_MODES = ("sequential", "async", "workers")  # hack/testimages/node/readfiles.js


@dataclass
class CPUQuota:
    """cpuquota: seed 003's file reader in a container per CPU limit and mode."""
    cpus: list = field(default_factory=lambda: [None, 0.6])  # None: no limit
    modes: list = field(default_factory=lambda: ["async", "workers"])
    workers: list = field(default_factory=lambda: [4])
    files: int = 10000
    file_size: int = 19001  # the seed's: "longonglndinfdfkjds" x 1000 and a newline

    def cells(self):
        """(mode, workers) of every run, workers 0 for the other modes."""
        out = []
        for m in self.modes:
            out += [(m, n) for n in self.workers] if m == "workers" else [(m, 0)]
        return out


def cpus_label(c):
    return "unlimited" if c is None else f"{c:g}"


def mode_label(mode, workers):
    return f"workers x{workers}" if mode == "workers" else mode


@dataclass
class Suite(suite.Suite):
    cpuquota: CPUQuota = None


# --- the suite file ---------------------------------------------------------

def validate(v, d, s):
    s.cpuquota = cpuquota(v, d)


def refuse(v, d, kind):
    for k in KEYS:
        if k in d:
            v.fail(v.first(d, k), f"{k} belongs to cpuquota suites, not {kind}")


def cpuquota(v, d):
    """Seed 003: cpus (a list of CPU limits, "unlimited" for none), modes
    (sequential, async, workers), workers (the worker counts of mode
    workers), files and file_size (the directory read)."""
    q = CPUQuota()
    ncpu = os.cpu_count() or 1
    cpus = v.typed(d.get("cpus", ["unlimited", 0.6]), list, ("cpus",), 'a list of CPU limits ("unlimited" or a number)')
    if not cpus:
        v.fail(("cpus",), "cpus: want at least one CPU limit")
    q.cpus = []
    for c in cpus:
        if c == "unlimited":
            limit = None
        elif isinstance(c, (int, float)) and not isinstance(c, bool):
            if not 0.01 <= c <= ncpu:
                v.fail(("cpus",), f"cpus: {c} is outside 0.01 to {ncpu} (this machine's CPUs; "
                                  f'"unlimited" for no limit)')
            limit = float(c)
        else:
            v.fail(("cpus",), f'cpus: want "unlimited" or a number of CPUs like 0.6, got {c!r}')
        if limit in q.cpus:
            v.fail(("cpus",), f"cpus: {cpus_label(limit)} is listed twice")
        q.cpus.append(limit)
    q.modes = v.typed(d.get("modes", q.modes), list, ("modes",), "a list")
    if not q.modes:
        v.fail(("modes",), "modes: want at least one")
    for m in q.modes:
        if m not in READ_MODES:
            v.fail(("modes",), f"modes: '{m}' is not one of {', '.join(READ_MODES)}")
    if len(set(q.modes)) != len(q.modes):
        v.fail(("modes",), "modes: a mode is listed twice")
    if "workers" in d and "workers" not in q.modes:
        v.fail(("workers",), "workers: worker counts need mode \"workers\" in modes")
    q.workers = v.typed(d.get("workers", q.workers), list, ("workers",), "a list of worker counts")
    if not q.workers:
        v.fail(("workers",), "workers: want at least one worker count")
    for n in q.workers:
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 64:
            v.fail(("workers",), f"workers: want worker counts from 1 to 64, got {n!r}")
    if len(set(q.workers)) != len(q.workers):
        v.fail(("workers",), "workers: a count is listed twice")
    q.files = v.typed(d.get("files", q.files), int, ("files",), "a number of files")
    if not 1 <= q.files <= 200000:
        v.fail(("files",), f"files: want 1 to 200000, got {q.files}")
    if "file_size" in d:
        q.file_size = units.size(v.unit(units.size, v.typed(d["file_size"], str, ("file_size",), "a size"),
                                        ("file_size",)))
        if not 1 <= q.file_size <= 16 << 20:
            v.fail(("file_size",), f"file_size: want 1B to 16MiB, got {d['file_size']}")
    return q


# --- the run ----------------------------------------------------------------

def prepare(r):
    # Promise.all opens every file before the first read completes; a
    # container cannot raise its descriptor limit above the hard limit the
    # daemon has where root lacks CAP_SYS_RESOURCE.
    need = r.s.cpuquota.files + 1024
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and need > hard:
        raise hosts.HostError(f"files: {r.s.cpuquota.files} files need {need} open files at once; "
                              f"this host's hard limit is {hard} (ulimit -Hn)")


def images(s):
    return ["node"]


def run(r):
    """Write the files once per flavour; then per repetition, each flavour
    in ABAB order reads them in a container per CPU limit and mode."""
    s = r.s
    q = s.cpuquota
    dirs = {}
    for f, d in r.daemons.items():
        sys.stderr.write(f"==> {f}: {q.files} files of {units.human_size(q.file_size)}\n")
        dirs[f] = files_dir(q, d)
    cells = q.cells()
    r.results.doc["workload"] = {"files": q.files, "file_size": q.file_size, "cpus": q.cpus,
                                 "modes": q.modes, "workers": q.workers}
    r.results.save()
    prog = Progress(len(q.cpus) * len(cells) * s.repetitions * len(r.daemons))
    # Every descriptor at once: Promise.all opens all the files before
    # the first read completes.
    nofile = q.files + 1024  # checked against the hard limit in prepare()
    for rep in range(s.repetitions):
        for f in r.flavour_order(rep):
            d = r.daemons[f]
            for cpus in rotate(q.cpus, rep):
                for mode, n in rotate(cells, rep):
                    limit = ["--cpus", f"{cpus:g}"] if cpus is not None else []
                    argv = ["node", "/app/readfiles.js", "/data", mode] + ([str(n)] if mode == "workers" else [])
                    t0 = time.monotonic()
                    p = d.docker("run", "--rm", *limit, "--ulimit", f"nofile={nofile}:{nofile}",
                                 "-v", f"{dirs[f]}:/data:ro", "ab/node", *argv, check=False)
                    wall = time.monotonic() - t0
                    res = parse_json_line(p.stdout)
                    err = None if res else ((p.stderr or "").strip().splitlines() or ["failed"])[-1][:300]
                    res = res or {}
                    cell = Cell(f, image="ab/node", params=d.config, scenario=mode_label(mode, n),
                                container=cpus_label(cpus), kind_fields={"mode": mode, "workers": n, "cpus": cpus})
                    r.results.add(cell, res.get("elapsed_s"), err, files_per_s=res.get("files_per_s"),
                                  cpu_s=res.get("cpu_s"), throttled_s=res.get("throttled_s"), run_s=round(wall, 4))
                    prog.step(f"cpuquota {mode_label(mode, n)} cpus={cpus_label(cpus)} {f} rep {rep + 1}: "
                              + (f"{res['elapsed_s']:.2f}s, {res['files_per_s']:.0f} files/s" if res
                                 else f"FAILED {err}"))


def files_dir(q, d):
    """Seed 003's directory: files of the seed's text, on the data-root's
    disk, written once and read once (the runs read from the page cache,
    as the seed's repeated runs did)."""
    path = os.path.join(d.vardir(), "abcq-files")
    os.makedirs(path, exist_ok=True)
    body = seed003_text(q.file_size)
    for i in range(q.files):
        with open(os.path.join(path, f"file-{i}.txt"), "wb") as f:
            f.write(body)
    for i in range(q.files):
        with open(os.path.join(path, f"file-{i}.txt"), "rb") as f:
            f.read()
    return path


SEED003_LINE = b"longonglndinfdfkjds"


def seed003_text(size):
    """Seed 003's file body: its text repeated and a newline (19001 bytes at
    the seed's 1000 repetitions), cut or extended to size bytes."""
    if size <= 1:
        return b"\n"[:size]
    reps = -(-(size - 1) // len(SEED003_LINE))
    return (SEED003_LINE * reps)[:size - 1] + b"\n"
