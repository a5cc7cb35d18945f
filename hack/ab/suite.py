"""Suite files (TOML) -> a validated Suite. Nothing runs before the whole file
is known to be good; every error names the file and line.

This module has what every suite has: the keys below, the flavors of the
suites that run daemons, and the checks that name a line. Each kind's own
keys, tables and checks are in its module in hack/ab/kinds/, which says
which top-level keys it takes (KEYS): a key no kind takes is unknown.

What is allowed but weak (too few repetitions for a verdict) is a warning
(Suite.warnings, naming the file, the line, the suite and the key), which
the command line prints; it stops nothing."""
import itertools
import os
import re
import tomllib
from dataclasses import dataclass, field

from . import kinds, stats, systems, units

COMMON_KEYS = ("name", "kind", "repetitions", "description", "seed", "margin")
DAEMON_KEYS = ("flavor", "link_backend", "sample_timeout", "order_seed")  # every suite that runs daemons
# seconds after which a measured command (a pull, a checkpoint, a run) is
# ended and its sample fails: a hung one fails its repetition, not the run
SAMPLE_TIMEOUT = 600.0
# every [flavor.<name>] a suite may have: the dockerd hosts (stock, patched)
# and the peers they are compared with, each run by its system (ab.systems)
FLAVORS = systems.flavors()


class SuiteError(Exception):
    pass


@dataclass
class Flavor:
    name: str
    # key -> value or list (a scan); or a list of such tables without lists,
    # the settings of a scan one by one
    daemon: dict
    # The dockerd its test host runs: bin/dockerd-<binary>, its own by
    # default. binary = "stock" in [flavor.patched] makes an A/A run: both
    # hosts run the same binary, and any difference is the harness's;
    # "commit:<rev>" or "series:<hash>" (stored as commit-<12 hex digits>)
    # runs the patched daemon of a commit of the project, so that two
    # commits take turns.
    binary: str = None
    system: str = "dockerd"  # what runs it (ab.systems)

    @property
    def dockerd(self):
        return self.binary or self.name

    def variants(self):
        """Every daemon config of the scan: the tables listed, or the
        cartesian product of lists."""
        if isinstance(self.daemon, list):
            return [dict(d) for d in self.daemon] or [{}]
        keys = sorted(self.daemon)
        values = [v if isinstance(v, list) else [v] for v in (self.daemon[k] for k in keys)]
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)] or [{}]


@dataclass
class Suite:
    """What every suite has; each kind's module extends it with its own
    tables (kinds.<kind>.Suite)."""
    path: str
    name: str
    kind: str
    repetitions: int
    description: str = ""
    flavors: dict = field(default_factory=dict)
    link_backend: str = "auto"
    sample_timeout: float = SAMPLE_TIMEOUT
    seed: dict = field(default_factory=dict)  # published numbers, for the report
    # the equivalence margin of its verdicts: "level" when a comparison's
    # interval lies within 1 +- margin (stats.verdict)
    margin: float = stats.MARGIN
    # the seed of the flavors' order in each repetition (measure.orders);
    # None: the run's start time
    order_seed: int = None
    warnings: list = field(default_factory=list)  # what the command line prints

    # Whether running it needs root, daemons, a registry and test hosts.
    needs_hosts = True


def top_level_keys():
    """Every key a suite file may have at its top level, whatever its kind."""
    return tuple(dict.fromkeys(COMMON_KEYS + DAEMON_KEYS + tuple(k for m in kinds.every() for k in m.KEYS)))


def daemon_keys():
    """The top-level keys of the suites that run daemons, but for the
    switches (a key any suite may have when it is off, such as warmup = 0)."""
    return DAEMON_KEYS + tuple(k for m in kinds.every() if m.Suite.needs_hosts
                               for k in m.KEYS if k not in m.SWITCHES)


class _Lines:
    """Where each key of a TOML file is, so that errors can name the line."""

    def __init__(self, text):
        self.where = {}
        table, counts = (), {}
        for no, line in enumerate(text.splitlines(), 1):
            s = line.strip()
            m = re.match(r"^\[\[\s*([^\]]+?)\s*\]\]", s)
            if m:
                name = m.group(1)
                counts[name] = counts.get(name, -1) + 1
                table = (name, counts[name])
                self.where.setdefault(table, no)
                continue
            m = re.match(r"^\[\s*([^\]]+?)\s*\]", s)
            if m:
                table = tuple(p.strip().strip('"') for p in m.group(1).split("."))
                self.where.setdefault(table, no)
                continue
            m = re.match(r'^("?)([A-Za-z0-9_.-]+)\1\s*=', s)
            if m:
                self.where.setdefault(table + (m.group(2),), no)

    def line(self, path):
        path = tuple(path)
        while path:
            if path in self.where:
                return self.where[path]
            path = path[:-1]
        return None


