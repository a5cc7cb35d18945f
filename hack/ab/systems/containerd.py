"""System containerd: containerd's own daemon (the runtime stack's
$AB_PREFIX/bin/containerd, hack/stack/install-deps.sh's CONTAINERD_VERSION) in a
test host of its own (hack/hosts/containerd-host.sh: its own config, root, state
and socket, its own network namespace linked to the registry like the
dockerd hosts', so hack/hosts/link.sh's links apply to it the same way), driven
with ctr of the same version.

A pull is `ctr image pull --plain-http REF` through the daemon's transfer
service (not ctr --local: the fetch runs in the daemon, in its namespace,
with the daemon's settings), unpacked into its default snapshotter
(overlayfs) as dockerd's containerd image store does. The flavor's daemon
table is the transfer service's settings
([plugins."io.containerd.transfer.v1.local"]): max_concurrent_downloads
(its limiter, shared by layers and by the chunks of one layer) and
concurrent_layer_fetch_buffer (the chunk size: at 512 bytes or more a layer
larger than one chunk is fetched in up to max_concurrent_downloads ranged
requests at once; 0, containerd's default, fetches it in one). containerd
does not reload them: another setting restarts the daemon (its content
store and namespace stay, and are empty between pulls)."""
import json
import os
import shutil

from .. import hosts, systems, units

FLAVORS = ("containerd",)
# the suite kinds that measure it (each calls what its doc lists), and its
# flavors' names in the reports' tables
KINDS = ("pull",)
LABELS = {"containerd": "containerd"}
TABLE_KEYS = ("daemon",)
HOST = "ctrd"  # the test host: netns ab-ctrd (hack/lib.sh TEST_HOSTS)
NAMESPACE = "moby-ab"  # containerd's namespace the pulls go into
SCRIPT = os.path.join(hosts.HOSTS, "containerd-host.sh")
# the transfer service's settings a suite may give, and how each is written
SETTINGS = {"max_concurrent_downloads": "count", "concurrent_layer_fetch_buffer": "size",
            "max_concurrent_unpacks": "count"}


def ctr_path():
    return os.path.join(hosts.AB_PREFIX, "bin", "ctr")


def setting(v, w, key, value):
    """One setting's value as containerd takes it (an integer; a size in
    bytes for the chunk), or the suite's error naming the line."""
    if key not in SETTINGS:
        v.fail(w, f"daemon.{key}: not a setting of containerd's transfer service (known: {', '.join(SETTINGS)})")
    if SETTINGS[key] == "size":
        if isinstance(value, int) and not isinstance(value, bool):
            n = value
        else:
            n = units.size(v.unit(units.size, v.typed(value, str, w, "a size such as \"1MiB\", or 0 (off)"), w))
    else:
        n = v.typed(value, int, w, "an integer")
    if n < 0 or (SETTINGS[key] == "count" and n < 1):
        v.fail(w, f"daemon.{key}: want {'a size >= 0' if SETTINGS[key] == 'size' else 'an integer >= 1'}, got {value!r}")
    return n


def validate(v, w, t, name):
    """The daemon table: settings (a list of values is a scan over them, a
    list of tables a scan over those settings), parsed to integers."""
    return systems.settings(v, w, t, setting, "transfer settings")


class Containerd:
    """containerd's daemon in test host HOST."""

    def __init__(self, flavor):
        self.flavor = flavor
        self.host = HOST
        self.sock = None
        self.config = None
        self.version = None

    @property
    def env(self):
        return {"CONTAINERD_ADDRESS": self.sock or "", "CONTAINERD_NAMESPACE": NAMESPACE}

    def up(self, config):
        out = hosts.sh(SCRIPT, "up", self.host, "--transfer", json.dumps(config, sort_keys=True)).stdout
        self.sock = out.strip().splitlines()[-1]
        self.config = dict(config)
        self.version = self.ctr("version").stdout
        self.version = _server_version(self.version)

    def apply(self, config):
        """Run with config: containerd reads its config at start only."""
        if config != self.config:
            hosts.sh(SCRIPT, "restart", self.host, "--transfer", json.dumps(config, sort_keys=True))
            self.config = dict(config)

    def ctr(self, *args, check=True, timeout=600):
        return hosts.sh(ctr_path(), *args, env=self.env, check=check, timeout=timeout)

    def down(self, keep=None):
        if keep:
            src = os.path.join(self.vardir(), "containerd.log")
            if os.path.isfile(src):
                shutil.copyfile(src, os.path.join(keep, f"{self.flavor}-containerd.log"))
        hosts.sh(SCRIPT, "down", self.host, check=False)
        self.sock = None

    def netns(self):
        return f"/run/netns/ab-{self.host}"

    def vardir(self):
        return os.path.join(hosts.AB_VAR, self.host)


def _server_version(text):
    """The Server's Version line of `ctr version`."""
    server = False
    for line in (text or "").splitlines():
        if line.strip() == "Server:":
            server = True
        elif server and line.strip().startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None


def start(name, flavor, images):
    """The daemon, running the first variant; images: nothing here runs
    containers, so none are loaded."""
    c = Containerd(name)
    try:
        c.up(flavor.variants()[0])
    except BaseException:
        # not yet the runner's to take down: what up left goes now
        c.down()
        raise
    return c


def record(c, flavor):
    return {"version": c.version, "binary": "containerd", "ctr": ctr_path(),
            "pull": "ctr image pull --plain-http (transfer service)", "snapshotter": "overlayfs",
            "settings": [dict(v) for v in flavor.variants()],
            "defaults": {"max_concurrent_downloads": 3, "concurrent_layer_fetch_buffer": 0}}


def pull_command(c, refs):
    """ctr pulls of every ref at once, through the daemon's transfer
    service; all must succeed."""
    ctr = ctr_path()
    pulls = [f"{ctr} image pull --plain-http {r} >/dev/null" for r in refs]
    if len(pulls) == 1:
        return pulls[0]
    return f"{pulls[0]} & p=$!; {pulls[1]}; s=$?; wait $p && exit $s"


def cold_command(c, refs):
    """Remove the images synchronously (containerd's garbage collector then
    removes their content and snapshots before the command returns), prune
    whatever image is left, and fail when any image, content or snapshot
    is."""
    ctr = ctr_path()
    return (f"{ctr} image rm --sync {' '.join(refs)} >/dev/null 2>&1; {ctr} image prune --all >/dev/null"
            f" && test -z \"$({ctr} image ls -q)\" && test -z \"$({ctr} content ls -q)\""
            f" && test -z \"$({ctr} snapshots ls | tail -n +2)\"")
