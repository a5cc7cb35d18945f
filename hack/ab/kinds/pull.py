"""kind = "pull": cold pulls of images of random layers from the registry,
over an emulated link (seed 000).

A cell is one [[profile]] (the link) and one [[image]]: profile and image
name them; scenario and container are null. A daemon option given as a list
(max-concurrent-downloads) is a scan: one cell per value."""
import re
import sys
from dataclasses import dataclass, field

from .. import hosts, suite, units
from ..measure import Progress, hyperfine, interleave
from ..results import Cell

KEYS = ("profile", "image", "warmup")
SWITCHES = ("warmup",)  # warmup = 0 is no warm-up, in any suite
REPETITIONS = 3


@dataclass
class Profile:
    """The link between a test host and the registry."""
    name: str
    rtt: str = "0ms"
    rate: str = ""
    loss: str = "0%"
    jitter: str = "0ms"
    queue: int = 1000


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


# --- the suite file ---------------------------------------------------------

def validate(v, d, s):
    s.warmup = _warmup(v, d)
    s.profiles = [profile(v, p, i) for i, p in enumerate(v.tables(d, "profile"))]
    s.images = [image(v, p, i) for i, p in enumerate(v.tables(d, "image"))]
    v.unique(s.profiles, "profile")
    v.unique(s.images, "image")


def refuse(v, d, kind):
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


def profile(v, p, i):
    w = ("profile", i)
    v.keys(p, w, ("name", "rtt", "rate", "loss", "jitter", "queue"), ("name",), "[[profile]]")
    prof = Profile(name=v.typed(p["name"], str, w + ("name",), "a string"))
    for k, fn in (("rtt", units.duration), ("rate", units.rate), ("loss", units.percent), ("jitter", units.duration)):
        if k in p:
            setattr(prof, k, v.unit(fn, v.typed(p[k], str, w + (k,), "a string"), w + (k,)))
    if "queue" in p:
        prof.queue = v.typed(p["queue"], int, w + ("queue",), "packets, a non-negative integer")
    return prof


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
    each image cold, warm-up pulls first, the repetitions in ABAB order."""
    s = r.s
    refs = {}
    for i, img in enumerate(s.images):
        sys.stderr.write(f"==> image {img.name}: {len(img.layers)} layers, {units.human_size(img.total)}, pushing\n")
        repo = "ab-pull/" + re.sub(r"[^a-z0-9]+", "-", img.name.lower()).strip("-")
        refs[img.name] = hosts.push_random_image(repo, "v1", img.layers, seed=i + 1)
    variants = [(f, p) for f in s.flavours for p in s.flavours[f].variants()]
    prog = Progress(len(s.profiles) * len(s.images) * s.repetitions * len(variants))
    backend = hosts.link_backend(s.link_backend)
    r.results.doc["link"] = {"backend": backend}
    for prof in s.profiles:
        for f in r.daemons:
            hosts.link_up(f, prof, backend)
        for img in s.images:
            # Warm-up pulls, untimed by the verdict but kept: what a daemon
            # that has pulled from this registry before does differently
            # (the patched daemon learns per registry) shows from the
            # first measured pull on, and the warm-up times stay visible.
            for w in range(s.warmup):
                for f, params in variants:
                    cell, t, err = pull(r, f, params, prof, img, refs[img.name])
                    r.results.add(cell, None, f"warm-up: {err}" if err else None,
                                  warmup_s=round(t, 4) if t is not None else None)
                    sys.stderr.write(f"    warm-up pull {prof.name}/{img.name} {f} {params_label(params)}: "
                                     + (f"{t:.2f}s\n" if t is not None else f"FAILED {err}\n"))
            for rep in range(s.repetitions):
                for f, params in interleave(variants, rep):
                    cell, t, err = pull(r, f, params, prof, img, refs[img.name])
                    r.results.add(cell, t, err)
                    prog.step(f"pull {prof.name}/{img.name} {f} {params_label(params)} rep {rep + 1}: "
                              + (f"{t:.2f}s" if t is not None else f"FAILED {err}"))


def pull(r, f, params, prof, img, ref):
    """One cold pull of ref by flavour f with params: (its cell, seconds, error)."""
    d = r.daemons[f]
    d.apply(params)
    # Cold: no image, no content, and no kept-alive connection to the
    # registry from an earlier pull (ss -K aborts them).
    cold = (f"docker rmi -f {ref} >/dev/null 2>&1; docker image prune -af >/dev/null 2>&1; "
            f"nsenter --net={d.netns()} ss -K dst {hosts.REGISTRY.split(':')[0]} >/dev/null 2>&1; true")
    t, err = hyperfine(r.tmp, d.env, f"docker pull -q {ref}", prepare=cold, failed="hyperfine failed")
    return Cell(f, profile=prof.name, image=img.name, params=params), t, err


def params_label(p):
    return ",".join(f"{k}={v}" for k, v in sorted(p.items())) or "defaults"