def load(path):
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise SuiteError(f"{path}: {e.strerror}") from None
    try:
        data = tomllib.loads(raw.decode())
    except tomllib.TOMLDecodeError as e:
        raise SuiteError(f"{path}: {e}") from None
    return Validator(path, raw.decode()).suite(data)


class Validator:
    """Checks a suite file's data; what it finds wrong is a SuiteError
    naming the file and line. The kinds' modules check their keys with its
    methods (fail, keys, typed, unit, ...)."""

    def __init__(self, path, text):
        self.path = path
        self.lines = _Lines(text)
        self.warnings = []

    def at(self, where, msg):
        no = self.lines.line(where)
        return f"{self.path}:{no}: {msg}" if no else f"{self.path}: {msg}"

    def fail(self, where, msg):
        raise SuiteError(self.at(where, msg))

    def warn(self, where, msg):
        self.warnings.append(self.at(where, msg))

    def keys(self, table, where, allowed, required=(), what=None):
        what = what or (f"[{'.'.join(map(str, where))}]" if where else "the top level")
        for k in table:
            if k not in allowed:
                self.fail(where + (k,), f"unknown key '{k}' in {what} (known: {', '.join(allowed)})")
        for k in required:
            if k not in table:
                self.fail(where, f"{what} needs '{k}'")

    def typed(self, value, typ, where, desc):
        if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
            self.fail(where, f"{where[-1]}: want {desc}, got {value!r}")
        return value

    def unit(self, fn, value, where):
        try:
            fn(value)
        except ValueError as e:
            self.fail(where, f"{where[-1]}: {e}")
        return value

    def suite(self, d):
        """The common keys; then the keys that belong to other kinds
        (kinds.<kind>.refuse), or to suites that run daemons; then the
        kind's own (kinds.<kind>.validate)."""
        self.keys(d, (), top_level_keys(), required=("name", "kind"))
        kind = d["kind"]
        if kind not in kinds.NAMES:
            self.fail(("kind",), f"kind: '{kind}' is not one of {', '.join(kinds.NAMES)}")
        k = kinds.get(kind)
        reps = self.typed(d.get("repetitions", k.REPETITIONS), int, ("repetitions",), "a positive integer")
        if reps < 1:
            self.fail(("repetitions",), "repetitions: want a positive integer")
        s = k.Suite(path=self.path, name=self.typed(d["name"], str, ("name",), "a string"), kind=kind,
                    repetitions=reps, description=d.get("description", ""))
        s.seed = self.typed(d.get("seed", {}), dict, ("seed",), "a table")
        if "margin" in d:
            m = d["margin"]
            if isinstance(m, bool) or not isinstance(m, (int, float)) or not 0 < m < 0.5:
                self.fail(("margin",), f"margin: want the equivalence margin as a fraction above 0 and below 0.5 "
                          f"(0.05: level within 0.95-1.05), got {m!r}")
            s.margin = float(m)
        s.link_backend = d.get("link_backend", "auto")
        if s.link_backend not in ("auto", "tun", "netem"):
            self.fail(("link_backend",), f"link_backend: '{s.link_backend}' is not auto, tun or netem")
        if not s.needs_hosts:
            for key in daemon_keys():
                if key in d:
                    self.fail(self.first(d, key), f"{key} belongs to suites that run daemons, not {kind}")
        s.sample_timeout = self.seconds(d, (), "sample_timeout", SAMPLE_TIMEOUT, 1.0)
        if "order_seed" in d:
            s.order_seed = self.typed(d["order_seed"], int, ("order_seed",), "an integer >= 0")
            if s.order_seed < 0:
                self.fail(("order_seed",), f"order_seed: want an integer >= 0, got {s.order_seed}")
        for other in kinds.every():
            if other is not k:
                other.refuse(self, d, kind)
        if s.needs_hosts:
            s.flavors = self.flavors(d.get("flavor"), k)
            if not k.SCANS:
                # A list would be a scan; only some kinds run one variant
                # after another, the others would run its first value alone.
                for name, fl in s.flavors.items():
                    if isinstance(fl.daemon, list):
                        self.fail(("flavor", name, "daemon"), f"daemon: a list of settings is a scan, and {kind} "
                                  "suites do not scan (only pull suites do); give one table")
                    for key, v in fl.daemon.items():
                        if isinstance(v, list):
                            self.fail(("flavor", name, "daemon"),
                                      f"daemon.{key}: a list is a scan, and {kind} suites do not scan "
                                      f"(only pull suites do); give one value")
        k.validate(self, d, s)
        if s.needs_hosts and len(s.flavors) > 1 and reps < stats.MIN_PAIRS:
            # it runs, and measures; its summary can only say "inconclusive (too few pairs)"
            key = f"repetitions = {reps}" if "repetitions" in d else \
                f"repetitions (the {kind} kind's default, {reps})"
            self.warn(("repetitions",), f"suite '{s.name}': {key} is below {stats.MIN_PAIRS}, the pairs a verdict "
                      "needs (stats.MIN_PAIRS): every comparison will read \"inconclusive (too few pairs)\"")
        s.warnings = list(self.warnings)
        return s

    def first(self, d, k):
        """Where key k of the top level is: itself, or its first table."""
        v = d[k]
        if isinstance(v, list) and v and isinstance(v[0], dict):
            return (k, 0)
        if self.lines.line((k,)) is None and isinstance(v, dict) and v:
            return (k, next(iter(v)))
        return (k,)

    def positive(self, t, w, k, default, desc="a positive integer"):
        v = self.typed(t.get(k, default), int, w + (k,), desc)
        if v < 1:
            self.fail(w + (k,), f"{k}: want {desc}, got {v}")
        return v

    def seconds(self, t, w, k, default, minimum):
        if k not in t:
            return default
        v = units.duration(self.unit(units.duration, self.typed(t[k], str, w + (k,), "a duration"), w + (k,)))
        if v < minimum:
            self.fail(w + (k,), f"{k}: want at least {minimum:g}s, got {t[k]}")
        return v

    def tables(self, d, name):
        v = d.get(name)
        if not v:
            self.fail(("kind",), f"a {d['kind']} suite needs at least one [[{name}]]")
        if not isinstance(v, list):
            self.fail((name,), f"{name}: want [[{name}]] tables")
        return v

    def unique(self, items, what):
        seen = set()
        for i, x in enumerate(items):
            if x.name in seen:
                self.fail((what, i, "name"), f"two [[{what}]] tables are named '{x.name}'")
            seen.add(x.name)

    def flavors(self, f, kind):
        """The [flavor.<name>] tables: each checked by its system
        (ab.systems), which must list the kind (KINDS)."""
        w = ("flavor",)
        if not isinstance(f, dict) or not f:
            self.fail(("kind",), "the suite needs [flavor.stock] and/or [flavor.patched]")
        self.keys(f, w, FLAVORS, what="[flavor]")
        out = {}
        for name, t in f.items():
            fw = ("flavor", name)
            self.typed(t, dict, fw, "a table")
            sysname = systems.name_of(name)
            sysm = systems.get(sysname)
            if kind.name not in sysm.KINDS:
                self.fail(fw, f"[flavor.{name}]: {kind.name} suites "
                              f"measure {', '.join(kind.systems())}, not {sysname}")
            self.keys(t, fw, sysm.TABLE_KEYS, what=f"[flavor.{name}]")
            daemon = sysm.validate(self, fw, t, name)
            if isinstance(daemon, list):
                if not daemon:
                    self.fail(fw + ("daemon",), "daemon: an empty list scans nothing")
                for x in daemon:
                    if any(isinstance(v, list) for v in x.values()):
                        self.fail(fw + ("daemon",), "daemon: a list of tables gives each setting once; "
                                  "a table in it has a list")
            else:
                for k, v in daemon.items():
                    if isinstance(v, list) and not v:
                        self.fail(fw + ("daemon",), f"daemon.{k}: an empty list scans nothing")
            binary = sysm.binary_of(self, fw, t.get("binary")) if "binary" in sysm.TABLE_KEYS else None
            out[name] = Flavor(name, daemon, binary, sysname)
        return out


def resolve(name_or_path, root):
    """A suite name (hyperfine-suites/NAME.toml) or a path."""
    if os.path.isfile(name_or_path):
        return name_or_path
    cand = os.path.join(root, "hyperfine-suites", name_or_path + ".toml")
    if os.path.exists(cand):
        return cand
    raise SuiteError(f"no suite '{name_or_path}' (neither a file nor hyperfine-suites/{name_or_path}.toml)")
