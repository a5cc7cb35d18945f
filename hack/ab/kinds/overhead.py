"""kind = "overhead": what running in a container costs against running
natively (seeds 002-004): container start, a CPU-bound hash, small files,
an HTTP server under wrk and TCP ping-pong, per network placement.

A cell is a workload and where it ran: scenario names the workload (run,
cpu, files, http, pingpong), container where (native or container; for
http and pingpong a placement of NETWORKS), image the image it ran in
(null natively); an http cell adds endpoint. http's samples are the
median latency (times_s) beside requests/s (rps), which the report
compares; pingpong's are the median round trip (p50_us).

A flavor's containers are its system's (ab.systems): docker's for stock
and patched, ch-run's for charliecloud, which runs cpu and pingpong (on
the host network: it has no other)."""
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field

from .. import hosts, suite, systems, units
from ..measure import Progress, hyperfine, parse_json_line, rotate
from ..results import Cell
from ..systems import dockerd
from . import Kind
from .overhead_report import NETWORKS, cell_name, compared, plots, sections

KEYS = ("workloads", "http", "pingpong")
KEY_FIELDS = ("endpoint",)  # besides scenario and container
SWITCHES = ()
REPETITIONS = 3
# what it measures (ab.systems); each system says which WORKLOADS it runs,
# and its containers' placements besides native (NETWORKS)
WORKLOADS = ("run", "cpu", "http", "files", "pingpong")
HTTP_SERVERS = {  # server -> (endpoints it answers, port)
    "node": (("/network", "/disk-io", "/cpu"), 3000),  # seed 004's app (hack/hosts/testimages/node/app.js)
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
    """overhead pingpong: TCP round trips of a small message (hack/hosts/testimages/pingpong)."""
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
    for name, fl in s.flavors.items():
        system = systems.get(fl.system)
        other = [x for x in wl if x not in system.WORKLOADS]
        if other:
            v.fail(("flavor", name), f"[flavor.{name}]: {fl.system} runs the workloads "
                                     f"{', '.join(system.WORKLOADS)}, not {', '.join(other)}")
        if s.pingpong and not placements(s.pingpong.networks, system):
            v.fail(("pingpong", "networks"), f"networks: none of them is a placement of [flavor.{name}] "
                                             f"({', '.join(('native',) + system.NETWORKS)})")


def placements(networks, system):
    """Of networks, those a flavor on system runs in: native, and its
    containers' (system.NETWORKS)."""
    return [n for n in networks if n == "native" or n in system.NETWORKS]


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


# --- the run ----------------------------------------------------------------

def images(s):
    """The images beyond busybox and memholder: the http server's, pingpong's."""
    return ([s.http.server] if s.http else []) + (["pingpong"] if s.pingpong else [])


def run(r):
    """Per repetition, each flavor in the repetition's order runs every
    workload."""
    s = r.s
    def steps(w, f):
        if w == "http":
            return len(s.http.networks) * len(s.http.endpoints)
        if w == "pingpong":
            return len(placements(s.pingpong.networks, systems.of(f)))
        return {"run": 1, "cpu": 2, "files": 2}[w]
    prog = Progress(sum(steps(w, f) for w in s.workloads for f in r.daemons) * s.repetitions)
    for rep in range(s.repetitions):
        for f in r.flavor_order(rep):
            d = r.daemons[f]
            for w in s.workloads:
                MEASURE[w](r, d, rep, prog)


def measure_run(r, d, rep, prog):
    t, err = hyperfine(r.tmp, d.env, "docker run --rm ab/busybox true", timeout=r.s.sample_timeout)
    r.results.add(Cell(d.flavor, image="ab/busybox", params=d.config, scenario="run", container="busybox true"),
                  t, err)
    prog.step(f"overhead run {d.flavor} rep {rep + 1}: {t:.3f}s" if t else f"overhead run FAILED {err}")


CPU = "head -c 300000000 /dev/zero | busybox sha256sum >/dev/null"


def measure_cpu(r, d, rep, prog):
    # The same busybox binary, natively in the test host and in a container.
    t, err = hyperfine(r.tmp, d.env, f"nsenter --net={d.netns()} busybox sh -c '{CPU}'",
                       timeout=r.s.sample_timeout)
    r.results.add(Cell(d.flavor, params=d.config, scenario="cpu", container="native"), t, err)
    prog.step(f"overhead cpu native ({d.flavor} host) rep {rep + 1}: {t:.2f}s" if t else "cpu native FAILED")
    # in a container: the system's (docker exec into a running one, ch-run)
    with systems.of(d.flavor).shell(d, "ab/busybox", "abov-cpu") as prefix:
        t, err = hyperfine(r.tmp, d.env, f"{prefix} sh -c '{CPU}'", timeout=r.s.sample_timeout)
    r.results.add(Cell(d.flavor, image="ab/busybox", params=d.config, scenario="cpu", container="container"),
                  t, err)
    prog.step(f"overhead cpu container {d.flavor} rep {rep + 1}: {t:.2f}s" if t else "cpu container FAILED")


# Small files (seeds 002, 003): one process writes 2000 files of 4 KiB,
# syncs, and reads them all back; one process each, so that the time is
# file operations, not process start-up.
FILES = ("mkdir -p {dir} && cd {dir} && "
         "busybox awk 'BEGIN {{ for (i = 0; i < 2000; i++) {{ f = \"f\" i; printf \"%4096s\", \"\" > f; close(f) }} }}' && "
         "sync && busybox cat f* >/dev/null && cd / && rm -rf {dir}")


def measure_files(r, d, rep, prog):
    # natively, on the disk that holds the daemon's data-root
    native_dir = os.path.join(d.vardir(), "abov-files")
    t, err = hyperfine(r.tmp, d.env, "busybox sh -c " + shlex.quote(FILES.format(dir=native_dir)),
                       timeout=r.s.sample_timeout)
    r.results.add(Cell(d.flavor, params=d.config, scenario="files", container="native"), t, err)
    prog.step(f"overhead files native ({d.flavor} host) rep {rep + 1}: {t:.2f}s" if t else f"files native FAILED {err}")
    # in a container: its writable layer (overlay on the same disk)
    name = "abov-files"
    d.docker("run", "-d", "--name", name, "ab/busybox", "sleep", "3600")
    try:
        t, err = hyperfine(r.tmp, d.env, f"docker exec {name} sh -c " + shlex.quote(FILES.format(dir="/work")),
                           timeout=r.s.sample_timeout)
    finally:
        d.docker("rm", "-f", name, check=False)
    r.results.add(Cell(d.flavor, image="ab/busybox", params=d.config, scenario="files", container="container"),
                  t, err)
    prog.step(f"overhead files container {d.flavor} rep {rep + 1}: {t:.2f}s" if t else f"files container FAILED {err}")


# --- servers in each network placement ---------------------------------------
# native: a process in the flavor's test host (its network namespace),
# the same program the containers run; bridge: a container on the
# default bridge, reached at its address; published: the same behind
# a published port, reached at 127.0.0.1 (seed 004's -p 3000:3000, through
# the daemon's port mapping); host: a container on the host network.

def native(r, d, argv, cwd=None):
    """Start argv in the flavor's test host; returns the Popen."""
    log = open(os.path.join(r.tmp, f"native-{os.path.basename(argv[0])}.log"), "w")
    try:
        # nsenter without --fork execs argv: the Popen's pid is the server's
        return subprocess.Popen(["nsenter", f"--net={d.netns()}", *argv], cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT)
    finally:
        log.close()


ip_of = dockerd.ip_of  # http's placements are docker's


def wait_http(d, url, proc=None, name=None, limit=20):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if hosts.sh("nsenter", f"--net={d.netns()}", "curl", "-fs", "-m", "5", "-o", "/dev/null", url,
                    check=False).returncode == 0:
            return
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.1)
    why = ""
    if name:
        why = d.docker("logs", "--tail", "5", name, check=False).stderr.strip()
    raise hosts.HostError(f"{url}: the server did not answer within {limit}s {why}".strip())


