"""kind = "cpuquota": seed 003's reader of many small files, in a container
per CPU limit (docker run --cpus) and way of reading.

A cell is a way of reading and a CPU limit: scenario is the mode's label
(sequential, async, "workers x<n>"), container the limit's ("unlimited",
"0.6"), and mode, workers and cpus say the same as values. The samples are
the time to read every file; files_per_s, cpu_s, throttled_s and run_s
(the container's whole run) come with them."""
import os
from dataclasses import dataclass, field

from .. import suite, units

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
