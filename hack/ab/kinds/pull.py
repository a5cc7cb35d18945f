"""kind = "pull": cold pulls of images of random layers from the registry,
over an emulated link (seed 000).

A cell is one [[profile]] (the link) and one [[image]]: profile and image
name them; scenario and container are null. A daemon option given as a list
(max-concurrent-downloads) is a scan: one cell per value.

Every measured pull is checked cold: the registry's side of the link must
have sent at least the image's bytes during it (served_bytes, recorded per
sample), else the sample fails. Before each pull the image and its content
are removed, kept-alive connections to the registry aborted, and the
kernel's TCP metrics cache flushed in both namespaces. A pull (its
preparation included) still running after the suite's sample_timeout is
ended and fails its repetition ("timeout after N s").

A [[profile]] with a [profile.second] table has two registries: the same
images, of other random bytes, come from a second registry (the registry at
its second address, hosts.REGISTRY2) over a link of their own, and every
pull pulls both at once: its time is until both are in. Stock's one
daemon-wide limit is shared by the two; the patched daemon's per-registry
limits are not. The coldness check holds for each link.

Every flavor pulls with its system (ab.systems): stock and patched are
dockerd hosts (docker pull), a peer pulls with its own client (containerd:
ctr image pull; podman: podman pull) in a test host of its own over the
same kind of link; the coldness checks, the link and the order are the same for all.
A peer's settings are a scan like stock's; the report puts patched against
each peer's best.

arms: the patched daemon learns per registry and keeps it on disk; arm
"learned" pulls with what it learned from the suite's earlier pulls
(warm-ups included), arm "fresh" pulls right after a restart with that
state removed (first contact), after which the learned state is put back.
A fresh cell has "arm": "fresh"; a learned one has no arm field."""
import contextlib
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field

from .. import hosts, suite, systems, units
from .. import timeline as ab_timeline
from ..measure import Progress, hyperfine
from ..results import Cell
from . import Kind
from .pull_report import COLD_FRACTION, after_samples, cell_name, plots, sections

KEYS = ("profile", "image", "warmup", "arms")
KEY_FIELDS = ()  # besides profile and image
SWITCHES = ("warmup",)  # warmup = 0 is no warm-up, in any suite
ARMS = ("learned", "fresh")
# What the patched daemon learned of each registry, in its data-root.
LEARNED_STATE = "registry-download-concurrency.json"
SCANS = True  # a daemon option given as a list: one variant per value
REPETITIONS = 3


@dataclass
class Profile:
    """The link between a test host and the registry, in the numbers
    hack/hosts/link.sh takes."""
    name: str
    rtt_ms: float = 0.0
    rate_bits_per_s: int = None  # None: as fast as the veth goes
    loss_pct: float = 0.0
    jitter_ms: float = 0.0
    queue: int = 1000  # packets
    # the registry caps each connection at this rate (a CDN's
    # per-connection limit): hack/hosts/faultreg.py in front of it; None: no cap
    conn_rate_bits_per_s: int = None
    # the TCP congestion control both ends send with over the link; a
    # namespace's own default is the machine's (bbr on some), and it decides
    # what loss costs one stream
    congestion: str = "cubic"
    # [profile.second]: the link to a second registry, pulled from at the
    # same time; None: one registry
    second: "Profile" = None


@dataclass
class Image:
    name: str
    layers: list  # sizes in bytes

    @property
    def total(self):
        return sum(self.layers)


@dataclass
class Suite(suite.Suite):
    profiles: list = field(default_factory=list)
    images: list = field(default_factory=list)
    warmup: int = 0  # untimed pulls per variant before each cell's repetitions
    arms: list = field(default_factory=lambda: ["learned"])  # the patched daemon's


# --- the suite file ---------------------------------------------------------

def validate(v, d, s):
    s.warmup = _warmup(v, d)
    if "arms" in d:
        arms = v.typed(d["arms"], list, ("arms",), f"a list of {', '.join(ARMS)}")
        bad = [a for a in arms if a not in ARMS]
        if bad or not arms or len(set(arms)) != len(arms):
            v.fail(("arms",), f"arms: want one or both of {', '.join(ARMS)}, each once; got {arms}")
        s.arms = list(arms)
    s.profiles = [profile(v, p, i) for i, p in enumerate(v.tables(d, "profile"))]
    s.images = [image(v, p, i) for i, p in enumerate(v.tables(d, "image"))]
    v.unique(s.profiles, "profile")
    v.unique(s.images, "image")


def refuse(v, d, kind):
    if "arms" in d:
        v.fail(("arms",), "arms: only pull suites measure the patched daemon in arms")
    if _warmup(v, d) and kind != "checkpoint":
        v.fail(("warmup",), "warmup: only pull and checkpoint suites have warm-ups")
    for k in ("profile", "image"):
        if k in d:
            v.fail((k, 0), f"[[{k}]] belongs to pull suites, not {kind}")