def http_dir(d):
    """The node server's directory on the data-root's disk: app.js, and
    testfile.txt of /disk-io (the seed mounted its home directory)."""
    path = os.path.join(d.vardir(), "abov-http")
    os.makedirs(path, exist_ok=True)
    shutil.copyfile(os.path.join(hosts.HOSTS, "testimages", "node", "app.js"), os.path.join(path, "app.js"))
    return path


def start_http(r, d, net):
    """Start the suite's server placed as net: (url base, Popen or None, container name or None)."""
    h = r.s.http
    name = f"abov-http-{net}"
    if h.server == "node":
        app = http_dir(d)
        if net == "native":
            return f"http://127.0.0.1:{h.port}", native(r, d, [hosts.node_binary(), "app.js"], cwd=app), None
        image = ["-v", f"{app}:/usr/src/app", "-w", "/usr/src/app", "ab/node", "node", "app.js"]
    else:
        image = ["ab/nginx"]
    net_args = {"bridge": [], "published": ["-p", f"{h.port}:{h.port}"], "host": ["--network", "host"]}[net]
    d.docker("run", "-d", "--name", name, *net_args, *image)
    ip = ip_of(d, name) if net == "bridge" else "127.0.0.1"
    return f"http://{ip}:{h.port}", None, name


def http_cell(r, d, net, ep):
    return Cell(d.flavor, image=f"ab/{r.s.http.server}", params=d.config, scenario="http", container=net,
                kind_fields={"endpoint": ep})


