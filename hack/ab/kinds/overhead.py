"""kind = "overhead": what running in a container costs against running
natively (seeds 002-004): container start, a CPU-bound hash, small files,
an HTTP server under wrk and TCP ping-pong, per network placement.

A cell is a workload and where it ran: scenario names the workload (run,
cpu, files, http, pingpong), container where (native or container; for
http and pingpong a placement of NETWORKS), image the image it ran in
(null natively); an http cell adds endpoint. http's samples are the
median latency (times_s) beside requests/s (rps), which the report
compares; pingpong's are the median round trip (p50_us)."""
from dataclasses import dataclass, field

from .. import suite, units

KEYS = ("workloads", "http", "pingpong")
SWITCHES = ()
REPETITIONS = 3
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
class Suite(suite.Suite):
    workloads: list = field(default_factory=list)
    http: HTTP = None  # the http workload's server, placements and wrk
    pingpong: PingPong = None


# --- the suite file ---------------------------------------------------------

def validate(v, d, s):
    wl = v.typed(d.get("workloads", list(WORKLOADS)), list, ("workloads",), "a list")
    for x in wl:
        if x not in WORKLOADS:
            v.fail(("workloads",), f"workloads: '{x}' is not one of {', '.join(WORKLOADS)}")
    s.workloads = wl
    for k in ("http", "pingpong"):
        if k in d and k not in wl:
            v.fail(v.first(d, k), f"[{k}] configures the {k} workload, which workloads does not list")
    if "http" in wl:
        s.http = http(v, v.typed(d.get("http", {}), dict, ("http",), "an [http] table"))
    if "pingpong" in wl:
        s.pingpong = pingpong(v, v.typed(d.get("pingpong", {}), dict, ("pingpong",), "a [pingpong] table"))


def refuse(v, d, kind):
    for k in KEYS:
        if k in d:
            v.fail(v.first(d, k), f"{k} belongs to overhead suites, not {kind}")


def networks(v, t, w, allowed, default):
    nets = v.typed(t.get("networks", list(default)), list, w + ("networks",), "a list")
    if not nets:
        v.fail(w + ("networks",), "networks: want at least one")
    for x in nets:
        if x not in allowed:
            v.fail(w + ("networks",), f"networks: '{x}' is not one of {', '.join(allowed)}")
    if len(set(nets)) != len(nets):
        v.fail(w + ("networks",), "networks: a placement is listed twice")
    return nets


def http(v, t):
    """[http]: server (node: seed 004's app; nginx: static files), networks,
    endpoints, and wrk's duration, warmup, threads and connections (a
    number for every endpoint, or a table endpoint -> number)."""
    w = ("http",)
    v.keys(t, w, ("server", "networks", "endpoints", "duration", "warmup", "threads", "connections"))
    h = HTTP()
    h.server = v.typed(t.get("server", h.server), str, w + ("server",), "a server name")
    if h.server not in HTTP_SERVERS:
        v.fail(w + ("server",), f"server: '{h.server}' is not one of {', '.join(HTTP_SERVERS)}")
    h.networks = networks(v, t, w, NETWORKS, h.networks)
    if h.server == "nginx" and "native" in h.networks:
        v.fail(w + ("networks",), "networks: 'native' needs server = \"node\" (the host runs the same "
                                  "Node.js natively; nginx exists only in its image)")
    known = HTTP_SERVERS[h.server][0]
    h.endpoints = v.typed(t.get("endpoints", list(known if h.server == "node" else known[:1])), list,
                          w + ("endpoints",), "a list of paths")
    if not h.endpoints:
        v.fail(w + ("endpoints",), "endpoints: want at least one")
    for e in h.endpoints:
        if e not in known:
            v.fail(w + ("endpoints",), f"endpoints: the {h.server} server has no '{e}' "
                                       f"(it answers {', '.join(known)})")
    if len(set(h.endpoints)) != len(h.endpoints):
        v.fail(w + ("endpoints",), "endpoints: an endpoint is listed twice")
    h.duration_s = v.seconds(t, w, "duration", h.duration_s, 1)
    h.warmup_s = v.seconds(t, w, "warmup", h.warmup_s, 0)
    h.threads = v.positive(t, w, "threads", h.threads)
    c = t.get("connections")
    default = {e: HTTP_CONNECTIONS.get(e, 32) for e in h.endpoints}
    if c is None:
        h.connections = default
    elif isinstance(c, dict):
        for e in c:
            if e not in h.endpoints:
                v.fail(w + ("connections",), f"connections: '{e}' is not one of the endpoints "
                                             f"({', '.join(h.endpoints)})")
        h.connections = {e: v.positive(c, w + ("connections",), e, default[e], "a number of connections")
                         for e in h.endpoints}
    else:
        n = v.positive(t, w, "connections", 0, "a number of connections, or a table endpoint -> number")
        h.connections = {e: n for e in h.endpoints}
    for e, n in h.connections.items():
        if n < h.threads:
            v.fail(w + ("connections",), f"connections: {n} for {e} is fewer than the {h.threads} threads "
                                         f"(wrk needs a connection per thread)")
    return h


def pingpong(v, t):
    w = ("pingpong",)
    v.keys(t, w, ("networks", "round_trips", "warmup", "size", "pin"))
    p = PingPong()
    p.networks = networks(v, t, w, tuple(x for x in NETWORKS if x != "published"), p.networks)
    p.round_trips = v.positive(t, w, "round_trips", p.round_trips)
    p.warmup = v.typed(t.get("warmup", p.warmup), int, w + ("warmup",), "an integer >= 0")
    if p.warmup < 0:
        v.fail(w + ("warmup",), f"warmup: want an integer >= 0, got {p.warmup}")
    if "size" in t:
        p.size = units.size(v.unit(units.size, v.typed(t["size"], str, w + ("size",), "a size"), w + ("size",)))
        if not 1 <= p.size <= 1 << 20:
            v.fail(w + ("size",), f"size: want 1B to 1MiB, got {t['size']}")
    p.pin = v.typed(t.get("pin", p.pin), str, w + ("pin",), "split, same or none")
    if p.pin not in ("split", "same", "none"):
        v.fail(w + ("pin",), f"pin: '{p.pin}' is not one of split, same, none")
    return p

