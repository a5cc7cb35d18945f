"""A pretend machine for running suites without daemons, registry, links or
root: every command the harness gives a test host is answered here with a
number that depends only on the command (and how often the same command ran
before), and time passes only when a command says it took some. The same
suite then writes the same results.json every time."""
import concurrent.futures
import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from unittest import mock

from ab import hosts, results, runner, zns
from ab.systems import charliecloud as systems_charliecloud
from ab.systems import containerd as systems_containerd
from ab.systems import podman as systems_podman

_REAL_POPEN = subprocess.Popen


def _unit(key):
    """A stable number in [0, 1) for key."""
    return zlib.crc32(repr(key).encode()) / 2**32


class World:
    """The pretend machine: its clock, its containers, and what goes wrong.
    fail: {(what, flavor, occurrence)} of commands that fail; what is the
    command's name as value() counts it (e.g. "hyperfine", "checkpoint");
    ("hang", flavor, command, occurrence): a hyperfine run that never
    ends, ended at its timeout as hosts.sh ends one."""

    def __init__(self, var, fail=()):
        self.var = var
        self.now = 1000.0
        self.count = {}
        self.fail = set(fail)
        self.logs = {}
        self.images = {}  # reference -> bytes, as pushed
        self.sent = {}  # flavor -> bytes the registry sent it
        self.restarts = {}  # flavor -> restarts
        self.containerd_chunks = 0  # the running containerd's chunked downloads (0: off)
        self.configs = {}  # flavor -> configurations written after the first (podman)
        self.podman_calls = []  # podman's arguments, in order
        self.downs = []  # the hosts taken down
        self.ch_run_calls = []  # ch-run's command lines (but hyperfine's), in order
        self.containers = set()  # (flavor, name) of containers started and not removed
        self.started = []  # (flavor, name) of every container started, in order

    def push(self, repo, tag, layers, seed):
        ref = f"{hosts.REGISTRY}/{repo}:{tag}"
        self.images[ref] = sum(layers)
        return ref

    def served_bytes(self, flavor, second=False):
        # The golden suites have no second registry.
        return 0 if second else self.sent.get(flavor, 0)

    # --- time -------------------------------------------------------------
    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.now += s

    def value(self, what, flavor, detail, lo, hi):
        """A sample of what, between lo and hi, depending on the command and
        how many times it ran: (value, occurrence, whether it fails)."""
        key = (what, flavor, detail)
        n = self.count.get(key, 0)
        self.count[key] = n + 1
        base = lo + (hi - lo) * _unit(key)
        v = round(base * (1 + 0.04 * ((n * 7 + 3) % 5 - 2)), 4)
        return v, n, (what, flavor, n) in self.fail or (what, flavor, detail, n) in self.fail

    # --- commands ---------------------------------------------------------
    @staticmethod
    def done(rc=0, out="", err=""):
        return subprocess.CompletedProcess([], rc, out, err)

    def sh(self, *args, env=None, check=True, capture=True, timeout=None):
        args = [str(a) for a in args]
        flavor = "patched" if "patched" in (env or {}).get("DOCKER_HOST", "") else "stock"
        if (env or {}).get("CONTAINERD_ADDRESS"):
            flavor = "containerd"
        if (env or {}).get("CONTAINERS_CONF"):
            flavor = "podman"
        if any("/ab-charliecloud" in a for a in args):
            flavor = "charliecloud"
        if args[0] == "hyperfine":
            cmd = args[-1].replace(self.var, "$VAR")  # the same command in every run
            pulls = "docker pull" in cmd or "image pull" in cmd or "podman pull" in cmd
            lo, hi = (2.0, 6.0) if pulls else (0.2, 1.5)
            if flavor == "containerd":
                # the chunk size in the environment's config: a faster pull
                lo, hi = (lo / (1 + self.containerd_chunks), hi / (1 + self.containerd_chunks))
                cmd += f" chunks={self.containerd_chunks}"
            v, n, bad = self.value("hyperfine", flavor, cmd, lo, hi)
            if ("hang", flavor, cmd, n) in self.fail:
                # what hosts.sh answers for a command it ended at its timeout;
                # without one, the harness would wait for ever
                if timeout is None:
                    raise AssertionError(f"{cmd}: it hangs, and nothing ends it")
                return self.done(hosts.TIMED_OUT, err=f"timeout after {timeout:g} s\n")
            if bad:
                return self.done(1, err="Error: Command terminated with non-zero exit code: 1\n")
            with open(args[args.index("--export-json") + 1], "w") as f:
                json.dump({"results": [{"times": [v]}]}, f)
            if pulls:
                # the registry sends the image and a little more; ("warm",
                # flavor, cmd, n) in fail: the n-th pull found it cached
                ref = re.findall(r"\S+:5000/\S+", cmd)[-1]
                _, n, _ = self.value("sent", flavor, cmd, 0, 0)
                warm = ("warm", flavor, cmd, n) in self.fail
                # served_bytes asks by test host
                host = {"containerd": "ctrd"}.get(flavor, flavor)
                self.sent[host] = self.sent.get(host, 0) + (0 if warm else int(self.images.get(ref, 0) * 1.03))
            return self.done()
        if args[0] == "nsenter":
            flavor = args[1].rsplit("-", 1)[-1]
            rest = args[2:]
            if rest[0] == "taskset":
                rest = rest[3:]
            if os.path.basename(rest[0]) == "ch-run":  # a container: ch-run [options] ROOTFS -- argv
                self.ch_run_calls.append(rest)
                rest = rest[rest.index("--") + 1:]
                if rest[0] == "pingpong":
                    return self.pingpong(flavor, "host")
                return self.done()
            if rest[0] == "curl":
                return self.done()
            if rest[0] == "wrk":
                if "--latency" not in rest:
                    return self.done(out="warm-up\n")
                return self.wrk(flavor, rest[-1])
            if os.path.basename(rest[0]) == "pingpong":
                return self.pingpong(flavor, "native")
        if args[0].endswith("/runc"):
            v, _, bad = self.value("runc", "runc", args[-1], 0.2, 0.8)
            self.now += v
            return self.done(1, err="criu failed\n") if bad else self.done()
        return self.done()

    def wrk(self, flavor, url):
        rps, n, bad = self.value("wrk", flavor, url, 500.0, 3000.0)
        if bad:
            return self.done(1, err=f"unable to connect to {url} Connection refused\n")
        # ("wrk-non2xx", flavor, url, n) in fail: the n-th run got error answers
        non2xx = "  Non-2xx or 3xx responses: 12\n" if ("wrk-non2xx", flavor, url, n) in self.fail else ""
        lat = round(400 / rps, 6)
        return self.done(out=f"""Running 3s test @ {url}
  2 threads and 400 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   {lat * 1e3 * 1.2:.2f}ms   1.00ms  90.00ms   95.98%
  Latency Distribution
     50%   {lat * 1e3:.2f}ms
     75%   {lat * 1e3 * 1.1:.2f}ms
     90%   {lat * 1e3 * 1.3:.2f}ms
     99%   {lat * 1e3 * 3:.2f}ms
  {int(rps * 3)} requests in 3.00s, 12.66MB read
{non2xx}Requests/sec:  {rps:.2f}
Transfer/sec:      4.19MB
""")

    def pingpong(self, flavor, net):
        p50, _, bad = self.value("pingpong", flavor, net, 10.0, 25.0)
        if bad:
            return self.done(1, err="pingpong: connection refused\n")
        r = {"round_trips": 1000, "mean_us": round(p50 * 1.1, 2), "p50_us": p50, "p99_us": round(p50 * 2.5, 2)}
        return self.done(out="listening\n" + json.dumps(r) + "\n")

    def docker(self, d, args):
        args = [str(a) for a in args]
        f = d.flavor
        if args[0] == "run" and "--rm" in args:
            if "ab/pingpong" in args:
                return self.pingpong(f, "host" if "host" in args else "bridge")
            if "ab/node" in args:
                cpus = args[args.index("--cpus") + 1] if "--cpus" in args else "unlimited"
                mode = args[args.index("/data") + 1:]
                t, _, bad = self.value("readfiles", f, (cpus, *mode), 0.3, 2.5)
                self.now += t + 0.25
                if bad:
                    return self.done(1, err="node: EMFILE: too many open files\n")
                r = {"files": 3, "elapsed_s": t, "files_per_s": round(3 / t, 2), "cpu_s": round(t * 0.9, 3),
                     "throttled_s": 0.0 if cpus == "unlimited" else round(t / 3, 3)}
                return self.done(out=json.dumps(r) + "\n")
            return self.done()
        if args[0] == "run":
            name = args[args.index("--name") + 1]
            _, _, bad = self.value("run", f, name, 0, 0)
            if bad:
                raise hosts.HostError("docker run -d...: Bind for 0.0.0.0:3000 failed: port is already allocated")
            self.containers.add((f, name))
            self.started.append((f, name))
            return self.done(out="0123456789ab\n")
        if args[0] == "rm":
            for name in args[1:]:
                self.containers.discard((f, name))
            return self.done()
        if args[0] == "logs":
            name = args[-1]
            if "--tail" in args:
                return self.done(out="verified_passes=1\n")
            n = self.logs[name] = self.logs.get(name, 0) + 1
            gap, _, _ = self.value("freeze", f, name, 5.0, 400.0)
            return self.done(out="".join(f"pass={i} maxgap_ms={gap if i == n - 1 else 3.0}\n" for i in range(n)))
        if args[:2] == ["checkpoint", "create"]:
            v, _, bad = self.value("checkpoint", f, args[-2], 0.1, 3.0)
            self.now += v
            return self.done(1, err="Error response from daemon: criu failed: type NOTIFY errno 0\n") if bad \
                else self.done(out=args[-1] + "\n")
        if args[:2] == ["start", "--checkpoint"]:
            v, _, bad = self.value("restore", f, args[-1], 0.2, 1.0)
            self.now += v
            return self.done(1, err="Error response from daemon: restore failed\n") if bad else self.done()
        if args[0] == "inspect":
            return self.done(out="172.17.0.2\n" if "IPAddress" in args[2] else f"id-{args[-1]}\n")
        return self.done()


