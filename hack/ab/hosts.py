"""The test hosts: thin wrappers over hack/hosts/daemon.sh, registry.sh, link.sh and
images.sh, so that the harness and the shell suites share one implementation."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import units

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HACK = os.path.join(ROOT, "hack")
# hack/ by concern: the test hosts, their links and images; the upstream
# tree, the series and the builds; the measurement scripts
HOSTS = os.path.join(HACK, "hosts")
STACK = os.path.join(HACK, "stack")
MEASURE = os.path.join(HACK, "measure")
REGISTRY = "10.199.0.1:5000"
# hack/hosts/faultreg.py in front of the registry, where a suite asks for one
REGISTRY_PROXY = "10.199.0.1:5001"
# the same registry at a second address (hack/lib.sh REGISTRY2): to a daemon,
# a second registry, reached over a link of its own (hack/hosts/link.sh --second)
REGISTRY2 = "10.199.0.2:5000"
REGISTRY2_PROXY = "10.199.0.2:5001"
# where hack/lib.sh keeps the test hosts' state (AB_RUN, AB_VAR, AB_PREFIX there)
AB_RUN = os.environ.get("AB_RUN", "/run/moby-ab")
AB_VAR = os.environ.get("AB_VAR", "/var/lib/moby-ab")
AB_PREFIX = os.environ.get("AB_PREFIX", "/opt/moby-ab")


class HostError(Exception):
    pass


# The exit status of a command ended at its timeout (as timeout(1) has it).
TIMED_OUT = 124


def sh(*args, env=None, check=True, capture=True, timeout=None):
    """Run args; with check, a failure is a HostError. A command still
    running after timeout seconds is ended, with every process it started
    (its own session), and answers TIMED_OUT with "timeout after N s" as
    the last line of its stderr: a failure like any other, never
    subprocess.TimeoutExpired, so that one hung sample fails that sample
    and not the run."""
    e = dict(os.environ, **(env or {}))
    pipe = subprocess.PIPE if capture else None
    with subprocess.Popen(args, env=e, text=True, stdout=pipe, stderr=pipe,
                          start_new_session=timeout is not None) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            _end_session(proc)
            try:
                out, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                # something it started left its session and holds its output open
                out, err = "", ""
            rc, err = TIMED_OUT, (err or "") + f"timeout after {timeout:g} s\n"
        except BaseException:
            # interrupted (Ctrl-C): it goes, and what it started with it
            if timeout is not None:
                _end_session(proc)
            else:
                proc.kill()
            raise
    p = subprocess.CompletedProcess(args, rc, out, err)
    if check and p.returncode != 0:
        err = (p.stderr or "").strip().splitlines()
        raise HostError(f"{' '.join(args[:3])}...: " + (" | ".join(err[-4:]) or f"exit {p.returncode}"))
    return p


def _end_session(proc):
    """KILL every process of proc's process group: proc, started by sh in a
    session of its own, and what it started."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Daemon:
    """One flavor's dockerd in its test host."""

    def __init__(self, flavor):
        self.flavor = flavor
        self.host = flavor  # its test host (hack/lib.sh TEST_HOSTS)
        self.sock = None
        self.config = None
        self.version = None
        self._cfgdir = tempfile.mkdtemp(prefix=f"ab-{flavor}-")

    @property
    def env(self):
        return {"DOCKER_HOST": f"unix://{self.sock}"}

    def _write(self, config):
        path = os.path.join(self._cfgdir, "daemon.json")
        with open(path, "w") as f:
            json.dump(config, f)
        return path

    def up(self, config, binary=None):
        """Start the test host's dockerd with config; binary: which of
        bin/dockerd-* it runs (its flavor's by default)."""
        args = ["--binary", binary] if binary and binary != self.flavor else []
        out = sh(os.path.join(HOSTS, "daemon.sh"), "up", self.flavor, "--config", self._write(config),
                 *args).stdout
        self.sock = out.strip().split("unix://", 1)[1]
        self.config = dict(config)
        self.version = self.docker("version", "--format", "{{.Server.Version}}").stdout.strip()

    def apply(self, config):
        """Make the daemon run with config: reload when it differs."""
        if config != self.config:
            sh(os.path.join(HOSTS, "daemon.sh"), "reload", self.flavor, "--config", self._write(config))
            self.config = dict(config)

    # What a daemon leaves that a reader of the results may want: its log and,
    # on the patched daemon, what it learned of each registry.
    KEEP = ("dockerd.log", "data/registry-download-concurrency.json")

    def down(self, keep=None):
        """Stop the daemon; with keep, first copy KEEP into keep/<flavor>-*."""
        if keep:
            for rel in self.KEEP:
                src = os.path.join(self.vardir(), rel)
                if os.path.isfile(src):
                    shutil.copyfile(src, os.path.join(keep, f"{self.flavor}-{os.path.basename(rel)}"))
        sh(os.path.join(HOSTS, "daemon.sh"), "down", self.flavor, check=False)
        shutil.rmtree(self._cfgdir, ignore_errors=True)
        self.sock = None

    def restart(self, between=None):
        """Stop dockerd and its containerd, call between() while they are
        stopped, start them again with the same configuration; the test
        host's namespace, link and data stay."""
        sh(os.path.join(HOSTS, "daemon.sh"), "stop", self.flavor)
        try:
            if between:
                between()
        finally:
            out = sh(os.path.join(HOSTS, "daemon.sh"), "start", self.flavor).stdout
            self.sock = out.strip().split("unix://", 1)[1]

    def docker(self, *args, check=True, timeout=600):
        return sh("docker", *args, env=self.env, check=check, timeout=timeout)

    def load(self, *images):
        sh(os.path.join(HOSTS, "images.sh"), "load", *images, env=self.env)

    def netns(self):
        return f"/run/netns/ab-{self.flavor}"

    def vardir(self):
        """The flavor's directory on the data-root's disk."""
        return os.path.join(AB_VAR, self.flavor)

    def runc_root(self):
        """runc's state directory for the daemon's containers."""
        return os.path.join(AB_RUN, self.flavor, "exec", "runtime-runc", "moby")


