"""kind = "pull": cold pulls of images of random layers from the registry,
over an emulated link (seed 000).

A cell is one [[profile]] (the link) and one [[image]]: profile and image
name them; scenario and container are null. A daemon option given as a list
(max-concurrent-downloads) is a scan: one cell per value."""
from dataclasses import dataclass, field

from .. import suite, units

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
