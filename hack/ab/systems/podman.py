"""System podman: Debian 12's podman (4.3, hack/stack/install-deps.sh) in a test
host of its own (hack/hosts/podman-host.sh: its own storage, run root and
configuration, never the machine's /var/lib/containers; its own network
namespace linked to the registry like the dockerd hosts', so hack/hosts/link.sh's
links apply to it the same way). Containers run with the runtime stack's
runc, and with rlimits this host grants (nofile 1024, nproc 4096).

podman has no daemon: a pull is `podman pull REF` (containers/image, its
layers copied in parallel), stored in its overlay storage, timed from the
command's start to its end as the docker and ctr clients are. The flavor's
daemon table is settings of containers.conf's [engine] table:
image_parallel_copies (layers copied at once; podman's default, 0 in its
containers.conf, is containers/image's 6). Another setting rewrites
containers.conf; the next command reads it.

Its containers (the checkpoint kind) run without a network; a checkpoint
is podman container checkpoint, kept with the container, a restore podman
container restore."""
import json
import os
import shutil

from .. import hosts, systems

FLAVORS = ("podman",)
# the suite kinds that measure it (each calls what its doc lists), and its
# flavors' names in the reports' tables
KINDS = ("pull", "checkpoint")
LABELS = {"podman": "podman"}
TABLE_KEYS = ("daemon",)
HOST = "podman"  # the test host: netns ab-podman (hack/lib.sh TEST_HOSTS)
SCRIPT = os.path.join(hosts.HOSTS, "podman-host.sh")
# containers.conf [engine] settings a suite may give
SETTINGS = ("image_parallel_copies",)
DEFAULTS = {"image_parallel_copies": 6}  # containers/image's, when containers.conf says 0
ULIMITS = ("nofile=1024:1024", "nproc=4096:4096")  # hack/hosts/podman-host.sh's default_ulimits


def rundir():
    return os.path.join(hosts.AB_RUN, HOST)


def wrapper():
    """podman in the host (hack/hosts/podman-host.sh write_wrapper): its
    configuration, network namespace and a mount namespace of its own."""
    return os.path.join(rundir(), "podman")


def graphroot():
    return os.path.join(hosts.AB_VAR, HOST, "storage")


def setting(v, w, key, value):
    """One setting's value (an integer >= 1), or the suite's error naming
    the line."""
    if key not in SETTINGS:
        v.fail(w, f"daemon.{key}: not a setting of podman's containers.conf [engine] the harness takes "
                  f"(known: {', '.join(SETTINGS)})")
    n = v.typed(value, int, w, "an integer")
    if n < 1:
        v.fail(w, f"daemon.{key}: want an integer >= 1, got {value!r}")
    return n


def validate(v, w, t, name):
    """The daemon table: settings (a list of values is a scan over them, a
    list of tables a scan over those settings)."""
    return systems.settings(v, w, t, setting, "containers.conf [engine] settings")


class Podman:
    """podman in test host HOST."""

    def __init__(self, flavor):
        self.flavor = flavor
        self.host = HOST
        self.config = None
        self.info = None

    @property
    def env(self):
        # the wrapper sets the same; any other podman in a command finds the
        # host's configuration too
        d = rundir()
        return {"CONTAINERS_CONF": os.path.join(d, "containers.conf"),
                "CONTAINERS_STORAGE_CONF": os.path.join(d, "storage.conf"),
                "CONTAINERS_REGISTRIES_CONF": os.path.join(d, "registries.conf")}

    def up(self, config):
        hosts.sh(SCRIPT, "up", self.host, "--engine", json.dumps(config, sort_keys=True))
        self.config = dict(config)
        self.info = parse_info(self.podman("info", "--format", "json").stdout)

    def apply(self, config):
        """Run with config: written into containers.conf, read by the next
        command (no daemon to restart)."""
        if config != self.config:
            hosts.sh(SCRIPT, "config", self.host, "--engine", json.dumps(config, sort_keys=True))
            self.config = dict(config)

    def podman(self, *args, check=True, timeout=600):
        return hosts.sh(wrapper(), *args, check=check, timeout=timeout)

    def down(self, keep=None):
        if keep:
            src = os.path.join(rundir(), "events.log")
            if os.path.isfile(src):
                shutil.copyfile(src, os.path.join(keep, f"{self.flavor}-podman-events.log"))
        hosts.sh(SCRIPT, "down", self.host, check=False)

    def netns(self):
        return f"/run/netns/ab-{self.host}"

    def vardir(self):
        return os.path.join(hosts.AB_VAR, self.host)