def commit_of(rev):
    """The full hash of the project's commit rev, or None."""
    p = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


def series_of(commit):
    """The series hash of a commit's patches/ (hack/stack/patches.sh hash of
    its tree: sha256 of patches/series and every patch it lists, in order,
    the first 10 hex digits), read from git's objects (one cat-file for all
    of them); None without a series file."""
    def blobs(paths):
        req = "".join(f"{commit}:{p}\n" for p in paths).encode()
        out = subprocess.run(["git", "-C", ROOT, "cat-file", "--batch"], input=req, capture_output=True).stdout
        got, i = [], 0
        for _ in paths:
            nl = out.index(b"\n", i)
            head = out[i:nl].split()
            if head[-1] == b"missing":
                got.append(None)
                i = nl + 1
                continue
            size = int(head[2])
            got.append(out[nl + 1:nl + 1 + size])
            i = nl + 1 + size + 1
        return got
    [series] = blobs(["patches/series"])
    if series is None:
        return None
    names = [x for x in series.decode().splitlines() if x.strip() and not x.startswith("#")]
    h = hashlib.sha256(series)
    for b in blobs([f"patches/{x}" for x in names]):
        h.update(b or b"")
    return h.hexdigest()[:10]


def commit_of_series(series):
    """A commit of the project whose patches/ is the series whose hash
    (series_of) starts with series: the newest that changed patches/ and
    left it that series (any commit with the same patches/ builds the same
    patched daemon), or None. Every commit that changed a file in patches/
    is looked at, not only those that changed patches/series: a fix-up
    folded into a patch changes the series and leaves its list as it was."""
    log = subprocess.run(["git", "-C", ROOT, "log", "--format=%H", "--", "patches"],
                         capture_output=True, text=True)
    for c in log.stdout.split():
        if (series_of(c) or "").startswith(series):
            return c
    return None


def build_commit(sha):
    """bin/dockerd-commit-<sha>: the patched daemon of the project's commit
    sha (12 hex digits or more), built by hack/stack/build-commit.sh unless
    it is there."""
    sh(os.path.join(STACK, "build-commit.sh"), sha, capture=False)


def node_binary():
    """The host's Node.js, the binary hack/hosts/images.sh copies into ab/node."""
    n = shutil.which("node") or shutil.which("nodejs")
    if not n:
        raise HostError("node is missing (apt-get install nodejs): native runs use the host's Node.js")
    return os.path.realpath(n)


def pingpong_binary():
    """The native copy of the pingpong program (hack/hosts/images.sh build pingpong)."""
    path = os.path.join(os.environ.get("AB_BUILD", os.path.join(ROOT, "build")), "pingpong")
    if not os.access(path, os.X_OK):
        raise HostError(f"{path} is missing: hack/hosts/images.sh build pingpong")
    return path


def served_bytes(flavor, second=False):
    """Bytes the registry's namespace has sent towards flavor's test host:
    the transmit counters of its interfaces to that host (the veth, and
    the emulated link's TUN device when there is one); second: over the
    second link's (hack/hosts/link.sh --second)."""
    p = sh("ip", "-n", "ab-reg", "-j", "-s", "link", "show")
    names = (f"ab-{flavor}-reg2", f"abr2-{flavor}") if second else (f"ab-{flavor}-reg", f"abr-{flavor}")
    total = 0
    for link in json.loads(p.stdout or "[]"):
        if link.get("ifname") in names:
            total += link.get("stats64", {}).get("tx", {}).get("bytes", 0)
    return total


def flush_tcp_metrics_cmd(flavor):
    """A shell command that forgets what the kernel's TCP metrics cache
    (ssthresh, RTT per destination) learned on both ends of flavor's link."""
    return f"ip -n ab-{flavor} tcp_metrics flush all && ip -n ab-reg tcp_metrics flush all"


def registry_up():
    sh(os.path.join(HOSTS, "registry.sh"), "up")


def registry_down():
    sh(os.path.join(HOSTS, "registry.sh"), "down", check=False)