def measure_http(r, d, rep, prog):
    h = r.s.http
    for net in rotate(h.networks, rep):
        proc = name = None
        try:
            try:
                base, proc, name = start_http(r, d, net)
                wait_http(d, base + h.endpoints[0], proc, name)
            except hosts.HostError as e:
                # this placement's cells get the error; the suite goes on
                for ep in h.endpoints:
                    r.results.add(http_cell(r, d, net, ep), None, str(e)[:300])
                    prog.step(f"overhead http {ep} {net} {d.flavor} rep {rep + 1}: FAILED {str(e)[:200]}")
                continue
            for ep in h.endpoints:
                url = base + ep
                wrk = ["nsenter", f"--net={d.netns()}", "wrk", "-t", str(h.threads), "-c", str(h.connections[ep])]
                if h.warmup_s:
                    hosts.sh(*wrk, "-d", f"{h.warmup_s:g}s", url, check=False)
                p = hosts.sh(*wrk, "-d", f"{h.duration_s:g}s", "--latency", url, check=False,
                             timeout=r.s.sample_timeout + h.duration_s)
                w = parse_wrk(p.stdout or "")
                err = None
                if w.get("rps") is None:
                    err = (p.stderr or p.stdout or "wrk failed").strip()[-300:]
                elif w.get("errors"):
                    # socket errors or non-2xx answers: the rate is not of the
                    # requests asked for; out of the statistics, counted failed
                    err = f"wrk: {w['errors']}"
                if err:
                    w = {}
                r.results.add(http_cell(r, d, net, ep), w.get("p50_s"), err, rps=w.get("rps"),
                              latency_mean_s=w.get("mean_s"), latency_p99_s=w.get("p99_s"), requests=w.get("requests"))
                prog.step(f"overhead http {ep} {net} {d.flavor} rep {rep + 1}: "
                          + (f"{w['rps']:.0f} req/s, p50 {w['p50_s'] * 1e3:.2f} ms" if w.get("rps") is not None
                             else f"FAILED {err}"))
        finally:
            hosts.stop_process(proc)
            if name:
                d.docker("rm", "-f", name, check=False)


_WRK_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}