class FakeContainerd:
    """systems.containerd.Containerd's interface, answered by the World: a
    chunked setting makes its pulls faster."""

    def __init__(self, world, flavor):
        self.world, self.flavor, self.host = world, flavor, "ctrd"
        self.sock, self.config, self.version = None, None, "v2.3.3"

    @property
    def env(self):
        return {"CONTAINERD_ADDRESS": self.sock or "", "CONTAINERD_NAMESPACE": "moby-ab"}

    def up(self, config):
        self.sock = "/run/moby-ab/ctrd/containerd.sock"
        self.apply(config)

    def apply(self, config):
        if config != self.config:
            self.config = dict(config)
            chunked = config.get("concurrent_layer_fetch_buffer", 0) >= 512
            self.world.containerd_chunks = config.get("max_concurrent_downloads", 3) if chunked else 0
            self.world.restarts[self.flavor] = self.world.restarts.get(self.flavor, 0) + 1

    def down(self, keep=None):
        self.world.downs.append(self.flavor)

    def netns(self):
        return "/run/netns/ab-ctrd"

    def vardir(self):
        path = os.path.join(self.world.var, "ctrd")
        os.makedirs(path, exist_ok=True)
        return path


class FakePodman:
    """systems.podman.Podman's interface, answered by the World."""

    def __init__(self, world, flavor):
        self.world, self.flavor, self.host = world, flavor, "podman"
        self.config = None
        self.info = {"version": "4.3.1", "storage_driver": "overlay", "graphroot": "/var/lib/moby-ab/podman/storage",
                     "runroot": "/run/moby-ab/podman/storage", "runtime": "/opt/moby-ab/bin/runc",
                     "runtime_version": "runc version 1.4.3", "cgroup_manager": "cgroupfs"}

    @property
    def env(self):
        return {"CONTAINERS_CONF": "/run/moby-ab/podman/containers.conf"}

    def up(self, config):
        self.config = dict(config)

    def apply(self, config):
        if config != self.config:  # containers.conf rewritten
            self.config = dict(config)
            self.world.configs[self.flavor] = self.world.configs.get(self.flavor, 0) + 1

    def podman(self, *args, check=True, timeout=600):
        """Its containers, answered as the World answers docker's."""
        args = [str(a) for a in args]
        self.world.podman_calls.append(args)
        if args[0] in ("run", "logs", "rm"):
            return self.world.docker(self, args)
        if args[:2] == ["container", "checkpoint"]:
            return self.world.docker(self, ["checkpoint", "create", args[-1], "cp"])
        if args[:2] == ["container", "restore"]:
            return self.world.docker(self, ["start", "--checkpoint", "cp", args[-1]])
        return self.world.done()

    def down(self, keep=None):
        self.world.downs.append(self.flavor)

    def netns(self):
        return "/run/netns/ab-podman"

    def vardir(self):
        path = os.path.join(self.world.var, "podman")
        os.makedirs(path, exist_ok=True)
        return path


