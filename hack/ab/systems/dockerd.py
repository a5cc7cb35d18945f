"""System dockerd: the stock and the patched daemon, each in its test host
(hosts.Daemon over hack/hosts/daemon.sh). A flavor's daemon table is daemon.json
keys merged over the test host's; binary picks the dockerd it runs (an A/A
run runs stock in both; "commit:<rev>" the patched daemon of a commit of
this project, so that two commits take turns in one run). Its containers (the checkpoint kind) are docker's:
run, logs, checkpoint create, start --checkpoint, rm; the overhead kind's
are docker's too (exec into a running container; run on a network)."""
import contextlib
import re

from .. import hosts

FLAVORS = ("stock", "patched")
# the suite kinds that measure it (each calls what its doc lists), and its
# flavors' names in the reports' tables
KINDS = ("pull", "checkpoint", "overhead", "cpuquota", "neighbour", "zns", "zns-sweep")
LABELS = {"stock": "stock dockerd", "patched": "patched dockerd"}
# dockerd's defaults of the settings suites scan: a stock entry with these
# (or without the key) and nothing else is stock as shipped
DEFAULTS = {"max-concurrent-downloads": 3}


def is_default(params):
    """Whether a stock entry's settings are dockerd's defaults."""
    params = params or {}
    return set(params) <= set(DEFAULTS) and all(params.get(k, v) == v for k, v in DEFAULTS.items())
TABLE_KEYS = ("daemon", "binary")
# the overhead kind: every workload it has, and its containers' placements
# (kinds/overhead.py NETWORKS) besides native
WORKLOADS = ("run", "cpu", "http", "files", "pingpong")
NETWORKS = ("bridge", "published", "host")


def binary_of(v, w, binary):
    """The dockerd a flavor's binary names, as bin/dockerd-<it>: stock,
    patched, "commit:<rev>", the patched daemon built from a commit of this
    project (its patches/; hack/stack/build-commit.sh), or "series:<hash>",
    that of a commit whose patches/ is that series (hosts.commit_of_series),
    each resolving to commit-<the commit's first 12 hex digits>; None: the
    flavor's own."""
    if binary is None or binary in FLAVORS:
        return binary
    if isinstance(binary, str) and binary.startswith("commit:"):
        rev = binary.removeprefix("commit:")
        sha = hosts.commit_of(rev) if rev and not rev.startswith("-") else None
        if not sha:
            v.fail(w + ("binary",), f"binary: {binary!r}: no commit {rev!r} in this project's history")
        return f"commit-{sha[:12]}"
    if isinstance(binary, str) and binary.startswith("series:"):
        series = binary.removeprefix("series:")
        if not re.fullmatch(r"[0-9a-f]{6,10}", series):
            v.fail(w + ("binary",), f"binary: {binary!r}: a series hash is 6 to 10 hex digits "
                   "(the +ab.<hash> of the patched daemon's version)")
        sha = hosts.commit_of_series(series)
        if not sha:
            v.fail(w + ("binary",), f"binary: {binary!r}: no commit of this project has the series {series}")
        return f"commit-{sha[:12]}"
    v.fail(w + ("binary",), f"binary: want one of {', '.join(FLAVORS)} (bin/dockerd-<binary>), "
           f"\"commit:<rev>\" or \"series:<hash>\" (the patched daemon of a commit of this project, or of "
           f"one whose patches/ is that series), got {binary!r}")


def validate(v, w, t, name):
    binary_of(v, w, t.get("binary"))
    daemon = v.typed(t.get("daemon", {}), (dict, list), w + ("daemon",), "a table of daemon.json keys")
    for d in daemon if isinstance(daemon, list) else []:
        v.typed(d, dict, w + ("daemon",), "a list of tables of daemon.json keys")
    return daemon


def start(name, flavor, images):
    if flavor.dockerd.startswith("commit-"):
        hosts.build_commit(flavor.dockerd.removeprefix("commit-"))
    d = hosts.Daemon(name)
    d.up(flavor.variants()[0], binary=flavor.dockerd)
    if images:
        d.load(*images)
    return d


def record(d, flavor):
    return {"version": d.version, "binary": f"dockerd-{flavor.dockerd}"}


def pull_command(d, refs):
    """docker pull of every ref at once; all must succeed."""
    if len(refs) == 1:
        return f"docker pull -q {refs[0]}"
    a, b = refs
    return f"docker pull -q {a} & p=$!; docker pull -q {b}; s=$?; wait $p && exit $s"


def cold_command(d, refs):
    cmd = "; ".join(f"docker rmi -f {x} >/dev/null 2>&1" for x in refs)
    cmd += " ; docker image prune -af >/dev/null && "
    return cmd + " && ".join(f"! docker image inspect {x} >/dev/null 2>&1" for x in refs)


# --- containers (the checkpoint kind) ----------------------------------------

def run_container(d, name, image, args):
    """Start a container of image, detached, named name."""
    d.docker("run", "-d", "--name", name, image, *args)


def logs(d, name, tail=None):
    """The container's output (its last tail lines)."""
    return d.docker("logs", *(["--tail", str(tail)] if tail else []), name, check=False).stdout


def checkpoint(d, name, cp, leave_running, timeout):
    """docker checkpoint create: the call the kind times (ended after timeout seconds)."""
    return d.docker("checkpoint", "create", *(["--leave-running"] if leave_running else []), name, cp, check=False,
                    timeout=timeout)


def stop(d, name):
    d.docker("stop", "-t", "1", name, check=False)


def restore(d, name, cp, timeout):
    """docker start --checkpoint: the call the kind times (ended after timeout seconds)."""
    return d.docker("start", "--checkpoint", cp, name, check=False, timeout=timeout)


def remove(d, names):
    d.docker("rm", "-f", *names, check=False)


# --- the overhead kind's workloads ----------------------------------------------

@contextlib.contextmanager
def shell(d, image, name):
    """The command prefix that runs a command in a container of image:
    docker exec into container name, started for it and removed after."""
    d.docker("run", "-d", "--name", name, image, "sleep", "3600")
    try:
        yield f"docker exec {name}"
    finally:
        d.docker("rm", "-f", name, check=False)


def ip_of(d, name):
    """A container's address on its network."""
    return d.docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                    name).stdout.strip()


def pingpong(d, name, image, net, server, client, cpus, log=None, timeout=600):
    """server (argv) in container name of image on network net (bridge or
    host), then client(the server's address) in another, pinned to cpus
    (server's, client's; None: not pinned), ended after timeout seconds:
    the client's completed process (or the server's failed start).
    Container name is removed before it returns."""
    net_args = ["--network", "host"] if net == "host" else []
    cpuset = lambda cpu: ["--cpuset-cpus", cpu] if cpu is not None else []
    try:
        p = d.docker("run", "-d", "--name", name, *net_args, *cpuset(cpus[0]), image, *server, check=False)
        if p.returncode == 0:
            ip = ip_of(d, name) if net == "bridge" else "127.0.0.1"
            p = d.docker("run", "--rm", *net_args, *cpuset(cpus[1]), image, *client(ip), check=False,
                         timeout=timeout)
        return p
    finally:
        d.docker("rm", "-f", name, check=False)
