"""kind = "checkpoint": docker checkpoint create of memory holders and
applications, alone, all together, and in growing groups (seed 001).

A cell is a scenario (alone, together, incremental) and a [[container]]:
scenario names the one, container the other's name, image its image; an
incremental step adds concurrent (how many were checkpointed at once). In
together, container BATCH is the whole group. Flavour "runc" is the floor:
runc checkpoint --image-path and fsync of a container of the same kind."""
import re
from dataclasses import dataclass, field

from .. import suite, units

KEYS = ("scenarios", "container", "leave_running", "restore", "floor")
SWITCHES = ("floor",)  # floor = false is no floor, in any suite
REPETITIONS = 3
SCENARIOS = ("alone", "together", "incremental")
# A [[container]]'s name names its containers (abcp-<name>), so it is a
# container name's tail.
CONTAINER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*")
# The result entry of a "together" group as a whole: from the requests to the
# last checkpoint done. No [[container]] can have this name.
BATCH = "(batch)"


@dataclass
class Container:
    name: str
    memory: int = 0  # bytes held by a memory holder
    image: str = ""  # or a real application image
    command: list = field(default_factory=list)


@dataclass
class Suite(suite.Suite):
    scenarios: list = field(default_factory=list)
    containers: list = field(default_factory=list)
    leave_running: bool = False
    restore: bool = False
    floor: bool = False  # also time runc checkpoint --image-path + fsync


# --- the suite file ---------------------------------------------------------

def validate(v, d, s):
    sc = v.typed(d.get("scenarios", ["alone"]), list, ("scenarios",), "a list")
    for x in sc:
        if x not in SCENARIOS:
            v.fail(("scenarios",), f"scenarios: '{x}' is not one of {', '.join(SCENARIOS)}")
    s.scenarios = sc
    s.containers = [container(v, c, i) for i, c in enumerate(v.tables(d, "container"))]
    v.unique(s.containers, "container")
    s.leave_running = v.typed(d.get("leave_running", False), bool, ("leave_running",), "true or false")
    s.restore = v.typed(d.get("restore", False), bool, ("restore",), "true or false")
    s.floor = v.typed(d.get("floor", False), bool, ("floor",), "true or false")


def refuse(v, d, kind):
    """leave_running and restore are let be (they do nothing elsewhere)."""
    if d.get("floor"):
        v.fail(("floor",), "floor: only checkpoint suites have the runc floor")
    for k in ("container", "scenarios"):
        if k in d:
            v.fail((k,) if k == "scenarios" else (k, 0), f"{k} belongs to checkpoint suites, not {kind}")


def container(v, c, i):
    w = ("container", i)
    v.keys(c, w, ("name", "memory", "image", "command"), ("name",), "[[container]]")
    ct = Container(name=v.typed(c["name"], str, w + ("name",), "a string"))
    if not CONTAINER_NAME.fullmatch(ct.name):
        v.fail(w + ("name",), f"{ct.name!r} cannot be part of a container name "
               "(letters, digits, '_', '.', '-'; a letter or digit first)")
    if ("memory" in c) == ("image" in c):
        v.fail(w, "[[container]] needs exactly one of 'memory' (a memory holder) or 'image'")
    if "memory" in c:
        ct.memory = units.size(v.unit(units.size, c["memory"], w + ("memory",)))
    else:
        ct.image = v.typed(c["image"], str, w + ("image",), "an image name")
        ct.command = v.typed(c.get("command", []), list, w + ("command",), "a list")
    return ct
