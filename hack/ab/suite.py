"""Suite files (TOML) -> a validated Suite. Nothing runs before the whole file
is known to be good; every error names the file and line."""
import itertools
import os
import re
import tomllib
from dataclasses import dataclass, field

from . import units, zns

# A [[container]]'s name names its containers (abcp-<name>), so it is a
# container name's tail.
CONTAINER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*")
# The result entry of a "together" group as a whole: from the requests to the
# last checkpoint done. No [[container]] can have this name.
BATCH = "(batch)"

KINDS = ("pull", "checkpoint", "overhead", "cpuquota", "zns")
HOSTLESS = ("zns",)  # kinds that replay a model and start no daemons
ZNS_KEYS = ("trace", "geometry", "policies", "placement")
FLAVOURS = ("stock", "patched")
SCENARIOS = ("alone", "together", "incremental")
WORKLOADS = ("run", "cpu", "http", "files", "pingpong")
# Where the overhead suites put a server and its client (http, pingpong):
# native processes in the flavour's test host, containers on the bridge
# network (reached at their address), containers on the host network, and
# (http) a bridge container behind a published port, reached at 127.0.0.1 as
# seed 004's -p 3000:3000 was.
NETWORKS = ("native", "bridge", "published", "host")
HTTP_SERVERS = {  # server -> (endpoints it answers, port)
    "node": (("/network", "/disk-io", "/cpu"), 3000),  # seed 004's app (hack/testimages/node/app.js)
    "nginx": (("/1k.txt", "/100k.txt", "/index.html"), 80),  # static files
}
# wrk connections per endpoint when the suite does not say: seed 004's script
# (-c400 for /network and /disk-io, -c4 for /cpu); 32 for nginx's files.
HTTP_CONNECTIONS = {"/network": 400, "/disk-io": 400, "/cpu": 4}
READ_MODES = ("sequential", "async", "workers")  # cpuquota: hack/testimages/node/readfiles.js
CPUQUOTA_KEYS = ("cpus", "modes", "workers", "files", "file_size")


class SuiteError(Exception):
    pass


@dataclass
class Profile:
    name: str
    rtt: str = "0ms"
    rate: str = ""
    loss: str = "0%"
    jitter: str = "0ms"
    queue: int = 1000


@dataclass
class Image:
    name: str
    layers: list  # sizes in bytes

    @property
    def total(self):
        return sum(self.layers)


@dataclass
class Container:
    name: str
    memory: int = 0  # bytes held by a memory holder
    image: str = ""  # or a real application image
    command: list = field(default_factory=list)


@dataclass
class HTTP:
    """overhead http: wrk against a server in each network placement."""
    server: str = "node"
    networks: list = field(default_factory=lambda: ["native", "bridge", "host"])
    endpoints: list = field(default_factory=list)
    duration_s: float = 5.0
    warmup_s: float = 1.0  # an untimed wrk run first (the server's JIT, connection set-up)
    threads: int = 2
    connections: dict = field(default_factory=dict)  # endpoint -> wrk connections

    @property
    def port(self):
        return HTTP_SERVERS[self.server][1]


@dataclass
class PingPong:
    """overhead pingpong: TCP round trips of a small message (hack/testimages/pingpong)."""
    networks: list = field(default_factory=lambda: ["native", "bridge", "host"])
    round_trips: int = 10000
    warmup: int = 500
    size: int = 64
    # split: server on the first CPU, client on the last (two cores, as two
    # MPI ranks are bound); same: both on the first; none: the scheduler's
    # choice, which flips between runs (same CPU ~7 us here, two CPUs ~16 us)
    pin: str = "split"

    def cpus(self, ncpu):
        """(server's CPU, client's CPU) as taskset and --cpuset-cpus take them, or (None, None)."""
        if self.pin == "none":
            return None, None
        return "0", str(max(0, ncpu - 1) if self.pin == "split" else 0)


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
class Flavour:
    name: str
    daemon: dict  # key -> value or list (a scan)

    def variants(self):
        """Every daemon config of the scan: the cartesian product of lists."""
        keys = sorted(self.daemon)
        values = [v if isinstance(v, list) else [v] for v in (self.daemon[k] for k in keys)]
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)] or [{}]