def parse_wrk(text):
    """wrk --latency output -> rps, requests, mean/p50/p99 latency (s) and the
    errors it reports (socket errors, non-2xx answers)."""
    out = {}
    m = re.search(r"Requests/sec:\s*([\d.]+)", text)
    out["rps"] = float(m.group(1)) if m else None
    m = re.search(r"^\s*(\d+) requests in", text, re.M)
    out["requests"] = int(m.group(1)) if m else None

    def secs(pat):
        m = re.search(pat, text, re.M)
        return round(float(m.group(1)) * _WRK_UNIT[m.group(2)], 9) if m else None
    out["mean_s"] = secs(r"^\s*Latency\s+([\d.]+)(us|ms|s|m)\b")
    out["p50_s"] = secs(r"^\s*50%\s+([\d.]+)(us|ms|s|m)\b")
    out["p99_s"] = secs(r"^\s*99%\s+([\d.]+)(us|ms|s|m)\b")
    errs = []
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m and any(int(x) for x in m.groups()):
        errs.append("socket errors: " + ", ".join(f"{k} {v}" for k, v in
                                                  zip(("connect", "read", "write", "timeout"), m.groups())))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        errs.append(f"{m.group(1)} non-2xx answers")
    out["errors"] = "; ".join(errs)
    return out


PINGPONG_PORT = 7000


def measure_pingpong(r, d, rep, prog):
    """Round trips of a small message between two processes: two native
    processes in the test host, two containers on the bridge, two on the
    host network (seed 002: MPI's messages over Docker's virtual network)."""
    pp = r.s.pingpong
    args = ["-n", str(pp.round_trips), "-warmup", str(pp.warmup), "-size", str(pp.size)]
    srv = ["pingpong", "server", "-listen", f":{PINGPONG_PORT}", "-size", str(pp.size)]
    scpu, ccpu = pp.cpus(os.cpu_count() or 1)
    taskset = lambda cpu: ["taskset", "-c", cpu] if cpu is not None else []
    system = systems.of(d.flavor)
    # the placements the flavor's system has (charliecloud: the host network)
    for net in rotate(placements(pp.networks, system), rep):
        proc = None
        try:
            if net == "native":
                proc = native(r, d, taskset(scpu) + [hosts.pingpong_binary()] + srv[1:])
                p = hosts.sh("nsenter", f"--net={d.netns()}", *taskset(ccpu), hosts.pingpong_binary(), "client",
                             "-connect", f"127.0.0.1:{PINGPONG_PORT}", *args, check=False,
                             timeout=r.s.sample_timeout)
            else:
                p = system.pingpong(d, f"abov-pp-{net}", "ab/pingpong", net, srv,
                                    lambda ip: ["pingpong", "client", "-connect", f"{ip}:{PINGPONG_PORT}", *args],
                                    (scpu, ccpu), os.path.join(r.tmp, f"pingpong-{net}-server.log"),
                                    timeout=r.s.sample_timeout)
            res, err = parse_json_line(p.stdout), None
            if res is None:
                err = ((p.stderr or "").strip().splitlines() or ["pingpong failed"])[-1][:300]
            cell = Cell(d.flavor, image=None if net == "native" else "ab/pingpong", params=d.config,
                        scenario="pingpong", container=net)
            res = res or {}
            r.results.add(cell, res["p50_us"] / 1e6 if res else None, err, mean_us=res.get("mean_us"),
                          p50_us=res.get("p50_us"), p99_us=res.get("p99_us"), round_trips=res.get("round_trips"),
                          cpus=f"{scpu},{ccpu}" if scpu is not None else None)
            prog.step(f"overhead pingpong {net} {d.flavor} rep {rep + 1}: "
                      + (f"p50 {res['p50_us']:.1f} us, mean {res['mean_us']:.1f} us, p99 {res['p99_us']:.1f} us"
                         if res else f"FAILED {err}"))
        finally:
            hosts.stop_process(proc)


MEASURE = {"run": measure_run, "cpu": measure_cpu, "files": measure_files, "http": measure_http,
           "pingpong": measure_pingpong}


# --- the report -------------------------------------------------------------


KIND = Kind(name="overhead", KEYS=KEYS, SWITCHES=SWITCHES, REPETITIONS=REPETITIONS,
            Suite=Suite, validate=validate, refuse=refuse, run=run, KEY_FIELDS=KEY_FIELDS, images=images,
            compared=compared, cell_name=cell_name, sections=sections, plots=plots)