class FakeCharliecloud(systems_charliecloud.Charliecloud):
    """systems.charliecloud.Charliecloud with a pretend namespace and root
    file systems: its commands are the real ones, answered by the World."""

    def __init__(self, world, flavor):
        super().__init__(flavor)
        self.world = world

    def up(self, config, images):
        self.version, self.package = "0.31", "0.31-1"
        self.config = dict(config)
        for img in images:
            self.images[f"ab/{img}"] = {
                "archive": f"build/images/{img}.tar", "sha256": "sha256:" + "%064x" % zlib.crc32(img.encode()),
                "config_digest": "sha256:" + "c" * 64, "layers": ["sha256:" + "d" * 64], "bytes": 1 << 20,
                "env": ["PATH=/usr/local/bin:/bin"], "path": self.rootfs(img)}

    def down(self, keep=None):
        for p in list(self.servers):
            self.stop(p)
        self.world.downs.append(self.flavor)

    def vardir(self):
        return "/var/lib/moby-ab/charliecloud"  # never made: the same in every run


class FakeDaemon:
    """hosts.Daemon's interface, answered by the World."""

    def __init__(self, world, flavor):
        self.world = world
        self.flavor = flavor
        self.host = flavor
        self.sock = f"/run/moby-ab/{flavor}/docker.sock"
        self.config = None
        self.version = "29.8.1+ab.0123abcd" if flavor == "patched" else "29.8.1"

    @property
    def env(self):
        return {"DOCKER_HOST": f"unix://{self.sock}"}

    def up(self, config, binary=None):
        self.config = dict(config)
        if binary and binary != self.flavor:
            self.version = "29.8.1+ab.0123abcd" if binary == "patched" else "29.8.1"

    def apply(self, config):
        if config != self.config:
            self.config = dict(config)

    def down(self, keep=None):
        pass

    def restart(self, between=None):
        self.world.restarts[self.flavor] = self.world.restarts.get(self.flavor, 0) + 1
        if between:
            between()

    def docker(self, *args, check=True, timeout=600):
        return self.world.docker(self, args)

    def load(self, *images):
        pass

    def netns(self):
        return f"/run/netns/ab-{self.flavor}"

    def vardir(self):
        path = os.path.join(self.world.var, self.flavor)
        os.makedirs(path, exist_ok=True)
        return path

    def runc_root(self):
        return f"/run/moby-ab/{self.flavor}/exec/runtime-runc/moby"