@dataclass
class Suite:
    path: str
    name: str
    kind: str
    repetitions: int
    description: str = ""
    profiles: list = field(default_factory=list)
    images: list = field(default_factory=list)
    containers: list = field(default_factory=list)
    scenarios: list = field(default_factory=list)
    workloads: list = field(default_factory=list)
    http: HTTP = None  # overhead: the http workload's server, placements and wrk
    pingpong: PingPong = None  # overhead: the pingpong workload
    cpuquota: CPUQuota = None
    flavours: dict = field(default_factory=dict)
    leave_running: bool = False
    restore: bool = False
    link_backend: str = "auto"
    seed: dict = field(default_factory=dict)  # published numbers, for the report
    warmup: int = 0  # pull: untimed pulls per variant before each cell's repetitions
    floor: bool = False  # checkpoint: also time runc checkpoint --image-path + fsync
    # zns: a trace (a CSV file, or the generator's parameters) replayed on a
    # model of a zoned device under each placement policy
    trace_file: str = ""
    trace: zns.TraceParams = None
    geometries: list = field(default_factory=list)  # [zns.Geometry]: one, or a scan of zone sizes
    geometry: zns.Geometry = None  # the one, or the scan's whose time series the report plots
    policies: list = field(default_factory=list)
    chunk: int = zns.MiB
    gc_reserve: int = 2

    @property
    def needs_hosts(self):
        """Whether running it needs root, daemons, a registry and test hosts."""
        return self.kind not in HOSTLESS


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
    return _Validator(path, raw.decode()).suite(data)


