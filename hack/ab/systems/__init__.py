"""The systems under test: what a suite's flavors run on. One module per
system, each with:

  KINDS             the suite kinds that measure it (a kind calls what its
                    doc lists below)
  LABELS            its flavors' names in the reports' tables
  FLAVORS          the [flavor.<name>] tables it runs (dockerd: stock and
                    patched; containerd: containerd; podman: podman;
                    charliecloud: charliecloud)
  TABLE_KEYS        the keys such a table takes
  validate(v, w, t, name)  check table t (at w) beyond the keys every flavor
                    has, return its daemon settings (v: suite.Validator)
  start(name, flavor, images)  bring its test host up with the flavor's
                    first variant, the images loaded where it runs containers:
                    a host object (below)
  record(h, flavor)  what results.json says the host ran with (version,
                    binary, image store, the settings given)

A system the pull kind measures (dockerd, containerd, podman) also has
pull_command(h, refs) (the shell command a cold pull times: every ref at
once) and cold_command(h, refs) (the shell command that removes the refs'
images and their content, and fails when anything of them is left).

A system that runs containers (dockerd, podman: the checkpoint kind's) also
has run_container(h, name, image, args), logs(h, name, tail),
checkpoint(h, name, cp, leave_running) and restore(h, name, cp) (the calls
the kind times; completed processes), stop(h, name), remove(h, names).
A system the overhead kind measures (dockerd, charliecloud) has WORKLOADS
(those of the kind's it runs), NETWORKS (its containers' placements besides
native: dockerd bridge, published and host; charliecloud host),
shell(h, image, name) (a context manager: the command prefix that runs a
command in a container of image) and pingpong(h, name, image, net, server,
client, cpus, log) (a server and a client(address) in containers placed on
net: the client's completed process, the server gone when it returns).

dockerd also has DEFAULTS and is_default(params): which stock entry is
stock as shipped (the reports' "stock default").

A host object has: flavor (the suite's name for it), host (its test host:
network namespace ab-<host>, hack/hosts/link.sh's <flavor>), env (the environment
its commands run with), apply(params) (run with these settings, restarting
where the system cannot reload), down(keep) (stop it, remove what it
created, copy its log into keep), netns(), vardir().

The core (suite, runner) asks a flavor's system for these; a kind says
which systems list it (KINDS): a system is added by its module and a line
in the registry below."""
NAMES = ("dockerd", "containerd", "podman", "charliecloud")
_REGISTRY = {}


def get(name):
    """The module of system name (the registry below: every system's
    module, imported when first asked for, as the core modules they build
    on ask for them)."""
    if not _REGISTRY:
        from . import charliecloud, containerd, dockerd, podman
        _REGISTRY.update(dockerd=dockerd, containerd=containerd, podman=podman, charliecloud=charliecloud)
        assert tuple(_REGISTRY) == NAMES, (tuple(_REGISTRY), NAMES)
    return _REGISTRY[name]


def every():
    return [get(n) for n in NAMES]


def flavors():
    """Every flavor name a suite may have, in the order reports show them."""
    return tuple(f for m in every() for f in m.FLAVORS)


def name_of(flavor):
    """The system that runs flavor (a name of flavors())."""
    for n in NAMES:
        if flavor in get(n).FLAVORS:
            return n
    raise KeyError(flavor)


def of(flavor):
    """The module of the system that runs flavor."""
    return get(name_of(flavor))


def settings(v, w, t, setting, what):
    """A peer's daemon table, t["daemon"] (what: what its settings are, for
    errors): a table of settings, a list of values being a scan over them,
    or a list of tables, a scan over those settings; each value parsed by
    setting(v, w, key, value)."""
    w = w + ("daemon",)
    daemon = v.typed(t.get("daemon", {}), (dict, list), w, f"a table of {what}")
    if isinstance(daemon, list):
        out = []
        for d in daemon:
            v.typed(d, dict, w, f"a list of tables of {what}")
            if any(isinstance(x, list) for x in d.values()):
                v.fail(w, "daemon: a list of tables gives each setting once; a table in it has a list")
            out.append({k: setting(v, w, k, x) for k, x in d.items()})
        return out
    return {k: [setting(v, w, k, x) for x in val] if isinstance(val, list) else setting(v, w, k, val)
            for k, val in daemon.items()}
