"""results.json: the document a run writes, and the cells it is made of.

A cell is one thing measured, in the same fields for every kind: the
flavor that ran it (for a zns replay, the placement policy), where
(profile, image, scenario, container: what they mean is the kind's, see
the kind's module in hack/ab/kinds/), with which daemon options (params),
and the fields a kind adds to tell its cells apart (an http endpoint, an
incremental step's concurrency). Every entry of results.json is a cell's
fields followed by its samples, and every entry is built from a Cell.

An entry's reps are the repetition (0, 1, ...) of each of its times_s: a
failed sample leaves no time, so the i-th time is not always the i-th
repetition, and the report pairs stock's and patched's samples by
repetition. failed counts the measured samples that failed, failed_reps
names their repetitions. The values measured with a sample (a kind's
extra lists) carry theirs too: reps_of[field] is the repetition of each
value of the list field (None for a warm-up's), so that no value is ever
matched to a repetition by its place in a list (report.keyed).

A sample's position is its place in its repetition (0: it ran first),
kept as a value measured with it (position, reps_of["position"]): the
flavor's place in the repetition's order (runner.Runner.orders), or
the place the kind gives (a pull scan's variants take turns). The
document's order_seed is the seed those orders were drawn from."""
import datetime
import hashlib
import json
import os
import platform
import re
import shutil
from dataclasses import dataclass, field

from . import hosts


@dataclass
class Cell:
    flavor: str
    profile: str = None
    image: str = None
    params: dict = None
    scenario: str = None
    container: str = None
    kind_fields: dict = field(default_factory=dict)  # the kind's own, after the ones above

    def fields(self):
        return {"flavor": self.flavor, "profile": self.profile, "image": self.image, "params": self.params,
                "scenario": self.scenario, "container": self.container, **self.kind_fields}

    def entry(self, **values):
        """A results.json entry: the cell's fields, then values."""
        return dict(self.fields(), **values)


class Results:
    """The results.json of a run, saved after every sample."""

    def __init__(self, suite, outdir, started=None, order_seed=None, orders=()):
        """started: the run's start (now); order_seed and orders: the seed
        and the flavors' order of every repetition (runner.Runner), for
        suites whose flavors take turns."""
        self.path = os.path.join(outdir, "results.json")
        self.doc = {"suite": suite.name, "kind": suite.kind, "suite_file": os.path.relpath(suite.path, hosts.ROOT),
                    "description": suite.description, "repetitions": suite.repetitions}
        self.doc["margin"] = suite.margin
        if order_seed is not None:
            self.doc["order_seed"] = order_seed
        self.doc.update({"machine": machine(), "started": started or now(), "finished": None, "interrupted": False,
                         "provenance": provenance(suite.path), "daemons": {}, "link": {}, "seed": suite.seed,
                         "results": []})
        self.orders = [list(o) for o in orders]
        self.index = {}
        self.attempts = {}

    def add(self, cell, sample=None, error=None, rep=-1, position=None, **extra):
        """One sample of cell (seconds, or None when it failed with error);
        rep: its repetition (-1: the cell's next one; None: not a measured
        sample, a warm-up); position: its place in the repetition (None:
        its flavor's place in the repetition's order, if it has one);
        extra: the other values measured with it, one list each. A measured
        sample without a time has failed."""
        k = json.dumps(cell.fields(), sort_keys=True)
        if rep == -1:
            rep = self.attempts.get(k, 0)
        if rep is not None:
            # what else the machine was doing: the summary's intervals cannot say
            extra.setdefault("host", host_state())
            if position is None and rep < len(self.orders) and cell.flavor in self.orders[rep]:
                position = self.orders[rep].index(cell.flavor)
            if position is not None:
                extra["position"] = position
        if k not in self.index:
            entry = cell.entry(times_s=[], reps=[], failed=0, failed_reps=[], errors=[], reps_of={})
            entry.update({x: [] for x in extra})
            self.index[k] = entry
            self.doc["results"].append(entry)
        e = self.index[k]
        if rep is not None:
            self.attempts[k] = rep + 1
            if sample is not None:
                e["times_s"].append(round(sample, 4))
                e["reps"].append(rep)
            else:
                e["failed"] += 1
                e["failed_reps"].append(rep)
                if not error:
                    error = "failed"
        if error:
            e["errors"].append(error)
        for x, v in extra.items():
            e.setdefault(x, []).append(v)
            e["reps_of"].setdefault(x, []).append(rep)
        self.save()

    def append(self, entry):
        """A whole entry (Cell.entry), measured at once."""
        self.doc["results"].append(entry)
        self.save()

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.doc, f, indent=1)
        os.replace(tmp, self.path)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def provenance(suite_path):
    """What a reader needs to trace a result back: the suite file's hash, the
    series' hash (the one the patched daemon's version ends in), the
    upstream pin and the project's commit (with local changes or not)."""
    out = {}
    try:
        with open(suite_path, "rb") as f:
            out["suite_sha256"] = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        out["suite_sha256"] = None
    p = hosts.sh(os.path.join(hosts.STACK, "patches.sh"), "hash", check=False)
    out["series"] = p.stdout.strip() if p.returncode == 0 else None
    pin = {}
    try:
        with open(os.path.join(hosts.HACK, "upstream.pin")) as f:
            for line in f:
                k, sep, v = line.strip().partition("=")
                if sep and not k.startswith("#") and k in ("VERSION", "COMMIT", "MODULE", "MODULE_VERSION"):
                    pin[k.lower()] = v
    except OSError:
        pass
    out["upstream"] = pin
    out["commit"] = out["local_changes"] = None
    if shutil.which("git"):
        g = hosts.sh("git", "-C", hosts.ROOT, "rev-parse", "HEAD", check=False)
        d = hosts.sh("git", "-C", hosts.ROOT, "status", "--porcelain", "--untracked-files=no", check=False)
        out["commit"] = g.stdout.strip() if g.returncode == 0 else None
        out["local_changes"] = bool(d.stdout.strip()) if d.returncode == 0 else None
    if out["commit"] is None or out["series"] is None:
        # a tree without git or patched tree: hack/nodes/bundle.sh's record of where it came from
        try:
            with open(os.path.join(hosts.ROOT, ".bundle")) as f:
                b = json.load(f)
        except (OSError, ValueError):
            b = {}
        for k in ("series", "commit", "local_changes"):
            if out[k] is None:
                out[k] = b.get(k)
    return out


def host_state():
    """The machine when a sample was recorded: the time (UTC), the 1-minute
    load average and the share of the last 10 s that some task waited for
    the CPU, for I/O and for memory (PSI's "some avg10", percent; None
    where the kernel has no /proc/pressure)."""
    load = _read("/proc/loadavg").split()
    out = {"at": now(), "load1": float(load[0]) if load else None}
    for res in ("cpu", "io", "memory"):
        m = re.search(r"^some avg10=([0-9.]+)", _read(f"/proc/pressure/{res}"), re.M)
        out[f"psi_{res}"] = float(m.group(1)) if m else None
    return out


def _read(path):
    """A file's text, "" if it cannot be read (a /proc file this kernel has
    not)."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def machine():
    cpu = re.search(r"model name\s*:\s*(.*)", _read("/proc/cpuinfo"))
    mem = re.search(r"MemTotal:\s*(\d+)", _read("/proc/meminfo"))
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "cpu": cpu.group(1) if cpu else "",
            "memory_gib": round(int(mem.group(1)) / 2**20, 1) if mem else None,
            "hostname": platform.node()}