def _warmup(v, d):
    w = v.typed(d.get("warmup", 0), int, ("warmup",), "an integer >= 0")
    if w < 0:
        v.fail(("warmup",), "warmup: want an integer >= 0")
    return w


LINK_KEYS = ("rtt", "rate", "loss", "jitter", "queue", "conn_rate", "congestion")


def profile(v, p, i):
    w = ("profile", i)
    v.keys(p, w, ("name",) + LINK_KEYS + ("second",), ("name",), "[[profile]]")
    prof = Profile(name=v.typed(p["name"], str, w + ("name",), "a string"))
    link(v, p, w, prof)
    if "second" in p:
        sec = v.typed(p["second"], dict, w + ("second",), "a table of link keys")
        v.keys(sec, w + ("second",), LINK_KEYS, (), "[profile.second]")
        prof.second = Profile(name=prof.name + " (second registry)")
        link(v, sec, w + ("second",), prof.second)
    return prof


def link(v, p, w, prof):
    """A link's keys of table p (at w) into prof."""
    # parsed once, here: the link gets plain numbers (hosts.link_args)
    for k, attr, fn in (("rtt", "rtt_ms", units.milliseconds), ("rate", "rate_bits_per_s", units.bits_per_second),
                        ("loss", "loss_pct", units.percentage), ("jitter", "jitter_ms", units.milliseconds),
                        ("conn_rate", "conn_rate_bits_per_s", units.bits_per_second)):
        if k in p:
            setattr(prof, attr, fn(v.unit(fn, v.typed(p[k], str, w + (k,), "a string"), w + (k,))))
    if "queue" in p:
        prof.queue = v.typed(p["queue"], int, w + ("queue",), "packets, a non-negative integer")
    if "congestion" in p:
        cc = v.typed(p["congestion"], str, w + ("congestion",), "a congestion control's name, e.g. cubic")
        if not re.fullmatch(r"[a-z0-9_]+", cc):
            v.fail(w + ("congestion",), f"congestion: want a congestion control's name such as cubic or bbr, "
                                        f"got {cc!r}")
        prof.congestion = cc


def image(v, p, i):
    w = ("image", i)
    v.keys(p, w, ("name", "layers"), ("name", "layers"), "[[image]]")
    layers = v.typed(p["layers"], list, w + ("layers",), "a list of sizes")
    if not layers:
        v.fail(w + ("layers",), "layers: want at least one layer")
    sizes = [units.size(v.unit(units.size, x, w + ("layers",))) for x in layers]
    return Image(name=v.typed(p["name"], str, w + ("name",), "a string"), layers=sizes)


# --- the run ----------------------------------------------------------------