class FakeProcess:
    """A native server: it runs until it is stopped."""

    def __init__(self, *a, **kw):
        self.returncode = None

    def poll(self):
        return self.returncode

    def terminate(self):
        self.returncode = -15

    kill = terminate

    def wait(self, timeout=None):
        return self.returncode


class _Inline:
    """ThreadPoolExecutor's interface, one task after the other: concurrent
    checkpoints then take the same pretend time in every run."""

    def __init__(self, *a, **kw):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, *args, **kw):
        fut = concurrent.futures.Future()
        fut.set_result(fn(*args, **kw))
        return fut


PROVENANCE = {"suite_sha256": "0" * 64, "series": "0123abcd", "commit": "f" * 40, "local_changes": False,
              "upstream": {"version": "29.8.1", "commit": "464cd50c3d9e92877d56940ea160de6fca7bea23",
                           "module": "github.com/moby/moby/v2", "module_version": "v2.0.0-beta.24"}}
MACHINE = {"kernel": "6.18.0", "cpus": 2, "cpu": "Pretend CPU", "memory_gib": 7.8, "hostname": "pretend"}
# the time of day every pretend run starts (and ends) at: a run's order is
# drawn from its start time when its suite gives no seed
STARTED = "2025-01-01T00:00:00Z"


@contextlib.contextmanager
def pretend(fail=()):
    """Patch the test hosts, the clock and the CPU count (2) for running suites."""
    var = tempfile.mkdtemp(prefix="ab-fake-var-")
    world = World(var, fail)
    patches = [
        mock.patch.object(hosts, "sh", world.sh),
        mock.patch.object(hosts, "Daemon", lambda flavor: FakeDaemon(world, flavor)),
        mock.patch.object(systems_containerd, "Containerd", lambda flavor: FakeContainerd(world, flavor)),
        mock.patch.object(systems_podman, "Podman", lambda flavor: FakePodman(world, flavor)),
        mock.patch.object(systems_charliecloud, "Charliecloud", lambda flavor: FakeCharliecloud(world, flavor)),
        mock.patch.object(hosts, "build_images", lambda *a: None),
        mock.patch.object(hosts, "registry_up", lambda: None),
        mock.patch.object(hosts, "registry_down", lambda: None),
        mock.patch.object(hosts, "link_up", lambda *a, **kw: None),
        mock.patch.object(hosts, "link_down", lambda *a, **kw: None),
        mock.patch.object(hosts, "link_backend", lambda backend="auto": "tun" if backend == "auto" else backend),
        mock.patch.object(hosts, "push_random_image", world.push),
        mock.patch.object(hosts, "served_bytes", world.served_bytes),
        mock.patch.object(hosts, "link_rtt_ms", lambda flavor, count=5: 140.4),
        mock.patch.object(hosts, "link_congestion",
                          lambda flavor, second=False: {"registry": "cubic", "host": "cubic", "default": "bbr"}),
        mock.patch.object(results, "provenance", lambda path: dict(PROVENANCE)),
        mock.patch.object(results, "now", lambda: STARTED),
        mock.patch.object(results, "host_state", lambda: dict(HOST)),
        mock.patch.object(runner, "now", lambda: STARTED),
        mock.patch.object(hosts, "node_binary", lambda: "/usr/bin/node"),
        mock.patch.object(hosts, "pingpong_binary", lambda: "/opt/build/pingpong"),
        mock.patch("time.monotonic", world.monotonic),
        mock.patch("time.sleep", world.sleep),
        mock.patch("subprocess.Popen", FakeProcess),
        # A zns replay is a computation on this machine, not a command on a
        # host: it runs for real.
        mock.patch.object(zns, "_Popen", _REAL_POPEN),
        mock.patch("concurrent.futures.ThreadPoolExecutor", _Inline),
        mock.patch("os.cpu_count", lambda: 2),
    ]
    try:
        with contextlib.ExitStack() as stack:
            for p in patches:
                stack.enter_context(p)
            stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
            yield world
    finally:
        shutil.rmtree(var, ignore_errors=True)


# what the pretend machine was doing at every sample
HOST = {"at": "2025-01-01T00:05:00Z", "load1": 0.5, "psi_cpu": 1.0, "psi_io": 0.25, "psi_memory": 0.0}


def normalise(doc):
    """What differs between machines and runs: the machine and the times of day."""
    doc["machine"] = dict(MACHINE)
    doc["started"], doc["finished"] = STARTED, "2025-01-01T00:10:00Z"
    return doc
