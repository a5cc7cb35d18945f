"""System charliecloud: Debian 12's Charliecloud (0.31, its runtime package,
hack/stack/install-deps.sh), seed 002's class of HPC runtime beside native and
Docker (Singularity there): no daemon, no network of its own, an
unprivileged user namespace and a mount namespace per command.

Its test host is a network namespace of its own (ab-charliecloud, loopback
only: nothing in it pulls) and a directory, $AB_VAR/charliecloud, where each
image the suite runs is unpacked into a plain root file system from the
archive hack/hosts/images.sh built (build/images/<image>.tar, the same one the
dockerd hosts load): every layer's digest checked against its name, layers
applied in order with their whiteouts, nothing written outside the
directory (a member naming .., an absolute path or a path through a
symbolic link, a device node: the start fails). A container is one
ch-run command on that directory, started in the host's namespace: the
host network, as the dockerd flavors' `host` placement.

The overhead kind runs cpu (the hash in ch-run) and pingpong (the server
and the client each a ch-run, over loopback). The flavor's ch_run table
is ch-run's options: write (-w, the image read-write; default false),
private_tmp (-t, a /tmp of its own instead of the host's; default false),
environment ("image": the image's Env alone, as docker gives it, the
default; "host": ch-run's own default, the host's environment).
down stops what it started (by PID), removes the root file systems and the
namespace; start does the same when it fails."""
import contextlib
import hashlib
import json
import os
import posixpath
import pwd
import shlex
import shutil
import stat
import subprocess
import tarfile
import zlib

from .. import hosts

FLAVORS = ("charliecloud",)
# the suite kinds that measure it (each calls what its doc lists), and its
# flavors' names in the reports' tables
KINDS = ("overhead",)
LABELS = {"charliecloud": "charliecloud (ch-run)"}
TABLE_KEYS = ("ch_run",)
HOST = "charliecloud"  # the test host: netns ab-charliecloud
CH_RUN = "/usr/bin/ch-run"
PACKAGE = "charliecloud-runtime"  # Debian's, which has it
# ch-run's options a suite may give, and their defaults here
SETTINGS = {"write": bool, "private_tmp": bool, "environment": str}
DEFAULTS = {"write": False, "private_tmp": False, "environment": "image"}
ENVIRONMENTS = ("image", "host")
# what the overhead kind runs with it, and where its containers go
WORKLOADS = ("cpu", "pingpong")
NETWORKS = ("host",)
# bounds on an archive: its JSON documents, what its layers unpack to
MAX_JSON = 1 << 20
MAX_BYTES = 8 << 30
MAX_MEMBERS = 1 << 20


def ch_run_path():
    """Debian's ch-run (charliecloud-runtime), not whichever PATH finds."""
    return CH_RUN


def user():
    """ch-run refuses to start without $USER: the name of who runs it."""
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def setting(v, w, key, value):
    """One ch-run option, or the suite's error naming the line and key."""
    w = w + ("ch_run", key)
    if key not in SETTINGS:
        v.fail(w, f"ch_run.{key}: not an option of ch-run the harness takes (known: {', '.join(SETTINGS)})")
    if SETTINGS[key] is bool:
        if not isinstance(value, bool):
            v.fail(w, f"ch_run.{key}: want true or false, got {value!r}")
        return value
    if not isinstance(value, str) or value not in ENVIRONMENTS:
        v.fail(w, f"ch_run.{key}: want one of {', '.join(ENVIRONMENTS)}, got {value!r}")
    return value


def validate(v, w, t, name):
    """The ch_run table: ch-run's options (no scan: one table of values)."""
    opts = t.get("ch_run", {})
    if not isinstance(opts, dict):
        v.fail(w + ("ch_run",), f"ch_run: want a table of ch-run options, got {opts!r}")
    return {k: setting(v, w, k, x) for k, x in opts.items()}


def options(config, env):
    """ch-run's options for config (settings over DEFAULTS), env: the
    image's Env ("NAME=VALUE" strings)."""
    c = dict(DEFAULTS, **(config or {}))
    out = []
    if c["write"]:
        out.append("-w")
    if c["private_tmp"]:
        out.append("-t")
    if c["environment"] == "image":
        out += ["--unset-env=*"] + [f"--set-env={e}" for e in env]
    return out