def run(r):
    """Push the images, then per link: every variant of every flavor pulls
    each image cold, warm-up pulls first, then the repetitions, the
    flavors taking turns in each repetition's order."""
    s = r.s
    refs, refs2 = {}, {}
    r.results.doc["images"] = {}
    two = any(p.second for p in s.profiles)
    for i, img in enumerate(s.images):
        sys.stderr.write(f"==> image {img.name}: {len(img.layers)} layers, {units.human_size(img.total)}, pushing\n")
        repo = "ab-pull/" + re.sub(r"[^a-z0-9]+", "-", img.name.lower()).strip("-")
        refs[img.name] = hosts.push_random_image(repo, "v1", img.layers, seed=i + 1)
        r.results.doc["images"][img.name] = {"ref": refs[img.name], "layers": img.layers, "bytes": img.total}
        if two:
            # other bytes, so that nothing of it is in the daemon already
            ref2 = hosts.push_random_image(repo + "-second", "v1", img.layers, seed=1000 + i + 1)
            refs2[img.name] = ref2.replace(hosts.REGISTRY, hosts.REGISTRY2, 1)
            r.results.doc["images"][img.name]["second_ref"] = refs2[img.name]
    variants = [(f, p, a) for f in s.flavors for p in s.flavors[f].variants()
                for a in (s.arms if f == "patched" else [None])]
    prog = Progress(len(s.profiles) * len(s.images) * s.repetitions * len(variants))
    backend = hosts.link_backend(s.link_backend)
    link = r.results.doc["link"] = {"backend": backend, "profiles": {}}
    for prof in s.profiles:
        rec = link["profiles"][prof.name] = link_record(prof)
        if prof.second:
            rec["second"] = link_record(prof.second)
        for f, d in r.daemons.items():
            hosts.link_up(d.host, prof, backend)
            # what the link does, as measured: the round trip now, the
            # emulator's counters when it comes down
            rec["measured"][f] = {"rtt_ms": hosts.link_rtt_ms(d.host), "congestion": hosts.link_congestion(d.host)}
            if prof.second:
                hosts.link_up(d.host, prof.second, backend, second=True)
                rec["second"]["measured"][f] = {"rtt_ms": hosts.link_rtt_ms(d.host, registry=hosts.REGISTRY2),
                                                "congestion": hosts.link_congestion(d.host, second=True)}
        r.results.save()
        prefs, prefs2 = dict(refs), {}
        with contextlib.ExitStack() as proxies:
            try:
                if prof.conn_rate_bits_per_s:
                    # the registry behind a proxy that caps each connection
                    proxies.enter_context(hosts.RegistryProxy(
                        ["--conn-rate", f"{prof.conn_rate_bits_per_s}bit"],
                        os.path.join(r.tmp, f"proxy-{prof.name}.log")))
                    prefs = {k: ref.replace(hosts.REGISTRY, hosts.REGISTRY_PROXY, 1) for k, ref in refs.items()}
                if prof.second:
                    prefs2 = dict(refs2)
                    if prof.second.conn_rate_bits_per_s:
                        proxies.enter_context(hosts.RegistryProxy(
                            ["--conn-rate", f"{prof.second.conn_rate_bits_per_s}bit"],
                            os.path.join(r.tmp, f"proxy2-{prof.name}.log"), listen=hosts.REGISTRY2_PROXY))
                        prefs2 = {k: ref.replace(hosts.REGISTRY2, hosts.REGISTRY2_PROXY, 1) for k, ref in refs2.items()}
                for img in s.images:
                    pull_image(r, variants, prof, img, prefs[img.name], prog, prefs2.get(img.name))
            finally:
                proxies.close()
                timeline(r, rec, prof, "", prof)
                if prof.second:
                    timeline(r, rec["second"], prof, "2", prof.second)
                for f, d in r.daemons.items():
                    counters = os.path.join(r.tmp, f"link-{f}.json")
                    hosts.link_down(d.host, stats_to=counters)
                    rec["measured"][f]["emulator"] = _read_json(counters)
                    if prof.second:
                        hosts.link_down(d.host, stats_to=counters, second=True)
                        rec["second"]["measured"][f]["emulator"] = _read_json(counters)
                    # what the daemon had learned of the registry by the end of
                    # this link's pulls (it carries into the next link's)
                    learned = _read_json(os.path.join(r.daemons[f].vardir(), "data", LEARNED_STATE))
                    if learned is not None:
                        rec.setdefault("learned", {})[f] = learned
                r.results.save()


def timeline(r, rec, prof, n, link):
    """Where each pull's time went at the registry (ab.timeline), from the
    log of the proxy a capped link puts in front of it: the files in
    timeline<n>-<profile>/ of the results, each host's median pull in rec.
    A log that cannot be read is said, and fails nothing."""
    log = os.path.join(r.tmp, f"proxy{n}-{prof.name}.log")
    if not link.conn_rate_bits_per_s or not os.path.exists(log):
        return
    sub = f"timeline{n}-{prof.name}"
    try:
        rows = ab_timeline.read(log, link.rate_bits_per_s, link.conn_rate_bits_per_s)
        ab_timeline.write(rows, log, os.path.join(r.out, sub), link.rate_bits_per_s, link.conn_rate_bits_per_s)
    except (OSError, ab_timeline.LogError) as e:
        print(f"    timeline of {log}: {e}", file=sys.stderr)
        return
    rec["timeline"] = {"dir": sub, "medians": ab_timeline.medians(rows)}


def link_record(prof):
    """A link as the suite configured it; "measured" is filled in per flavor."""
    rec = {"configured": {
        "rtt_ms": prof.rtt_ms, "rate_bits_per_s": prof.rate_bits_per_s, "loss_pct": prof.loss_pct,
        "jitter_ms": prof.jitter_ms, "queue_packets": prof.queue, "congestion": prof.congestion}, "measured": {}}
    if prof.conn_rate_bits_per_s:
        rec["configured"]["registry_conn_rate_bits_per_s"] = prof.conn_rate_bits_per_s
    return rec


