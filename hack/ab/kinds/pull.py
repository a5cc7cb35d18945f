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

Every flavour pulls with its system (ab.systems): stock and patched are
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

from .. import hosts, stats, suite, systems, units
from .. import timeline as ab_timeline
from ..measure import Progress, hyperfine
from ..report import PEERS, comparisons, fmt_ratio, fmt_v, keyed, label
from ..results import Cell
from . import Kind

# dockerd's default max-concurrent-downloads (ab.systems.dockerd)
DEFAULT_MCD = systems.get("dockerd").DEFAULTS["max-concurrent-downloads"]

KEYS = ("profile", "image", "warmup", "arms")
KEY_FIELDS = ()  # besides profile and image
SWITCHES = ("warmup",)  # warmup = 0 is no warm-up, in any suite
ARMS = ("learned", "fresh")
# What the patched daemon learned of each registry, in its data-root.
LEARNED_STATE = "registry-download-concurrency.json"
# A cold pull makes the registry send at least the image's bytes; this
# fraction of them leaves room for nothing but rounding.
COLD_FRACTION = 0.98
SCANS = True  # a daemon option given as a list: one variant per value
REPETITIONS = 3
SYSTEMS = ("dockerd", "containerd", "podman")  # what it measures (ab.systems)


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
    if _warmup(v, d):
        v.fail(("warmup",), "warmup: only pull suites have warm-up pulls")
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
    """Push the images, then per link: every variant of every flavour pulls
    each image cold, warm-up pulls first, then the repetitions, the
    flavours taking turns in each repetition's order."""
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
    variants = [(f, p, a) for f in s.flavours for p in s.flavours[f].variants()
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
    """A link as the suite configured it; "measured" is filled in per flavour."""
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
    registry) by flavour f with params (for patched, in arm): (its cell,
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
    system = systems.of(d.flavour)
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

def cell_name(e):
    return f"{e['profile']} / {e['image']}" + (" (patched: first contact)" if e.get("arm") == "fresh" else "")


def sections(doc):
    return [spread_table(doc), link_table(doc), timeline_table(doc), coldness_table(doc)]


def timeline_table(doc):
    """Each capped link's median pull per test host, as the registry saw
    it (ab.timeline; the files in the link's timeline directory)."""
    profiles = (doc.get("link") or {}).get("profiles") or {}
    rows = []
    for name, rec in profiles.items():
        for label, lrec in ((name, rec), (f"{name}, second registry", rec.get("second") or {})):
            for m in (lrec.get("timeline") or {}).get("medians", []):
                rows.append((label, lrec["timeline"]["dir"], m))
    if not rows:
        return ""
    lines = ["## Where the time goes at the registry", "",
             "Each test host's median pull (warm-ups included) as the capping proxy in front of the registry saw it: "
             "seconds from its first blob request; the most blob requests open at once, when that many were first "
             "and last open, and the tail after; the floors its bytes give at the link's rate and at the cap per "
             "connection times the most requests open. Every pull, and a plot of the median ones: the link's "
             "timeline.md and timeline.png.", "",
             "| link | test host | pulls | median pull | requests | ranges | connections | most open | first range | "
             "most open from | until | tail | link floor | cap floor |",
             "|" + " --- |" * 14]
    for label, sub, m in rows:
        lines.append("| " + " | ".join([f"{label} ([timeline]({sub}/timeline.md))", m["host"], str(m["pulls"])]
                                        + ab_timeline.cells(m, sent=False)) + " |")
    return "\n".join(lines) + "\n"


def link_table(doc):
    """Each link as the suite configured it and as it was measured: the round
    trip (ping) once it was up, the emulator's counters when it came down."""
    profiles = (doc.get("link") or {}).get("profiles") or {}
    if not profiles:
        return ""
    lines = ["## Links as configured and as measured", "",
             f"Backend: {doc['link'].get('backend', '-')}. Measured: the round trip to the registry once the "
             "link was up (median of 5 TCP handshakes); the congestion control the registry's end sent with (its "
             "route's); packets, loss and queue drops the emulator counted over the whole profile, both directions.", "",
             "| link | flavour | rtt configured | rtt measured | rate | loss configured | congestion | packets | "
             "lost (%) | queue drops |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    rows = []
    for name, rec in profiles.items():
        rows.append((name, rec))
        if rec.get("second"):
            rows.append((f"{name}, second registry", rec["second"]))
    for name, rec in rows:
        c = rec.get("configured") or {}
        for f, m in (rec.get("measured") or {}).items():
            em = m.get("emulator") or {}
            dirs = [v for k, v in em.items() if isinstance(v, dict) and "Packets" in v]
            pk = sum(v.get("Packets", 0) for v in dirs)
            lost = sum(v.get("Lost", 0) for v in dirs)
            drops = sum(v.get("QueueDrops", 0) for v in dirs)
            rate = c.get("rate_bits_per_s")
            rate = f"{rate / 1e6:g} Mbit/s" if rate else "unlimited"
            if c.get("registry_conn_rate_bits_per_s"):
                rate += f"; the registry {c['registry_conn_rate_bits_per_s'] / 1e6:g} Mbit/s per connection"
            lines.append("| {} | {} | {} ms | {} | {} | {}% | {} | {} | {} | {} |".format(
                name, f, units.plain(c.get("rtt_ms", 0)),
                f"{m['rtt_ms']:.1f} ms" if m.get("rtt_ms") is not None else "failed",
                rate, units.plain(c.get("loss_pct", 0)), congestion(c, m),
                pk if dirs else "-", f"{lost} ({100 * lost / max(1, pk + lost):.2f}%)" if dirs else "-",
                drops if dirs else "-"))
    return "\n".join(lines) + "\n"


def congestion(configured, measured):
    """The registry end's congestion control as the report shows it: as
    measured, and what was asked for where that differs; results from before
    the link set it say the machine's default was used."""
    want = configured.get("congestion")
    got = (measured.get("congestion") or {}).get("registry")
    if want is None:
        return "the machine's default"
    if got is None:
        return f"{want} (not read back)"
    return want if got == want else f"**{got}** (configured {want})"


def coldness_table(doc):
    """Per cell and variant: what the registry sent per measured pull against
    the image's bytes (a pull below COLD_FRACTION of them failed as warm)."""
    images = doc.get("images") or {}
    rows = [e for e in doc["results"] if e.get("served_bytes") and images.get(e.get("image"))]
    if not rows:
        return ""
    lines = ["## Cold pulls: bytes the registry sent", "",
             f"Per measured pull, the bytes the registry's end of the link sent, against the image's layers. "
             f"A pull that moved less than {COLD_FRACTION:.0%} of them failed as not cold.", "",
             "| flavour | cell | params | image | sent per pull: median (min-max) | median / image |",
             "| --- | --- | --- | --- | --- | --- |"]
    profiles = (doc.get("link") or {}).get("profiles") or {}
    for e in rows:
        # two registries: the image from each
        total = images[e["image"]]["bytes"] * (2 if (profiles.get(e.get("profile")) or {}).get("second") else 1)
        # those of failed pulls are left out, as their times are
        sv = sorted(keyed(e, "served_bytes").values())
        if not sv:
            continue
        med = sv[len(sv) // 2]
        lines.append(f"| {e['flavor']} | {cell_name(e)} | {label(e['params'])} | {units.human_size(total)} | "
                     f"{units.human_size(med)} ({units.human_size(sv[0])}-{units.human_size(sv[-1])}) | "
                     f"{med / total:.3f} |")
    return "\n".join(lines) + "\n"


def spread_table(doc):
    """Pull scans, like seed 000's Table 1: per link and image, stock's best and
    worst setting, the difference (worst - best) / best, the seed's published
    difference where it gives one, and patched against both."""
    seed = (doc.get("seed") or {}).get("best_vs_worst_pct") or {}
    lines = ["| link | image | stock best | stock worst | worst vs best | seed: worst vs best | "
             "patched | patched/best [Holm CI] p | patched/default 3 [Holm CI] p |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    mcd = lambda e: (e["params"] or {}).get("max-concurrent-downloads", DEFAULT_MCD)
    for r in comparisons(doc):
        b, w, ps = r.get("stock_best"), r.get("stock_worst"), r["patched"]
        if not b:
            continue
        prof, img = r["key"][0], r["key"][1]
        sp = seed.get(prof, {}).get(img) if isinstance(seed.get(prof), dict) else None
        dflt = mcd(r["stock_default"]["entry"]) == DEFAULT_MCD
        lines.append("| {} | {} | {} s (c={}) | {} s (c={}) | {:.0f}% | {} | {} | {} | {} |".format(
            prof, img + (" (patched: first contact)" if r.get("arm") == "fresh" else ""), fmt_v(b["median"], "s"), mcd(b["entry"]), fmt_v(w["median"], "s"), mcd(w["entry"]),
            100 * (w["median"] - b["median"]) / b["median"],
            f"{sp:.2f}%" if isinstance(sp, (int, float)) else "-",
            f"{fmt_v(ps['median'], 's')} s" if ps else "-",
            fmt_ratio(r["vs_best"], True) if ps else "-",
            fmt_ratio(r["vs_default"], True) if ps and dflt else "-"))
    if len(lines) == 2:
        return ""
    note = seed.get("note", "")
    return "\n".join(["## Best vs worst concurrency (seed 000, Table 1)", "",
                      "Stock's fastest and slowest max-concurrent-downloads per cell (medians), and the patched "
                      "daemon with its defaults." + (f" Seed: {note}" if note else ""), ""] + lines) + "\n"


def plots(doc, outdir, plt):
    """pull.png: per link, stock's pull time against max-concurrent-downloads
    per image, patched's as a line."""
    res = doc["results"]
    profiles = sorted({e["profile"] for e in res}, key=lambda p: [e["profile"] for e in res].index(p))
    fig, axes = plt.subplots(1, len(profiles), figsize=(5 * len(profiles), 4), squeeze=False)
    for ax, prof in zip(axes[0], profiles):
        images = sorted({e["image"] for e in res if e["profile"] == prof})
        for i, img in enumerate(images):
            color = f"C{i}"
            sto = [e for e in res if e["profile"] == prof and e["image"] == img and e["flavor"] == "stock"]
            pts = []
            for e in sto:
                s = stats.summary(e["times_s"])
                if s:
                    pts.append(((e["params"] or {}).get("max-concurrent-downloads", DEFAULT_MCD), s))
            pts.sort(key=lambda x: x[0])
            if pts:
                xs = [p[0] for p in pts]
                ax.errorbar(xs, [p[1]["median"] for p in pts],
                            yerr=[[p[1]["median"] - p[1]["min"] for p in pts], [p[1]["max"] - p[1]["median"] for p in pts]],
                            marker="o", color=color, capsize=3, label=f"stock {img}")
            for e in res:
                if e["profile"] == prof and e["image"] == img and e["flavor"] == "patched":
                    s = stats.summary(e["times_s"])
                    if s:
                        ax.axhline(s["median"], color=color, linestyle="--", label=f"patched {img}")
            # each peer at its best setting (report.PEERS)
            for f in PEERS:
                scored = [(stats.summary(e["times_s"]), e) for e in res
                          if e["profile"] == prof and e["image"] == img and e["flavor"] == f]
                scored = [(s, e) for s, e in scored if s]
                if scored:
                    s, e = min(scored, key=lambda x: x[0]["median"])
                    ax.axhline(s["median"], color=color, linestyle=":",
                               label=f"{f} best {img} ({label(e['params'])})")
        ax.set_title(f"{doc['suite']}, link: {prof}")
        ax.set_xlabel("max-concurrent-downloads (stock)")
        ax.set_ylabel("cold pull time (s)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "pull.png"), dpi=120)
    return ["pull.png"]


def after_samples(doc):
    """The warm-up pulls, apart from the statistics."""
    warm = [e for e in doc["results"] if e.get("warmup_s")]
    if not warm:
        return []
    md = ["", "## Warm-up pulls (not in the statistics)", "",
          "Each variant's first pulls of each image over each link, before the measured ones.", "",
          "| flavour | cell | params | warm-up times |", "| --- | --- | --- | --- |"]
    for e in warm:
        md.append(f"| {e['flavor']} | {cell_name(e)} | {label(e['params'])} | "
                  f"{', '.join(fmt_v(x, 's') if x is not None else 'failed' for x in e['warmup_s'])} |")
    return md


KIND = Kind(name="pull", KEYS=KEYS, SWITCHES=SWITCHES, REPETITIONS=REPETITIONS, SYSTEMS=SYSTEMS, Suite=Suite,
            validate=validate, refuse=refuse, run=run, SCANS=SCANS, KEY_FIELDS=KEY_FIELDS,
            cell_name=cell_name, sections=sections, plots=plots, after_samples=after_samples)