class UnpackError(Exception):
    pass


class Charliecloud:
    """ch-run in test host HOST: its namespace and root file systems."""

    def __init__(self, flavor):
        self.flavor = flavor
        self.host = HOST
        self.config = None
        self.version = None
        self.package = None  # the Debian package's version
        self.images = {}  # image -> what unpack() recorded, and its path
        self.servers = []  # Popen of servers started and not yet stopped

    @property
    def env(self):
        return {"USER": user()}

    def up(self, config, images):
        """The namespace, and each image (build/images/<name>.tar) unpacked
        under vardir(); what a run before left there goes first."""
        self.remove()
        hosts.sh("ip", "netns", "add", f"ab-{self.host}")
        hosts.sh("ip", "-n", f"ab-{self.host}", "link", "set", "lo", "up")
        self.version = hosts.sh(ch_run_path(), "--version", env=self.env).stderr.strip()
        self.package = hosts.sh("dpkg-query", "-W", "-f=${Version}", PACKAGE, check=False).stdout.strip() or None
        self.config = dict(config)
        build = os.environ.get("AB_BUILD", os.path.join(hosts.ROOT, "build"))
        for img in images:
            archive = os.path.join(build, "images", f"{img}.tar")
            dest = self.rootfs(img)
            os.makedirs(dest)
            try:
                rec = unpack(archive, dest)
            except (OSError, UnpackError, ValueError, tarfile.TarError, EOFError, zlib.error) as e:
                raise hosts.HostError(f"charliecloud: {archive}: {e}") from None
            rec["archive"] = os.path.relpath(archive, hosts.ROOT)
            rec["path"] = dest
            self.images[f"ab/{img}"] = rec

    def apply(self, config):
        """ch-run reads its options per command: the next one has them."""
        self.config = dict(config)

    def rootfs(self, img):
        return os.path.join(self.vardir(), "img", img)

    def ch_run(self, image):
        """The command line that runs a command in a container of image
        (its arguments follow)."""
        rec = self.images.get(image)
        if rec is None:
            raise hosts.HostError(f"charliecloud: {image} is not unpacked (images: {', '.join(self.images)})")
        return [ch_run_path(), *options(self.config, rec.get("env", [])), rec["path"], "--"]

    def start(self, argv, log):
        """argv started in the host's namespace (nsenter execs it: the
        Popen's PID is the process), its output into log; stopped by down()
        if not before."""
        with open(log, "w") as f:
            p = subprocess.Popen(["nsenter", f"--net={self.netns()}", *argv], stdin=subprocess.DEVNULL,
                                 stdout=f, stderr=subprocess.STDOUT, env=dict(os.environ, **self.env))
        self.servers.append(p)
        return p

    def stop(self, p):
        """End p, a process start() started, by its PID: TERM, then KILL."""
        if p in self.servers:
            self.servers.remove(p)
        hosts.stop_process(p)

    def remove(self):
        """The namespace and vardir(), if there."""
        hosts.sh("ip", "netns", "del", f"ab-{self.host}", check=False)
        shutil.rmtree(self.vardir(), ignore_errors=True)

    def down(self, keep=None):
        for p in list(self.servers):
            self.stop(p)
        self.remove()
        self.images = {}

    def netns(self):
        return f"/run/netns/ab-{self.host}"

    def vardir(self):
        return os.path.join(hosts.AB_VAR, self.host)


# --- unpacking an image archive ----------------------------------------------

class _Hashing:
    """A file object's reads, hashed."""

    def __init__(self, f):
        self.f, self.h = f, hashlib.sha256()

    def read(self, n=-1):
        b = self.f.read(n)
        self.h.update(b)
        return b

    def drain(self):
        while self.read(1 << 20):
            pass
        return "sha256:" + self.h.hexdigest()


def _member(tar, name):
    try:
        return tar.getmember(name)
    except KeyError:
        raise UnpackError(f"no {name} in the archive") from None


def _json(tar, name):
    m = _member(tar, name)
    if not m.isreg() or m.size > MAX_JSON:
        raise UnpackError(f"{name}: not a file of at most {MAX_JSON} bytes")
    return json.loads(tar.extractfile(m).read())