class _Validator:
    def __init__(self, path, text):
        self.path = path
        self.lines = _Lines(text)

    def fail(self, where, msg):
        no = self.lines.line(where)
        raise SuiteError(f"{self.path}:{no}: {msg}" if no else f"{self.path}: {msg}")

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
        top = ("name", "kind", "repetitions", "description", "profile", "image", "flavor",
               "scenarios", "container", "workloads", "leave_running", "restore", "link_backend", "seed", "warmup", "floor",
               "trace", "geometry", "policies", "placement", "http", "pingpong") + CPUQUOTA_KEYS
        self.keys(d, (), top, required=("name", "kind"))
        kind = d["kind"]
        if kind not in KINDS:
            self.fail(("kind",), f"kind: '{kind}' is not one of {', '.join(KINDS)}")
        reps = self.typed(d.get("repetitions", 1 if kind == "zns" else 3), int, ("repetitions",), "a positive integer")
        if reps < 1:
            self.fail(("repetitions",), "repetitions: want a positive integer")
        if kind == "zns" and reps != 1:
            self.fail(("repetitions",), "repetitions: a replay is deterministic, want 1")
        s = Suite(path=self.path, name=self.typed(d["name"], str, ("name",), "a string"), kind=kind,
                  repetitions=reps, description=d.get("description", ""))
        s.seed = self.typed(d.get("seed", {}), dict, ("seed",), "a table")
        s.warmup = self.typed(d.get("warmup", 0), int, ("warmup",), "an integer >= 0")
        if s.warmup < 0:
            self.fail(("warmup",), "warmup: want an integer >= 0")
        if d.get("floor") and kind != "checkpoint":
            self.fail(("floor",), "floor: only checkpoint suites have the runc floor")
        if s.warmup and kind != "pull":
            self.fail(("warmup",), "warmup: only pull suites have warm-up pulls")
        s.link_backend = d.get("link_backend", "auto")
        if s.link_backend not in ("auto", "tun", "netem"):
            self.fail(("link_backend",), f"link_backend: '{s.link_backend}' is not auto, tun or netem")
        if kind == "zns":
            self.zns(d, s)
            return s
        for k in ZNS_KEYS:
            if k in d:
                self.fail(self.first(d, k), f"{k} belongs to zns suites, not {kind}")
        s.flavours = self.flavours(d.get("flavor"))
        if kind == "pull":
            s.profiles = [self.profile(p, i) for i, p in enumerate(self.tables(d, "profile"))]
            s.images = [self.image(p, i) for i, p in enumerate(self.tables(d, "image"))]
            self.unique(s.profiles, "profile")
            self.unique(s.images, "image")
        elif kind == "checkpoint":
            sc = self.typed(d.get("scenarios", ["alone"]), list, ("scenarios",), "a list")
            for x in sc:
                if x not in SCENARIOS:
                    self.fail(("scenarios",), f"scenarios: '{x}' is not one of {', '.join(SCENARIOS)}")
            s.scenarios = sc
            s.containers = [self.container(c, i) for i, c in enumerate(self.tables(d, "container"))]
            self.unique(s.containers, "container")
            s.leave_running = self.typed(d.get("leave_running", False), bool, ("leave_running",), "true or false")
            s.restore = self.typed(d.get("restore", False), bool, ("restore",), "true or false")
            s.floor = self.typed(d.get("floor", False), bool, ("floor",), "true or false")
        elif kind == "overhead":
            wl = self.typed(d.get("workloads", list(WORKLOADS)), list, ("workloads",), "a list")
            for x in wl:
                if x not in WORKLOADS:
                    self.fail(("workloads",), f"workloads: '{x}' is not one of {', '.join(WORKLOADS)}")
            s.workloads = wl
            for k in ("http", "pingpong"):
                if k in d and k not in wl:
                    self.fail(self.first(d, k), f"[{k}] configures the {k} workload, which workloads does not list")
            if "http" in wl:
                s.http = self.http(self.typed(d.get("http", {}), dict, ("http",), "an [http] table"))
            if "pingpong" in wl:
                s.pingpong = self.pingpong(self.typed(d.get("pingpong", {}), dict, ("pingpong",),
                                                      "a [pingpong] table"))
        elif kind == "cpuquota":
            s.cpuquota = self.cpuquota(d)
        if kind != "overhead":
            for k in ("workloads", "http", "pingpong"):
                if k in d:
                    self.fail(self.first(d, k), f"{k} belongs to overhead suites, not {kind}")
        if kind != "cpuquota":
            for k in CPUQUOTA_KEYS:
                if k in d:
                    self.fail(self.first(d, k), f"{k} belongs to cpuquota suites, not {kind}")
        for k in ("profile", "image") if kind != "pull" else ():
            if k in d:
                self.fail((k, 0), f"[[{k}]] belongs to pull suites, not {kind}")
        for k in ("container", "scenarios") if kind != "checkpoint" else ():
            if k in d:
                self.fail((k,) if k == "scenarios" else (k, 0), f"{k} belongs to checkpoint suites, not {kind}")
        return s

    def first(self, d, k):
        """Where key k of the top level is: itself, or its first table."""
        v = d[k]
        if isinstance(v, list) and v and isinstance(v[0], dict):
            return (k, 0)
        if self.lines.line((k,)) is None and isinstance(v, dict) and v:
            return (k, next(iter(v)))
        return (k,)

    # --- overhead: http, pingpong -------------------------------------------
    def networks(self, t, w, allowed, default):
        v = self.typed(t.get("networks", list(default)), list, w + ("networks",), "a list")
        if not v:
            self.fail(w + ("networks",), "networks: want at least one")
        for x in v:
            if x not in allowed:
                self.fail(w + ("networks",), f"networks: '{x}' is not one of {', '.join(allowed)}")
        if len(set(v)) != len(v):
            self.fail(w + ("networks",), "networks: a placement is listed twice")
        return v

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

    def http(self, t):
        """[http]: server (node: seed 004's app; nginx: static files), networks,
        endpoints, and wrk's duration, warmup, threads and connections (a
        number for every endpoint, or a table endpoint -> number)."""
        w = ("http",)
        self.keys(t, w, ("server", "networks", "endpoints", "duration", "warmup", "threads", "connections"))
        h = HTTP()
        h.server = self.typed(t.get("server", h.server), str, w + ("server",), "a server name")
        if h.server not in HTTP_SERVERS:
            self.fail(w + ("server",), f"server: '{h.server}' is not one of {', '.join(HTTP_SERVERS)}")
        h.networks = self.networks(t, w, NETWORKS, h.networks)
        if h.server == "nginx" and "native" in h.networks:
            self.fail(w + ("networks",), "networks: 'native' needs server = \"node\" (the host runs the same "
                                         "Node.js natively; nginx exists only in its image)")
        known = HTTP_SERVERS[h.server][0]
        h.endpoints = self.typed(t.get("endpoints", list(known if h.server == "node" else known[:1])), list,
                                 w + ("endpoints",), "a list of paths")
        if not h.endpoints:
            self.fail(w + ("endpoints",), "endpoints: want at least one")
        for e in h.endpoints:
            if e not in known:
                self.fail(w + ("endpoints",), f"endpoints: the {h.server} server has no '{e}' "
                                              f"(it answers {', '.join(known)})")
        if len(set(h.endpoints)) != len(h.endpoints):
            self.fail(w + ("endpoints",), "endpoints: an endpoint is listed twice")
        h.duration_s = self.seconds(t, w, "duration", h.duration_s, 1)
        h.warmup_s = self.seconds(t, w, "warmup", h.warmup_s, 0)
        h.threads = self.positive(t, w, "threads", h.threads)
        c = t.get("connections")
        default = {e: HTTP_CONNECTIONS.get(e, 32) for e in h.endpoints}
        if c is None:
            h.connections = default
        elif isinstance(c, dict):
            for e in c:
                if e not in h.endpoints:
                    self.fail(w + ("connections",), f"connections: '{e}' is not one of the endpoints "
                                                    f"({', '.join(h.endpoints)})")
            h.connections = {e: self.positive(c, w + ("connections",), e, default[e], "a number of connections")
                             for e in h.endpoints}
        else:
            n = self.positive(t, w, "connections", 0, "a number of connections, or a table endpoint -> number")
            h.connections = {e: n for e in h.endpoints}
        for e, n in h.connections.items():
            if n < h.threads:
                self.fail(w + ("connections",), f"connections: {n} for {e} is fewer than the {h.threads} threads "
                                                f"(wrk needs a connection per thread)")
        return h

    def pingpong(self, t):
        w = ("pingpong",)
        self.keys(t, w, ("networks", "round_trips", "warmup", "size", "pin"))
        p = PingPong()
        p.networks = self.networks(t, w, tuple(x for x in NETWORKS if x != "published"), p.networks)
        p.round_trips = self.positive(t, w, "round_trips", p.round_trips)
        p.warmup = self.typed(t.get("warmup", p.warmup), int, w + ("warmup",), "an integer >= 0")
        if p.warmup < 0:
            self.fail(w + ("warmup",), f"warmup: want an integer >= 0, got {p.warmup}")
        if "size" in t:
            p.size = units.size(self.unit(units.size, self.typed(t["size"], str, w + ("size",), "a size"),
                                          w + ("size",)))
            if not 1 <= p.size <= 1 << 20:
                self.fail(w + ("size",), f"size: want 1B to 1MiB, got {t['size']}")
        p.pin = self.typed(t.get("pin", p.pin), str, w + ("pin",), "split, same or none")
        if p.pin not in ("split", "same", "none"):
            self.fail(w + ("pin",), f"pin: '{p.pin}' is not one of split, same, none")
        return p

    # --- cpuquota -----------------------------------------------------------
    def cpuquota(self, d):
        """Seed 003: cpus (a list of CPU limits, "unlimited" for none), modes
        (sequential, async, workers), workers (the worker counts of mode
        workers), files and file_size (the directory read)."""
        q = CPUQuota()
        ncpu = os.cpu_count() or 1
        cpus = self.typed(d.get("cpus", ["unlimited", 0.6]), list, ("cpus",), 'a list of CPU limits ("unlimited" or a number)')
        if not cpus:
            self.fail(("cpus",), "cpus: want at least one CPU limit")
        q.cpus = []
        for c in cpus:
            if c == "unlimited":
                v = None
            elif isinstance(c, (int, float)) and not isinstance(c, bool):
                if not 0.01 <= c <= ncpu:
                    self.fail(("cpus",), f"cpus: {c} is outside 0.01 to {ncpu} (this machine's CPUs; "
                                         f'"unlimited" for no limit)')
                v = float(c)
            else:
                self.fail(("cpus",), f'cpus: want "unlimited" or a number of CPUs like 0.6, got {c!r}')
            if v in q.cpus:
                self.fail(("cpus",), f"cpus: {cpus_label(v)} is listed twice")
            q.cpus.append(v)
        q.modes = self.typed(d.get("modes", q.modes), list, ("modes",), "a list")
        if not q.modes:
            self.fail(("modes",), "modes: want at least one")
        for m in q.modes:
            if m not in READ_MODES:
                self.fail(("modes",), f"modes: '{m}' is not one of {', '.join(READ_MODES)}")
        if len(set(q.modes)) != len(q.modes):
            self.fail(("modes",), "modes: a mode is listed twice")
        if "workers" in d and "workers" not in q.modes:
            self.fail(("workers",), "workers: worker counts need mode \"workers\" in modes")
        q.workers = self.typed(d.get("workers", q.workers), list, ("workers",), "a list of worker counts")
        if not q.workers:
            self.fail(("workers",), "workers: want at least one worker count")
        for n in q.workers:
            if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 64:
                self.fail(("workers",), f"workers: want worker counts from 1 to 64, got {n!r}")
        if len(set(q.workers)) != len(q.workers):
            self.fail(("workers",), "workers: a count is listed twice")
        q.files = self.typed(d.get("files", q.files), int, ("files",), "a number of files")
        if not 1 <= q.files <= 200000:
            self.fail(("files",), f"files: want 1 to 200000, got {q.files}")
        if "file_size" in d:
            q.file_size = units.size(self.unit(units.size, self.typed(d["file_size"], str, ("file_size",), "a size"),
                                               ("file_size",)))
            if not 1 <= q.file_size <= 16 << 20:
                self.fail(("file_size",), f"file_size: want 1B to 16MiB, got {d['file_size']}")
        return q

    # --- zns ------------------------------------------------------------
    def zns(self, d, s):
        """A replay on a model of the device: no daemons, so none of their keys."""
        for k in ("flavor", "profile", "image", "container", "scenarios", "workloads", "leave_running",
                  "restore", "link_backend", "http", "pingpong") + CPUQUOTA_KEYS:
            if k in d:
                self.fail(self.first(d, k), f"{k} belongs to suites that run daemons, not zns")
        pol = self.typed(d.get("policies", list(zns.POLICIES)), list, ("policies",), "a list")
        if not pol:
            self.fail(("policies",), "policies: want at least one")
        for x in pol:
            if x not in zns.POLICIES:
                self.fail(("policies",), f"policies: '{x}' is not one of {', '.join(zns.POLICIES)}")
        if len(set(pol)) != len(pol):
            self.fail(("policies",), "policies: a policy is listed twice")
        s.policies = pol
        self.geometry(self.typed(d.get("geometry", {}), dict, ("geometry",), "a [geometry] table"), s)
        self.placement(self.typed(d.get("placement", {}), dict, ("placement",), "a [placement] table"), s)
        t = d.get("trace", {})
        if isinstance(t, str):
            path = os.path.join(os.path.dirname(self.path), t)
            try:
                zns.read_trace(path)
            except zns.TraceError as e:
                self.fail(("trace",), f"trace: {e}")
            s.trace_file = path
        else:
            s.trace = self.trace(self.typed(t, dict, ("trace",), "a CSV file name or a [trace] table"))

    def geometry(self, t, s):
        """[geometry]: one device, or a scan of zone sizes (zone_size a list),
        each replayed with every policy. `namespace` instead of `zones` keeps
        the device's size across the scan (zones = namespace // zone_size);
        zone_capacity is the zone size when left out, and may be a fraction of
        it ("75%"), which then scales with the zone size."""
        w = ("geometry",)
        self.keys(t, w, ("zone_size", "zone_capacity", "zones", "namespace", "max_open", "max_active", "block",
                         "plot_zone_size"))
        d = zns.Geometry()
        size = lambda k, v: units.size(self.unit(units.size, self.typed(v, str, w + (k,), "a size"), w + (k,)))
        block = size("block", t["block"]) if "block" in t else d.block
        scan = isinstance(t.get("zone_size"), list)
        if scan:
            if not t["zone_size"]:
                self.fail(w + ("zone_size",), "zone_size: an empty list scans nothing")
            sizes = [size("zone_size", x) for x in t["zone_size"]]
            if len(set(sizes)) != len(sizes):
                self.fail(w + ("zone_size",), "zone_size: a size is listed twice")
        elif "zone_size" in t:
            self.typed(t["zone_size"], str, w + ("zone_size",), "a size or a list of sizes (a scan)")
            sizes = [size("zone_size", t["zone_size"])]
        else:
            sizes = [d.zone_size]
        where_of = {}  # the key a geometry's problem is reported at, when not its own
        if "zone_capacity" not in t:
            capacity = lambda z: d.zone_capacity if "zone_size" not in t else z
        else:
            k = "zone_capacity"
            v = self.typed(t[k], str, w + (k,), 'a size, or a fraction of the zone size like "75%"')
            if v.endswith("%"):
                frac = units.percent(self.unit(units.percent, v, w + (k,)))
                if frac <= 0:
                    self.fail(w + (k,), f"{k}: want a fraction above 0% of the zone size, got {v!r}")
                capacity = lambda z: int(z * frac) // block * block  # whole blocks
            else:
                c = size(k, v)
                if scan and c > min(sizes):
                    self.fail(w + (k,), f"{k}: {units.human_size(c)} exceeds the scan's zone size "
                                        f"{units.human_size(min(sizes))}; give the capacity of every zone size as a "
                                        f'fraction of it (e.g. "75%")')
                capacity = lambda z: c
        if "zones" in t and "namespace" in t:
            self.fail(w + ("namespace",), "namespace: give zones or namespace, not both "
                                          "(zones = namespace / zone size)")
        if "namespace" in t:
            ns = size("namespace", t["namespace"])
            for z in sizes:
                if ns < z:
                    self.fail(w + ("namespace",), f"namespace: {units.human_size(ns)} holds no zone of "
                                                  f"{units.human_size(z)}")
            zones = lambda z: ns // z
            where_of["zones"] = "namespace"
        elif "zones" in t:
            n = self.typed(t["zones"], int, w + ("zones",), "a number of zones")
            zones = lambda z: n
        elif scan:
            self.fail(w + ("zone_size",), "zone_size: a scan of zone sizes needs namespace (the same device in "
                                          "zones of each size) or zones")
        else:
            zones = lambda z: d.zones
        limits = {k: self.typed(t[k], int, w + (k,), "a number of zones") if k in t else getattr(d, k)
                  for k in ("max_open", "max_active")}
        s.geometries = []
        for z in sizes:
            g = zns.Geometry(zone_size=z, zone_capacity=capacity(z), zones=zones(z), block=block, **limits)
            for k, msg in g.problems():
                where = where_of.get(k, k)
                self.fail(w + (where,), f"{where}: {msg}" + (f" (zone size {units.human_size(z)})" if scan else ""))
            s.geometries.append(g)
        if "plot_zone_size" in t:
            p = size("plot_zone_size", t["plot_zone_size"])
            if p not in sizes:
                self.fail(w + ("plot_zone_size",), f"plot_zone_size: {t['plot_zone_size']} is not a zone size of "
                                                   f"the geometry ({', '.join(map(units.human_size, sizes))})")
        else:
            p = max(sizes)
        s.geometry = s.geometries[sizes.index(p)]

    def placement(self, t, s):
        w = ("placement",)
        self.keys(t, w, ("chunk", "gc_reserve"))
        if "chunk" in t:
            s.chunk = units.size(self.unit(units.size, self.typed(t["chunk"], str, w + ("chunk",), "a size"),
                                           w + ("chunk",)))
        s.gc_reserve = self.typed(t.get("gc_reserve", s.gc_reserve), int, w + ("gc_reserve",), "a number of zones")
        for g in s.geometries:
            for k, msg in zns.placement_problems(g, s.chunk, s.gc_reserve):
                scan = f" (zone size {units.human_size(g.zone_size)})" if len(s.geometries) > 1 else ""
                self.fail(w + (k,), f"{k}: {msg}{scan}")

    def trace(self, t):
        """The generator's parameters; the defaults are TraceParams'."""
        w = ("trace",)
        self.keys(t, w, ("containers", "interval", "rounds", "keep", "jitter", "skip", "overhead", "rng_seed"),
                  what="[trace] (or trace = \"file.csv\")")
        p = zns.TraceParams()
        if "containers" in t:
            cs = self.typed(t["containers"], list, w + ("containers",), "a list of memory sizes")
            if not cs:
                self.fail(w + ("containers",), "containers: want at least one")
            for c in cs:
                self.unit(units.size, self.typed(c, str, w + ("containers",), "a memory size"), w + ("containers",))
            if len(set(cs)) != len(cs):
                self.fail(w + ("containers",), "containers: a size is listed twice (it names the container)")
            p.containers = cs
        if "interval" in t:
            p.interval_s = units.duration(self.unit(units.duration, self.typed(t["interval"], str, w + ("interval",),
                                                                              "a duration"), w + ("interval",)))
        for k in ("rounds", "keep", "rng_seed"):
            if k in t:
                setattr(p, k, self.typed(t[k], int, w + (k,), "an integer"))
        for k in ("rounds", "keep"):
            if getattr(p, k) < 1:
                self.fail(w + (k,), f"{k}: want an integer >= 1")
        for k in ("jitter", "skip"):
            if k in t:
                v = units.percent(self.unit(units.percent, self.typed(t[k], str, w + (k,), "a percentage"), w + (k,)))
                if v >= 1:
                    self.fail(w + (k,), f"{k}: want less than 100%")
                setattr(p, k, v)
        if "overhead" in t:
            p.overhead = units.size(self.unit(units.size, self.typed(t["overhead"], str, w + ("overhead",), "a size"),
                                              w + ("overhead",)))
        return p

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

    def profile(self, p, i):
        w = ("profile", i)
        self.keys(p, w, ("name", "rtt", "rate", "loss", "jitter", "queue"), ("name",), "[[profile]]")
        prof = Profile(name=self.typed(p["name"], str, w + ("name",), "a string"))
        for k, fn in (("rtt", units.duration), ("rate", units.rate), ("loss", units.percent), ("jitter", units.duration)):
            if k in p:
                setattr(prof, k, self.unit(fn, self.typed(p[k], str, w + (k,), "a string"), w + (k,)))
        if "queue" in p:
            prof.queue = self.typed(p["queue"], int, w + ("queue",), "packets, a non-negative integer")
        return prof

    def image(self, p, i):
        w = ("image", i)
        self.keys(p, w, ("name", "layers"), ("name", "layers"), "[[image]]")
        layers = self.typed(p["layers"], list, w + ("layers",), "a list of sizes")
        if not layers:
            self.fail(w + ("layers",), "layers: want at least one layer")
        sizes = [units.size(self.unit(units.size, x, w + ("layers",))) for x in layers]
        return Image(name=self.typed(p["name"], str, w + ("name",), "a string"), layers=sizes)

    def container(self, c, i):
        w = ("container", i)
        self.keys(c, w, ("name", "memory", "image", "command"), ("name",), "[[container]]")
        ct = Container(name=self.typed(c["name"], str, w + ("name",), "a string"))
        if not CONTAINER_NAME.fullmatch(ct.name):
            self.fail(w + ("name",), f"{ct.name!r} cannot be part of a container name "
                      "(letters, digits, '_', '.', '-'; a letter or digit first)")
        if ("memory" in c) == ("image" in c):
            self.fail(w, "[[container]] needs exactly one of 'memory' (a memory holder) or 'image'")
        if "memory" in c:
            ct.memory = units.size(self.unit(units.size, c["memory"], w + ("memory",)))
        else:
            ct.image = self.typed(c["image"], str, w + ("image",), "an image name")
            ct.command = self.typed(c.get("command", []), list, w + ("command",), "a list")
        return ct

    def flavours(self, f):
        w = ("flavor",)
        if not isinstance(f, dict) or not f:
            self.fail(("kind",), "the suite needs [flavor.stock] and/or [flavor.patched]")
        self.keys(f, w, FLAVOURS, what="[flavor]")
        out = {}
        for name, t in f.items():
            fw = ("flavor", name)
            self.typed(t, dict, fw, "a table")
            self.keys(t, fw, ("daemon",), what=f"[flavor.{name}]")
            daemon = self.typed(t.get("daemon", {}), dict, fw + ("daemon",), "a table of daemon.json keys")
            for k, v in daemon.items():
                if isinstance(v, list) and not v:
                    self.fail(fw + ("daemon",), f"daemon.{k}: an empty list scans nothing")
            out[name] = Flavour(name, daemon)
        return out


def resolve(name_or_path, root):
    """A suite name (hyperfine-suites/NAME.toml) or a path."""
    if os.path.exists(name_or_path):
        return name_or_path
    cand = os.path.join(root, "hyperfine-suites", name_or_path + ".toml")
    if os.path.exists(cand):
        return cand
    raise SuiteError(f"no suite '{name_or_path}' (neither a file nor hyperfine-suites/{name_or_path}.toml)")