def stop_process(p, timeout=10):
    """End p, a process the harness started, by its PID: TERM, then KILL
    if it has not ended within timeout seconds."""
    if p is None or p.poll() is not None:
        return
    p.terminate()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


class RegistryProxy:
    """hack/hosts/faultreg.py at REGISTRY_PROXY in the registry's namespace, in
    front of the registry, started with args (e.g. ["--conn-rate",
    "8000000bit"]); stopped, by its PID, when the block ends."""

    def __init__(self, args, log, listen=REGISTRY_PROXY):
        self.args, self.log, self.listen, self.proc = list(args), log, listen, None

    def __enter__(self):
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(
            ["nsenter", "--net=/run/netns/ab-reg", "python3", os.path.join(HOSTS, "faultreg.py"),
             "--listen", self.listen, "--upstream", f"http://{REGISTRY}", "--log", self.log] + self.args,
            stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, start_new_session=True)
        logf.close()
        probe = ["nsenter", "--net=/run/netns/ab-reg", "curl", "-fs", "-o", "/dev/null",
                 f"http://{self.listen}/v2/"]
        for _ in range(50):
            if self.proc.poll() is not None:
                break
            if subprocess.run(probe, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                return self
            time.sleep(0.2)
        self.__exit__(None, None, None)
        raise HostError(f"the registry proxy did not start (log: {self.log})")

    def __exit__(self, *exc):
        stop_process(self.proc)
        return False


def link_args(flavor, profile, backend="auto", second=False):
    """hack/hosts/link.sh's arguments for a [[profile]] (or its second link): plain
    numbers, parsed once from the suite's units (ab.units)."""
    args = [os.path.join(HOSTS, "link.sh"), "up", flavor, "--rtt-ms", units.plain(profile.rtt_ms),
            "--loss-pct", units.plain(profile.loss_pct), "--jitter-ms", units.plain(profile.jitter_ms),
            "--queue", str(profile.queue), "--congestion", profile.congestion, "--backend", backend]
    if profile.rate_bits_per_s is not None:
        args += ["--rate-bits-per-s", units.plain(profile.rate_bits_per_s)]
    if second:
        args.append("--second")
    return args


def link_up(flavor, profile, backend="auto", second=False):
    sh(*link_args(flavor, profile, backend, second))


def link_down(flavor, stats_to=None, second=False):
    """Take flavor's emulated link (second: its second link) down; with
    stats_to, the emulator's counters (per direction) are written there as
    JSON."""
    args = ["--stats-to", stats_to] if stats_to else []
    if second:
        args.append("--second")
    sh(os.path.join(HOSTS, "link.sh"), "down", flavor, *args, check=False)


_RTT_PROBE = """
import socket, statistics, sys, time
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rtts = []
for _ in range(n):
    t = time.monotonic()
    with socket.create_connection((host, port), timeout=10):
        rtts.append((time.monotonic() - t) * 1000)
    time.sleep(0.1)
print(round(statistics.median(rtts), 2))
"""


def link_rtt_ms(flavor, count=5, registry=REGISTRY):
    """The round trip from flavor's test host to the registry as measured:
    the median time of count TCP handshakes with it (connect() returns after
    SYN and SYN-ACK: one round trip), or None when they fail."""
    host, port = registry.split(":")
    p = sh("nsenter", f"--net=/run/netns/ab-{flavor}", sys.executable, "-c", _RTT_PROBE, host, port, str(count),
           check=False, timeout=120)
    try:
        return float(p.stdout.strip()) if p.returncode == 0 else None
    except ValueError:
        return None


def link_congestion(flavor, second=False):
    """The congestion control each end of flavor's link sends with, as its
    routes say ({"registry": ..., "host": ..., "default": the namespace's
    own}), or None when it cannot be read."""
    p = sh(os.path.join(HOSTS, "link.sh"), "congestion", flavor, *(["--second"] if second else []), check=False)
    try:
        return json.loads(p.stdout) if p.returncode == 0 else None
    except ValueError:
        return None


def link_backend(backend="auto"):
    return backend if backend != "auto" else sh(os.path.join(HOSTS, "link.sh"), "backend").stdout.strip()


def build_images(*names):
    sh(os.path.join(HOSTS, "images.sh"), "build", *names)


def push_random_image(repo, tag, layers, seed):
    """Build an image of random layers and push it to the registry (from
    inside the registry's namespace). Returns the reference."""
    ref = f"{REGISTRY}/{repo}:{tag}"
    with tempfile.TemporaryDirectory() as d:
        archive = os.path.join(d, "image.tar")
        sizes = ",".join(str(n) for n in layers)  # bytes
        sh("python3", os.path.join(HOSTS, "testimages", "mkimage.py"), "--ref", ref,
           "--random-layers", sizes, "--seed", str(seed), "-o", archive)
        sh("nsenter", "--net=/run/netns/ab-reg", "python3", os.path.join(HACK, "ab", "push.py"),
           archive, f"http://127.0.0.1:5000", repo, tag)
    return ref