def _blob(tar, path):
    """The member of a blob path of manifest.json: blobs/sha256/<hex>, and
    the digest its name says it has."""
    if not isinstance(path, str):
        raise UnpackError(f"manifest.json: a blob path is not a string: {path!r}")
    parts = path.split("/")
    if len(parts) != 3 or parts[:2] != ["blobs", "sha256"] or len(parts[2]) != 64 or \
            any(c not in "0123456789abcdef" for c in parts[2]):
        raise UnpackError(f"manifest.json: {path!r} is not blobs/sha256/<digest>")
    m = _member(tar, path)
    if not m.isreg():
        raise UnpackError(f"{path}: not a file")
    return m, "sha256:" + parts[2]


def unpack(archive, dest):
    """Unpack the image of archive (a docker-save archive with one image,
    hack/hosts/testimages/mkimage.py's) into dest, an empty directory: {"sha256":
    the archive's, "config_digest", "layers": their digests, "env": the
    image's Env, "bytes": what its files hold}. Raises UnpackError (or
    tarfile's, zlib's, OSError) on anything else; dest may then hold part
    of it."""
    h = hashlib.sha256()
    with open(archive, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    with tarfile.open(archive, "r:") as tar:
        manifest = _json(tar, "manifest.json")
        if not isinstance(manifest, list) or len(manifest) != 1 or not isinstance(manifest[0], dict):
            raise UnpackError("manifest.json: want one image")
        cm, config_digest = _blob(tar, manifest[0].get("Config"))
        raw = tar.extractfile(cm).read(MAX_JSON + 1)
        if len(raw) > MAX_JSON or "sha256:" + hashlib.sha256(raw).hexdigest() != config_digest:
            raise UnpackError(f"config {config_digest}: its bytes do not have its digest")
        config = json.loads(raw)
        env = ((config.get("config") or {}).get("Env") or []) if isinstance(config, dict) else []
        if not isinstance(env, list) or not all(isinstance(e, str) and "=" in e for e in env):
            raise UnpackError("config: Env is not a list of NAME=VALUE")
        layers = manifest[0].get("Layers")
        if not isinstance(layers, list) or not layers:
            raise UnpackError("manifest.json: no layers")
        budget = {"bytes": MAX_BYTES, "members": MAX_MEMBERS}
        digests = []
        for path in layers:
            m, digest = _blob(tar, path)
            src = _Hashing(tar.extractfile(m))
            head = src.read(2)
            mode = "r|gz" if head == b"\x1f\x8b" else "r|"
            with tarfile.open(fileobj=_Prefixed(head, src), mode=mode) as layer:
                _apply_layer(layer, dest, budget)
            if src.drain() != digest:
                raise UnpackError(f"layer {digest}: its bytes do not have its digest")
            digests.append(digest)
    return {"sha256": "sha256:" + h.hexdigest(), "config_digest": config_digest, "layers": digests,
            "env": env, "bytes": MAX_BYTES - budget["bytes"]}


class _Prefixed:
    """head, then the rest of f."""

    def __init__(self, head, f):
        self.head, self.f = head, f

    def read(self, n=-1):
        if self.head:
            if n is None or n < 0:
                b, self.head = self.head + self.f.read(), b""
                return b
            b, self.head = self.head[:n], self.head[n:]
            return b + (self.f.read(n - len(b)) if n > len(b) else b"")
        return self.f.read(n)


def _parts(name):
    """A member's path as components under the root, or UnpackError."""
    if name.startswith("/"):
        raise UnpackError(f"{name!r}: an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnpackError(f"{name!r}: a path with ..")
    return parts


def _parent(dest, parts):
    """The directory parts[:-1] names under dest, made where missing; every
    component a directory, none a symbolic link."""
    d = dest
    for p in parts[:-1]:
        d = os.path.join(d, p)
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            os.mkdir(d, 0o755)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise UnpackError(f"{'/'.join(parts)!r}: its path goes through {p!r}, not a directory "
                              "(a symbolic link is not followed)")
    return d


def _remove(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def _apply_layer(layer, dest, budget):
    root = os.geteuid() == 0
    for m in layer:
        budget["members"] -= 1
        if budget["members"] < 0:
            raise UnpackError(f"more than {MAX_MEMBERS} members")
        parts = _parts(m.name)
        if not parts:
            continue  # the root itself
        parent = _parent(dest, parts)
        base = parts[-1]
        if base == ".wh..wh..opq":  # an opaque directory: what lower layers put there goes
            for x in os.listdir(parent):
                _remove(os.path.join(parent, x))
            continue
        if base.startswith(".wh."):
            _remove(os.path.join(parent, base[4:]))
            continue
        path = os.path.join(parent, base)
        if m.isdir():
            try:
                if not stat.S_ISDIR(os.lstat(path).st_mode):
                    _remove(path)
                    os.mkdir(path)
            except FileNotFoundError:
                os.mkdir(path)
        elif m.isreg():
            budget["bytes"] -= m.size
            if budget["bytes"] < 0:
                raise UnpackError(f"more than {MAX_BYTES} bytes")
            _remove(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(layer.extractfile(m), out, 1 << 20)
        elif m.issym():
            _remove(path)
            os.symlink(m.linkname, path)
        elif m.islnk():
            target = _parts(m.linkname)
            src = os.path.join(_parent(dest, target), target[-1]) if target else None
            if src is None or not os.path.lexists(src) or stat.S_ISDIR(os.lstat(src).st_mode):
                raise UnpackError(f"{m.name!r}: a hard link to {m.linkname!r}, not a file of the image")
            _remove(path)
            os.link(src, path, follow_symlinks=False)
        else:
            raise UnpackError(f"{m.name!r}: a device node or FIFO (not in an image the harness unpacks)")
        if root:  # (before the mode: a chown clears setuid)
            os.lchown(path, m.uid, m.gid)
        if not os.path.islink(path):  # (a hard link may be to a symbolic link: never followed)
            # without setuid and setgid: the harness runs ch-run as root
            os.chmod(path, m.mode & 0o1777)


# --- the suite's host --------------------------------------------------------

def start(name, flavor, images):
    """The host with the first variant's options, images (build/images)
    unpacked."""
    c = Charliecloud(name)
    try:
        c.up(flavor.variants()[0], images)
    except BaseException:
        # not yet the runner's to take down: what up left goes now
        c.down()
        raise
    return c


def record(c, flavor):
    return {"version": c.version, "binary": "ch-run", "ch_run": ch_run_path(), "package": f"{PACKAGE} {c.package}",
            "network": f"the host's: test host namespace ab-{c.host}, loopback",
            "rootfs": {img: {k: rec.get(k) for k in ("archive", "sha256", "config_digest", "layers", "bytes",
                                                     "path")} for img, rec in c.images.items()},
            "options": {img: options(c.config, rec.get("env", [])) for img, rec in c.images.items()},
            "settings": [dict(v) for v in flavor.variants()], "defaults": dict(DEFAULTS)}


# --- the overhead kind's workloads ----------------------------------------------

@contextlib.contextmanager
def shell(c, image, name):
    """The command prefix that runs a command in a container of image:
    ch-run on its root file system, in the host's namespace (a container
    per command; nothing to start or remove)."""
    yield " ".join(["nsenter", f"--net={c.netns()}"] + [shlex.quote(a) for a in c.ch_run(image)])


def pingpong(c, name, image, net, server, client, cpus, log, timeout=600):
    """server (argv) in a container of image, then client(address) in
    another, both ch-run in the host's namespace (net: host, the only
    placement it has), pinned to cpus (server's, client's; None: not
    pinned), the client ended after timeout seconds: its completed
    process. The server is stopped (by its PID) before it returns."""
    if net not in NETWORKS:
        raise hosts.HostError(f"charliecloud: no network placement {net!r} (it has {', '.join(NETWORKS)})")
    taskset = lambda cpu: ["taskset", "-c", cpu] if cpu is not None else []
    p = c.start([*taskset(cpus[0]), *c.ch_run(image), *server], log)
    try:
        out = hosts.sh("nsenter", f"--net={c.netns()}", *taskset(cpus[1]), *c.ch_run(image), *client("127.0.0.1"),
                       env=c.env, check=False, timeout=timeout)
        if out.returncode != 0 and p.poll() is not None:
            with open(log, errors="replace") as f:
                said = (f.read().strip().splitlines() or ["(nothing)"])[-1][:200]
            out = subprocess.CompletedProcess(out.args, out.returncode, out.stdout,
                                              (out.stderr or "") + f"\nthe server exited {p.returncode}: {said}")
        return out
    finally:
        c.stop(p)