def pull_image(r, variants, prof, img, ref, prog, ref2=None):
    s = r.s
    # Warm-up pulls, untimed by the verdict but kept: what a daemon
    # that has pulled from this registry before does differently
    # (the patched daemon learns per registry) shows from the
    # first measured pull on, and the warm-up times stay visible.
    for w in range(s.warmup):
        for f, params, arm in variants:
            cell, t, err, served = pull(r, f, params, arm, prof, img, ref, ref2)
            r.results.add(cell, None, f"warm-up: {err}" if err else None, rep=None,
                          warmup_s=round(t, 4) if t is not None else None, warmup_served_bytes=served)
            sys.stderr.write(f"    warm-up pull {prof.name}/{img.name} {f} {variant_label(params, arm)}: "
                             + (f"{t:.2f}s\n" if t is not None else f"FAILED {err}\n"))
    for rep in range(s.repetitions):
        for pos, (f, params, arm) in enumerate(r.interleave(variants, rep)):
            cell, t, err, served = pull(r, f, params, arm, prof, img, ref, ref2)
            r.results.add(cell, t, err, rep=rep, position=pos, served_bytes=served)
            prog.step(f"pull {prof.name}/{img.name} {f} {variant_label(params, arm)} rep {rep + 1}: "
                      + (f"{t:.2f}s" if t is not None else f"FAILED {err}"))


def _read_json(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return None


def pull(r, f, params, arm, prof, img, ref, ref2=None):
    """One cold pull of ref (and of ref2 at the same time, from the second
    registry) by flavor f with params (for patched, in arm): (its cell,
    seconds, error, bytes the registries sent)."""
    d = r.daemons[f]
    d.apply(params)
    cell = Cell(f, profile=prof.name, image=img.name, params=params,
                kind_fields={"arm": arm} if arm == "fresh" else {})
    if arm == "fresh":
        return (cell,) + first_contact(r, d, lambda: timed_pull(r, d, img, ref, ref2))
    return (cell,) + timed_pull(r, d, img, ref, ref2)


def timed_pull(r, d, img, ref, ref2=None):
    """(seconds, error, bytes the registries sent) of one cold pull by d."""
    # Cold: no image, no content, no kept-alive connection to the registry
    # from an earlier pull (ss -K aborts them), nothing the kernel learned of
    # the path (TCP metrics). A preparation that fails (the image still
    # there, prune, ss or ip failing) fails the sample: hyperfine stops when
    # --prepare does, and the pull is not timed warm.
    # The pull and the removal are the system's (ab.systems: docker pull,
    # ctr image pull, podman pull); the rest is the same for every system.
    system = systems.of(d.flavor)
    refs = [x for x in (ref, ref2) if x]
    cold = system.cold_command(d, refs)
    for reg in (hosts.REGISTRY, hosts.REGISTRY2) if ref2 else (hosts.REGISTRY,):
        cold += f" && nsenter --net={d.netns()} ss -K dst {reg.split(':')[0]} >/dev/null"
    cold += f" && {hosts.flush_tcp_metrics_cmd(d.host)}"
    links = [False, True] if ref2 else [False]
    before = [hosts.served_bytes(d.host, second=x) for x in links]
    # a pull that hangs (a stalled registry connection) is ended at the
    # suite's sample_timeout and fails its repetition
    t, err = hyperfine(r.tmp, d.env, system.pull_command(d, refs), prepare=cold, failed="hyperfine failed",
                       timeout=r.s.sample_timeout)
    sent = [hosts.served_bytes(d.host, second=x) - b for x, b in zip(links, before)]
    for x, n in zip(links, sent):
        if t is not None and n < COLD_FRACTION * img.total:
            t, err = None, (f"not cold: the {'second ' if x else ''}registry sent {units.human_size(n)} during "
                            f"the pull, the image is {units.human_size(img.total)}")
    return t, err, sum(sent)


def first_contact(r, d, pull_fn):
    """pull_fn() on d restarted without what it learned of registries, then
    d restarted with that state back: (seconds, error, served)."""
    state = os.path.join(d.vardir(), "data", LEARNED_STATE)
    aside = os.path.join(r.tmp, "learned-" + LEARNED_STATE)

    def forget():
        if os.path.exists(aside):
            os.remove(aside)
        if os.path.exists(state):
            shutil.move(state, aside)

    def put_back():
        if os.path.exists(state):
            os.remove(state)
        if os.path.exists(aside):
            shutil.move(aside, state)
    try:
        d.restart(forget)
    except hosts.HostError as e:
        return None, f"restart for first contact: {e}", 0
    try:
        if os.path.exists(state):
            return None, f"the daemon kept {LEARNED_STATE} across the wipe", 0
        return pull_fn()
    finally:
        d.restart(put_back)


def params_label(p):
    return ",".join(f"{k}={v}" for k, v in sorted(p.items())) or "defaults"


def variant_label(params, arm):
    return params_label(params) + (" first contact" if arm == "fresh" else "")


# --- the report -------------------------------------------------------------



KIND = Kind(name="pull", KEYS=KEYS, SWITCHES=SWITCHES, REPETITIONS=REPETITIONS, Suite=Suite,
            validate=validate, refuse=refuse, run=run, SCANS=SCANS, KEY_FIELDS=KEY_FIELDS,
            cell_name=cell_name, sections=sections, plots=plots, after_samples=after_samples)