def parse_info(text):
    """What `podman info --format json` says podman runs with: its version,
    storage driver and root, OCI runtime; None where it says nothing.
    Refuses (ValueError) what is not podman's info."""
    doc = json.loads(text or "null")
    if not isinstance(doc, dict) or not isinstance(doc.get("version"), dict):
        raise ValueError("podman info: not a JSON object with a version")

    def get(*path):
        x = doc
        for p in path:
            x = x.get(p) if isinstance(x, dict) else None
        return x if isinstance(x, (str, int, float)) else None
    runtime_version = get("host", "ociRuntime", "version")
    return {"version": get("version", "Version"), "storage_driver": get("store", "graphDriverName"),
            "graphroot": get("store", "graphRoot"), "runroot": get("store", "runRoot"),
            "runtime": get("host", "ociRuntime", "path"),
            # its first line: "runc version 1.4.3"
            "runtime_version": runtime_version.splitlines()[0] if runtime_version else None,
            "cgroup_manager": get("host", "cgroupManager")}


def start(name, flavor, images):
    """The host, with the first variant's settings, images (build/images)
    loaded into its storage."""
    p = Podman(name)
    try:
        p.up(flavor.variants()[0])
        build = os.environ.get("AB_BUILD", os.path.join(hosts.ROOT, "build"))
        for img in images:
            p.podman("load", "-q", "-i", os.path.join(build, "images", f"{img}.tar"))
    except BaseException:
        # not yet the runner's to take down: what up left goes now
        p.down()
        raise
    return p


def record(p, flavor):
    info = p.info or {}
    return {"version": info.get("version"), "binary": "podman", "pull": "podman pull (containers/image; no daemon)",
            "storage_driver": info.get("storage_driver"), "graphroot": info.get("graphroot"),
            "runroot": info.get("runroot"),
            "runtime": info.get("runtime"), "runtime_version": info.get("runtime_version"),
            "cgroup_manager": info.get("cgroup_manager"), "ulimits": list(ULIMITS),
            "blob_info_cache": "in memory, per command",
            "settings": [dict(v) for v in flavor.variants()], "defaults": dict(DEFAULTS)}


def pull_command(p, refs):
    """podman pulls of every ref at once (one command each, as two users
    would); all must succeed."""
    policy = os.path.join(rundir(), "policy.json")
    pulls = [f"{wrapper()} pull -q --signature-policy {policy} {r} >/dev/null" for r in refs]
    if len(pulls) == 1:
        return pulls[0]
    return f"{pulls[0]} & p=$!; {pulls[1]}; s=$?; wait $p && exit $s"


def cold_command(p, refs):
    """Remove every image, then fail when podman lists any or a layer is
    left in its overlay storage (a directory beside l, the links)."""
    w = wrapper()
    return (f"{w} rmi --all --force >/dev/null 2>&1; test -z \"$({w} images --all --quiet)\""
            f" && test -z \"$(find {graphroot()}/overlay -mindepth 1 -maxdepth 1 -type d ! -name l)\"")



# --- containers (the checkpoint kind) ----------------------------------------

def image_name(image):
    """podman's name of a docker-loaded image: a name without a registry is
    docker.io's (this host has no search registries)."""
    first = image.split("/", 1)[0]
    if "/" in image and ("." in first or ":" in first or first == "localhost"):
        return image
    return "docker.io/" + (image if "/" in image else "library/" + image)


def run_container(p, name, image, args):
    """Start a container of image, detached, named name, without a network
    (the host has no network of its own for containers; CNI would keep
    state in the machine's /var/lib/cni)."""
    p.podman("run", "-d", "--name", name, "--network", "none", image_name(image), *args)


def logs(p, name, tail=None):
    return p.podman("logs", *(["--tail", str(tail)] if tail else []), name, check=False).stdout


def checkpoint(p, name, cp, leave_running, timeout):
    """podman container checkpoint (CRIU through the project's runc),
    ended after timeout seconds: the checkpoint is kept with the container
    (podman has no named checkpoints; cp is not used)."""
    return p.podman("container", "checkpoint", *(["--leave-running"] if leave_running else []), name, check=False,
                    timeout=timeout)


def stop(p, name):
    p.podman("stop", "-t", "1", name, check=False)


def restore(p, name, cp, timeout):
    """podman container restore, from the checkpoint kept with the
    container, ended after timeout seconds."""
    return p.podman("container", "restore", name, check=False, timeout=timeout)


def remove(p, names):
    p.podman("rm", "-f", *names, check=False)
