"""Checkpoint placement on a zoned (ZNS) SSD, replayed from a trace.

A zone is written only at its write pointer and freed only by resetting all of
it. Checkpoint images of several containers appended to one shared log share
zones, so deleting one image leaves dead data in zones that still hold other
images' live data, and garbage collection has to copy (relocate) that live data
before it can reset the zone. Zone-aware placement gives every image zones of
its own (a fresh empty zone at the start, the last zone finished when it is
complete, all of them reset when it is deleted), so deleting whole images
relocates nothing. This module measures both on the same geometry and trace.

Two layers, as in ZenFS: `Device` knows zones and their rules and nothing else
(append at the write pointer, finish, reset, open and active limits), and the
placements above it know images, owners and lifetimes and nothing about the
device's internals. A placement that breaks a rule of the device gets a
DeviceError, so the replay doubles as a check of the placement.

    PYTHONPATH=hack python3 -m ab.zns --trace FILE [--zone-size 64MiB ...] [--json out.json]
    PYTHONPATH=hack python3 -m ab.zns gen-trace --out FILE [--rounds 48 ...]
    PYTHONPATH=hack python3 -m ab.zns trace-from-log patched-dockerd.log --out FILE [--keep 3]
"""
import argparse
import collections
import csv
import dataclasses
import datetime
import hashlib
import json
import math
import random
import re
import sys
from dataclasses import dataclass, field

from . import units
from .results import Cell

HEADER = ["time_s", "op", "container", "checkpoint", "bytes"]
OPS = ("create", "delete")
POLICIES = ("shared-log", "zone-aware", "multi-log", "zone-tail")
MiB = 1 << 20


class TraceError(Exception):
    pass


class DeviceError(Exception):
    """A placement broke a rule of the zoned device (a bug in the placement)."""


class NoSpace(Exception):
    """A write found no zone to go to: the image is reported as failed."""


# --- the trace -------------------------------------------------------------

@dataclass
class Event:
    time_s: float
    op: str
    container: str
    checkpoint: str
    bytes: int = 0
    line: int = 0  # in the trace file, for messages

    @property
    def key(self):
        return (self.container, self.checkpoint)


def read_trace(path):
    """CSV -> [Event], refusing anything a replay could misread: every error
    names the file and the line."""
    try:
        f = open(path, newline="")
    except OSError as e:
        raise TraceError(f"{path}: {e.strerror}") from None
    with f:
        return parse_trace(f, path)


def parse_trace(lines, path="<trace>"):
    rows = csv.reader(lines)
    try:
        header = next(rows)
    except StopIteration:
        raise TraceError(f"{path}:1: empty trace (want the header {','.join(HEADER)})") from None
    except csv.Error as e:
        raise TraceError(f"{path}:1: {e}") from None
    if [h.strip() for h in header] != HEADER:
        raise TraceError(f"{path}:1: bad header {','.join(header)!r} (want {','.join(HEADER)})")
    events, live, last = [], set(), 0.0
    try:
        for row in rows:
            no = rows.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            e = _event(row, no, path)
            if e.time_s < last:
                raise TraceError(f"{path}:{no}: time goes backwards ({e.time_s:g} after {last:g})")
            last = e.time_s
            if e.op == "create":
                if e.key in live:
                    raise TraceError(f"{path}:{no}: create of {e.container}/{e.checkpoint}, which already exists")
                live.add(e.key)
            else:
                if e.key not in live:
                    raise TraceError(f"{path}:{no}: delete of unknown checkpoint {e.container}/{e.checkpoint}")
                live.remove(e.key)
            events.append(e)
    except csv.Error as e:
        raise TraceError(f"{path}:{rows.line_num}: {e}") from None
    return events


def _event(row, no, path):
    if len(row) != len(HEADER):
        raise TraceError(f"{path}:{no}: want {len(HEADER)} fields ({','.join(HEADER)}), got {len(row)}")
    t, op, container, checkpoint, size = (x.strip() for x in row)
    try:
        time_s = float(t)
    except ValueError:
        raise TraceError(f"{path}:{no}: time_s: {t!r} is not a number") from None
    if not math.isfinite(time_s) or time_s < 0:
        raise TraceError(f"{path}:{no}: time_s: want a time >= 0, got {t!r}")
    if op not in OPS:
        raise TraceError(f"{path}:{no}: unknown op {op!r} (want create or delete)")
    if not container or not checkpoint:
        raise TraceError(f"{path}:{no}: container and checkpoint must not be empty")
    if op == "delete":
        if size not in ("", "0"):
            raise TraceError(f"{path}:{no}: bytes: a delete takes no size (empty or 0), got {size!r}")
        return Event(time_s, op, container, checkpoint, 0, no)
    try:
        n = int(size)
    except ValueError:
        raise TraceError(f"{path}:{no}: bytes: {size!r} is not a whole number of bytes") from None
    if n < 0:
        raise TraceError(f"{path}:{no}: bytes: negative size {n}")
    if n == 0:
        raise TraceError(f"{path}:{no}: bytes: a create of 0 bytes (a checkpoint image is never empty)")
    return Event(time_s, op, container, checkpoint, n, no)


_LOG_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def trace_from_log(lines, keep, together_s=1.0):
    """[Event] from a patched dockerd's log: a create for every "Checkpoint
    created" line (its container and checkpoint at its time since the
    first; its size the bytes written where a write cap logged them, else
    the container's memory usage, what CRIU dumps of it), creates within
    together_s of the group's first taken
    together (at its time), and after each group the deletes that keep each
    container's last `keep` checkpoints (the daemon does not log deletes)."""
    created = []
    for no, line in enumerate(lines, 1):
        if 'msg="Checkpoint created"' not in line:
            continue
        f = {k: v.strip('"') for k, v in _LOG_FIELD.findall(line)}
        try:
            when = datetime.datetime.fromisoformat(f["time"].replace("Z", "+00:00"))
            size = int(f["written"] if "written" in f else f["memory"])
            created.append((when, f["container"][:12], f["checkpoint"], size))
        except (KeyError, ValueError) as e:
            raise TraceError(f"log line {no}: a \"Checkpoint created\" line without time, container, "
                             f"checkpoint, or written or memory ({e})") from None
    if not created:
        raise TraceError("no \"Checkpoint created\" line in the log (a patched dockerd's, at info level)")
    created.sort(key=lambda c: c[0])
    t0 = created[0][0]
    kept = collections.defaultdict(collections.deque)
    events, i, seen = [], 0, set()
    while i < len(created):
        first = (created[i][0] - t0).total_seconds()
        j = i
        while j < len(created) and (created[j][0] - t0).total_seconds() - first < together_s:
            j += 1
        t = round(first, 3)
        for _, c, cp, n in created[i:j]:
            name = cp
            while (c, name) in seen:  # the same name again: a later checkpoint of that name
                name += "+"
            seen.add((c, name))
            events.append(Event(t, "create", c, name, max(1, n)))
            kept[c].append(name)
        for c in sorted(kept):
            while len(kept[c]) > keep:
                events.append(Event(t, "delete", c, kept[c].popleft()))
        i = j
    return events


def write_trace(path, events):
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        for e in events:
            w.writerow([f"{e.time_s:.6f}".rstrip("0").rstrip("."), e.op, e.container, e.checkpoint,
                        e.bytes if e.op == "create" else ""])


def describe_trace(events):
    creates = [e for e in events if e.op == "create"]
    return {"events": len(events), "creates": len(creates), "deletes": len(events) - len(creates),
            "bytes": sum(e.bytes for e in creates), "containers": list(dict.fromkeys(e.container for e in events)),
            "duration_s": events[-1].time_s - events[0].time_s if events else 0.0}


def trace_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@dataclass
class TraceParams:
    """The default trace: memory holders sized like the checkpoint suites,
    checkpointed together every `interval_s` (as in seed 001), each keeping its
    last `keep` checkpoints. `skip` is the chance that a container misses a
    round (busy, or its checkpoint failed): its older checkpoints then outlive
    their round's, which is what spreads lifetimes in a shared log."""
    containers: list = field(default_factory=lambda: ["16MiB", "64MiB", "128MiB", "256MiB", "512MiB"])
    interval_s: float = 300.0
    rounds: int = 48
    keep: int = 2
    jitter: float = 0.05  # image size varies by up to this fraction of the memory held
    overhead: int = 512 << 10  # CRIU's images besides the memory pages
    skip: float = 0.1
    rng_seed: int = 1


def generate(p):
    """TraceParams -> [Event], the same for the same parameters."""
    rng = random.Random(p.rng_seed)
    kept = {c: collections.deque() for c in p.containers}
    events = []
    for r in range(p.rounds):
        t = r * p.interval_s
        cp = f"cp{r}"
        for c in p.containers:
            if r and rng.random() < p.skip:
                continue
            mem = units.size(c)
            size = int(mem * (1 + rng.uniform(-p.jitter, p.jitter))) + p.overhead
            events.append(Event(t, "create", c, cp, max(1, size)))
            kept[c].append(cp)
        # Older checkpoints go only once the new ones exist.
        for c in p.containers:
            while len(kept[c]) > p.keep:
                events.append(Event(t, "delete", c, kept[c].popleft()))
    return events


# --- the device ------------------------------------------------------------

@dataclass
class Geometry:
    zone_size: int = 64 * MiB
    zone_capacity: int = 64 * MiB  # writable bytes of a zone, <= zone_size
    zones: int = 32
    max_open: int = 8  # 0: no limit (as sysfs reports it)
    max_active: int = 8  # 0: no limit
    block: int = 4096

    def problems(self):
        """[(field, message)]: why this is no device."""
        out = []
        if self.block < 512 or self.block & (self.block - 1):
            out.append(("block", f"want a power of two >= 512 bytes, got {self.block}"))
        for k in ("zone_size", "zone_capacity"):
            v = getattr(self, k)
            if v <= 0 or (self.block > 0 and v % self.block):
                out.append((k, f"want a positive multiple of the block size ({self.block}), got {v}"))
        if self.zone_capacity > self.zone_size:
            out.append(("zone_capacity", f"capacity {units.human_size(self.zone_capacity)} exceeds "
                                         f"the zone size {units.human_size(self.zone_size)}"))
        if self.zones < 1:
            out.append(("zones", f"want at least one zone, got {self.zones}"))
        for k in ("max_open", "max_active"):
            v = getattr(self, k)
            if v < 0 or v > self.zones:
                out.append((k, f"want 0 (no limit) to {self.zones} zones, got {v}"))
        if self.max_open and self.max_active and self.max_open > self.max_active:
            out.append(("max_open", f"{self.max_open} open zones exceed {self.max_active} active ones "
                                    "(an open zone is active)"))
        return out

    @property
    def capacity(self):
        return self.zones * self.zone_capacity

    def padded(self, n):
        """Bytes a write of n takes on the device: whole blocks."""
        return -(-n // self.block) * self.block

    def describe(self):
        lim = lambda n: str(n) if n else "no limit"
        cap = "" if self.zone_capacity == self.zone_size else f", capacity {units.human_size(self.zone_capacity)}"
        return (f"{self.zones} zones of {units.human_size(self.zone_size)}{cap} "
                f"({units.human_size(self.zones * self.zone_size)} namespace, "
                f"{units.human_size(self.capacity)} writable); max open {lim(self.max_open)}, "
                f"max active {lim(self.max_active)}; {self.block}-byte blocks")


EMPTY, OPEN, CLOSED, FULL = "empty", "open", "closed", "full"


@dataclass
class Zone:
    index: int
    state: str = EMPTY
    wp: int = 0  # bytes written since the last reset


class Device:
    """A zoned namespace's rules and nothing else. A write goes to the write
    pointer and opens the zone; a zone is full when written to its capacity or
    finished, and empty again only by a reset. Open (and active: open or
    closed) zones are limited."""

    def __init__(self, g):
        self.g = g
        self.zones = [Zone(i) for i in range(g.zones)]
        self.resets = self.finishes = 0
        self.finished_unwritten = 0  # capacity given up by finishing zones early
        self.peak_open = self.peak_active = 0

    def count(self, *states):
        return sum(z.state in states for z in self.zones)

    def append(self, i, n):
        """Write n bytes at zone i's write pointer; returns where they went."""
        z = self.zones[i]
        if n <= 0 or n % self.g.block:
            raise DeviceError(f"zone {i}: a write of {n} bytes is not whole blocks of {self.g.block}")
        if z.state == FULL:
            raise DeviceError(f"zone {i}: write to a full zone")
        if z.wp + n > self.g.zone_capacity:
            raise DeviceError(f"zone {i}: write of {n} at {z.wp} crosses the zone capacity {self.g.zone_capacity}")
        if z.state == EMPTY and self.g.max_active and self.count(OPEN, CLOSED) >= self.g.max_active:
            raise DeviceError(f"zone {i}: opening it exceeds {self.g.max_active} active zones")
        if z.state != OPEN and self.g.max_open and self.count(OPEN) >= self.g.max_open:
            raise DeviceError(f"zone {i}: opening it exceeds {self.g.max_open} open zones")
        z.state = OPEN
        self.peak_open = max(self.peak_open, self.count(OPEN))
        self.peak_active = max(self.peak_active, self.count(OPEN, CLOSED))
        off = z.wp
        z.wp += n
        if z.wp == self.g.zone_capacity:
            z.state = FULL
        return off

    def close(self, i):
        """Give back zone i's open resource; it stays active until full or reset."""
        z = self.zones[i]
        if z.state != OPEN:
            raise DeviceError(f"zone {i}: close of a zone that is {z.state}")
        z.state = CLOSED

    def finish(self, i):
        """Give up the rest of zone i: it becomes full and stops counting as open."""
        z = self.zones[i]
        if z.state != FULL:
            z.state = FULL
            self.finishes += 1
            self.finished_unwritten += self.g.zone_capacity - z.wp

    def reset(self, i):
        z = self.zones[i]
        if z.state != EMPTY:
            self.resets += 1
        z.state, z.wp = EMPTY, 0


# --- placement -------------------------------------------------------------

@dataclass
class Extent:
    zone: int
    offset: int
    length: int


@dataclass
class Image:
    """One checkpoint image: where its bytes are and, while it is being
    written, how many are still to come."""
    container: str
    checkpoint: str
    bytes: int  # as in the trace
    padded: int  # whole blocks
    remaining: int = 0
    extents: list = field(default_factory=list)
    zones: list = field(default_factory=list)  # zone-aware: the zones it owns, in order


@dataclass
class Failure:
    time_s: float
    container: str
    checkpoint: str
    bytes: int
    reason: str


class Placement:
    """What both policies share: images, which zone holds which live bytes,
    whose data each zone holds, the counters. The policies decide where."""
    name = ""

    def __init__(self, g, chunk=MiB, gc_reserve=2):
        self.g = g
        self.dev = Device(g)
        self.chunk = chunk
        self.gc_reserve = gc_reserve
        self.images = {}  # (container, checkpoint) -> Image, the complete ones
        self.failures = []
        self.live = [0] * g.zones
        self.held = [{} for _ in range(g.zones)]  # zone -> {id(extent): (image, extent)}, in write order
        self.owners = [set() for _ in range(g.zones)]  # containers that wrote to the zone since its reset
        self.in_flight = []  # admitted images of the group being written
        self.host_bytes = self.relocated_bytes = self.gc_runs = 0
        self.stored_bytes = 0  # the trace's bytes of the images that were written whole
        self.now = 0.0

    # events
    def create_group(self, events):
        """Creates taken together: every image is a stream, and the streams'
        chunks are written round-robin, as concurrent writers' would arrive."""
        waiting = collections.deque()
        for e in events:
            self.now = e.time_s
            im = Image(e.container, e.checkpoint, e.bytes, self.g.padded(e.bytes))
            im.remaining = im.padded
            why = self.admit(im)
            if why:
                self.fail(im, why)
            else:
                waiting.append(im)
                self.in_flight.append(im)
        running = []
        while waiting or running:
            while waiting and len(running) < self.streams():
                running.append(waiting.popleft())
            for im in list(running):
                n = min(self.chunk, im.remaining)
                try:
                    self.put(im, n)
                except NoSpace as ex:
                    self.drop(im)
                    self.fail(im, str(ex))
                    running.remove(im)
                    self.in_flight.remove(im)
                    continue
                im.remaining -= n
                if not im.remaining:
                    self.complete(im)
                    self.images[(im.container, im.checkpoint)] = im
                    self.stored_bytes += im.bytes
                    running.remove(im)
                    self.in_flight.remove(im)

    def delete(self, e):
        self.now = e.time_s
        im = self.images.pop(e.key, None)
        if im is None:
            return  # its create failed: nothing of it is on the device
        self.drop(im)
        self.deleted(im)

    # policy hooks
    def admit(self, im):
        """Why im cannot be written (None: it can)."""
        return None

    def streams(self):
        """How many images may be written at once."""
        return math.inf

    def put(self, im, n):
        raise NotImplementedError

    def complete(self, im):
        pass

    def deleted(self, im):
        pass

    # bookkeeping
    def write(self, im, zone, n, gc=False):
        off = self.dev.append(zone, n)
        last = im.extents[-1] if im.extents else None
        if last and last.zone == zone and last.offset + last.length == off:
            last.length += n
        else:
            last = Extent(zone, off, n)
            im.extents.append(last)
            self.held[zone][id(last)] = (im, last)
        self.live[zone] += n
        self.owners[zone].add(im.container)
        if gc:
            self.relocated_bytes += n
        else:
            self.host_bytes += n

    def drop(self, im):
        """im's bytes are dead: they stay in their zones until a reset."""
        for x in im.extents:
            self.live[x.zone] -= x.length
            del self.held[x.zone][id(x)]
        im.extents = []

    def reset(self, zone):
        if self.live[zone]:
            raise DeviceError(f"zone {zone}: reset with {self.live[zone]} live bytes")
        self.dev.reset(zone)
        self.owners[zone].clear()

    def fail(self, im, why):
        self.failures.append(Failure(self.now, im.container, im.checkpoint, im.bytes, why))

    def empty_zones(self):
        return [z.index for z in self.dev.zones if z.state == EMPTY]

    def mixed_zones(self):
        return sum(len(o) > 1 for o in self.owners)


class ZoneAware(Placement):
    """Every image in zones of its own: a fresh empty zone to start, the last
    one finished when the image is complete, all of them reset when it is
    deleted. Each image being written holds one open zone, so no more images
    than the device's open (and active) limit are written at once; the rest
    wait for a turn."""
    name = "zone-aware"

    def __init__(self, g, chunk=MiB, gc_reserve=2):
        super().__init__(g, chunk, gc_reserve)
        self.promised = set()  # empty zones set aside for images not yet written

    def admit(self, im):
        need = -(-im.padded // self.g.zone_capacity)
        free = [z for z in self.empty_zones() if z not in self.promised]
        if need > len(free):
            return f"device full: needs {need} empty zones, {len(free)} left"
        im.zones = free[:need]
        self.promised.update(im.zones)
        return None

    def streams(self):
        limits = [x for x in (self.g.max_open, self.g.max_active) if x]
        return min(limits) if limits else math.inf

    def put(self, im, n):
        while n:
            z = next(z for z in im.zones if self.dev.zones[z].state != FULL)
            k = min(n, self.g.zone_capacity - self.dev.zones[z].wp)
            self.write(im, z, k)
            n -= k

    def complete(self, im):
        for z in im.zones:
            self.dev.finish(z)
        self.promised.difference_update(im.zones)

    def deleted(self, im):
        for z in im.zones:
            self.reset(z)


class SharedLog(Placement):
    """One append log for everything, zones filled in order, all containers'
    chunks interleaved. A delete only makes bytes dead. When a new zone is
    needed and no more than `gc_reserve` empty zones are left, greedy garbage
    collection takes the full zone with the least live data, appends its live
    bytes at the log head and resets it. The reserve is for the collector:
    host writes never take it, and images that would not fit beside the live
    data outside it fail up front."""
    name = "shared-log"

    def __init__(self, g, chunk=MiB, gc_reserve=2):
        super().__init__(g, chunk, gc_reserve)
        self.head = None

    def admit(self, im):
        usable = (self.g.zones - self.gc_reserve) * self.g.zone_capacity
        need = sum(self.live) + sum(x.remaining for x in self.in_flight) + im.padded
        if need > usable:
            return (f"device full: {units.human_size(need)} live with it, "
                    f"{units.human_size(usable)} outside the GC reserve")
        return None

    def put(self, im, n):
        self.append(im, n, gc=False)

    def append(self, im, n, gc):
        while n:
            if self.head is None or self.dev.zones[self.head].state == FULL:
                if not gc:
                    self.collect()  # which may itself open the next head
                if self.head is None or self.dev.zones[self.head].state == FULL:
                    self.head = self.take_zone(gc)
            k = min(n, self.g.zone_capacity - self.dev.zones[self.head].wp)
            self.write(im, self.head, k, gc)
            n -= k

    def take_zone(self, gc):
        empty = self.empty_zones()
        if not gc and len(empty) <= self.gc_reserve:
            raise NoSpace(f"device full: no empty zone outside the GC reserve of {self.gc_reserve}")
        if not empty:
            raise NoSpace("device full: the collector found no empty zone")
        return empty[0]

    def collect(self):
        while len(self.empty_zones()) <= self.gc_reserve:
            v = self.victim()
            if v is None:
                return
            self.relocate(v)

    def victim(self):
        full = [z.index for z in self.dev.zones if z.state == FULL]
        if not full:
            return None
        v = min(full, key=lambda z: (self.live[z], z))
        gc_head = self.gc_head()
        room = len(self.empty_zones()) * self.g.zone_capacity
        if gc_head is not None and self.dev.zones[gc_head].state != FULL:
            room += self.g.zone_capacity - self.dev.zones[gc_head].wp
        if self.live[v] >= self.g.zone_capacity or self.live[v] > room:
            return None
        return v

    def gc_head(self):
        """The zone the collector appends to, if any."""
        return self.head

    def relocate(self, v):
        self.gc_runs += 1
        for im, x in list(self.held[v].values()):
            im.extents = [e for e in im.extents if e is not x]
            del self.held[v][id(x)]
            self.live[v] -= x.length
            self.append(im, x.length, gc=True)
        self.reset(v)
        self.head_reset(v)

    def head_reset(self, v):
        """Zone v was reset: no head stays on it."""
        if self.head == v:
            self.head = None


class MultiLog(SharedLog):
    """The shared log with several heads: each container's images are
    appended at a head of their own (containers are dealt to `heads` heads
    in the order they first write, so with as many heads as containers no
    zone mixes two of them), and the collector appends what it relocates
    at a head of its own, as ZenFS separates data by lifetime into open
    zones. Every head holds one open zone, so heads + 1 is at most the
    device's open (and active) limit; `heads` 0 takes the most the limit
    allows. Greedy collection, its reserve and the admission are the shared
    log's."""
    name = "multi-log"

    def __init__(self, g, chunk=MiB, gc_reserve=2, heads=0):
        super().__init__(g, chunk, gc_reserve)
        self.nheads = heads or max_heads(g)
        self.heads = {}  # "gc" or a head's number -> its zone
        self.dealt = {}  # container -> its head's number

    def head_of(self, im, gc):
        if gc:
            return "gc"
        if im.container not in self.dealt:
            self.dealt[im.container] = len(self.dealt) % self.nheads
        return self.dealt[im.container]

    def append(self, im, n, gc):
        key = self.head_of(im, gc)
        while n:
            z = self.heads.get(key)
            if z is None or self.dev.zones[z].state == FULL:
                if not gc:
                    self.collect()  # which may itself take zones
                z = self.heads.get(key)
                if z is None or self.dev.zones[z].state == FULL:
                    z = self.heads[key] = self.take_zone(gc)
            k = min(n, self.g.zone_capacity - self.dev.zones[z].wp)
            self.write(im, z, k, gc)
            n -= k

    def gc_head(self):
        return self.heads.get("gc")

    def head_reset(self, v):
        for k in [k for k, z in self.heads.items() if z == v]:
            del self.heads[k]


class ZoneTail(Placement):
    """Whole zones for the part of an image that fills whole zones, as
    zone-aware placement; the rest of it (its tail, less than a zone) is
    appended at a head shared by the container's checkpoints (containers
    dealt round-robin over a quarter of the open limit), so that tails that
    die in the order they were written share zones, and no image is rounded
    up to whole zones. A tail that does not fit in its head's room fills it
    and goes on in a new head zone. A zone is reset as soon as nothing in it
    is live; there is no collector and nothing is relocated."""
    name = "zone-tail"

    def __init__(self, g, chunk=MiB, gc_reserve=2):
        super().__init__(g, chunk, gc_reserve)
        limit = min([x for x in (g.max_open, g.max_active) if x] or [16])
        self.nheads = max(1, limit // 4)
        self.nstreams = max(1, limit - 2 * self.nheads)
        self.heads = {}  # head number -> its zone
        self.dealt = {}  # container -> head number
        self.room = {}  # head zone -> capacity not yet promised to a tail
        self.pending = collections.Counter()  # zone -> bytes promised to tails, not yet written
        self.promised = set()  # empty zones set aside for images being written

    def streams(self):
        return self.nstreams

    def admit(self, im):
        cap = self.g.zone_capacity
        whole, tail = divmod(im.padded, cap)
        slot = self.dealt.setdefault(im.container, len(self.dealt) % self.nheads)
        h = self.heads.get(slot)
        room = self.room[h] if h is not None else 0
        new_head = tail > room
        free = [z for z in self.empty_zones() if z not in self.promised]
        need = whole + (1 if new_head else 0)
        if need > len(free):
            return f"device full: needs {need} empty zones, {len(free)} left"
        im.zones = free[:whole]
        self.promised.update(im.zones)
        im.tail = []  # [(zone, bytes)]: where the tail goes, in order
        if tail:
            if room:
                im.tail.append((h, min(room, tail)))
            if new_head:
                if h is not None:
                    del self.room[h]  # full once its promised tails are written
                h = self.heads[slot] = free[whole]
                self.promised.add(h)
                self.room[h] = cap
                im.tail.append((h, tail - room))
            for z, n in im.tail:
                if z in self.room:
                    self.room[z] -= n
                self.pending[z] += n
        return None

    def put(self, im, n):
        while n:
            own = [z for z in im.zones if self.dev.zones[z].state != FULL]
            if own:
                z = own[0]
                k = min(n, self.g.zone_capacity - self.dev.zones[z].wp)
            else:
                z, want = im.tail[0]
                k = min(n, want)
                im.tail[0] = (z, want - k)
                if not im.tail[0][1]:
                    im.tail.pop(0)
                self.pending[z] -= k
                self.promised.discard(z)
            self.write(im, z, k)
            n -= k

    def complete(self, im):
        self.promised.difference_update(im.zones)

    def drop(self, im):
        zones = {x.zone for x in im.extents}
        super().drop(im)
        for z, n in getattr(im, "tail", []):  # a failed create: what it was promised is not coming
            self.pending[z] -= n
            zones.add(z)
        im.tail = []
        im.dropped = zones

    def deleted(self, im):
        for z in set(im.zones) | im.dropped:
            self.reset_if_dead(z)

    def reset_if_dead(self, z):
        zone = self.dev.zones[z]
        if self.live[z] or zone.state == EMPTY or self.pending[z]:
            return
        if z in self.room:  # the current head: it starts again empty
            for k in [k for k, v in self.heads.items() if v == z]:
                del self.heads[k]
            del self.room[z]
        self.reset(z)


def max_heads(g):
    """The most host heads a multi-head log can keep open beside the
    collector's on g (16 when the device sets no limit)."""
    limits = [x for x in (g.max_open, g.max_active) if x]
    return max(1, (min(limits) if limits else 17) - 1)


PLACEMENTS = {"shared-log": SharedLog, "zone-aware": ZoneAware, "multi-log": MultiLog, "zone-tail": ZoneTail}


def placement_problems(g, chunk, gc_reserve, heads=0):
    """[(key, message)]: why these placement parameters do not fit the geometry."""
    out = []
    if heads < 0 or heads > max_heads(g):
        out.append(("heads", f"want 0 (as many as the open limit allows) to {max_heads(g)} "
                             f"(the open limit less the collector's head), got {heads}"))
    if chunk <= 0 or chunk % g.block:
        out.append(("chunk", f"want a positive multiple of the block size ({g.block}), got {chunk}"))
    if not 1 <= gc_reserve < g.zones:
        out.append(("gc_reserve", f"want 1 to {g.zones - 1} zones, got {gc_reserve}"))
    return out


# --- the replay -------------------------------------------------------------

@dataclass
class Outcome:
    policy: str
    metrics: dict
    failures: list
    series: dict

    def entry(self, params, geometry=None):
        """A results.json entry (the fields every kind has, then the replay's);
        with the Geometry it was replayed on, entries of a scan say which."""
        geo = {"geometry": dataclasses.asdict(geometry)} if geometry else {}
        cell = Cell(self.policy, params=params, scenario="replay", kind_fields={"policy": self.policy, **geo})
        return cell.entry(times_s=[],
                          errors=[f"{f.time_s:g}s {f.container}/{f.checkpoint}: {f.reason}" for f in self.failures],
                          metrics=self.metrics, failures=[dataclasses.asdict(f) for f in self.failures],
                          series=self.series)


SERIES = ("t_s", "events", "live_bytes", "used_zones", "util_used", "util_total", "host_bytes",
          "relocated_bytes", "resets", "mixed_zones")


def groups(events):
    """Consecutive creates at the same time are one group (taken together);
    every delete is its own step."""
    i = 0
    while i < len(events):
        e = events[i]
        j = i + 1
        if e.op == "create":
            while j < len(events) and events[j].op == "create" and events[j].time_s == e.time_s:
                j += 1
        yield events[i:j]
        i = j


OCCUPANCY_SAMPLES = 120  # at most this many states of every zone kept for the occupancy map


def replay(events, g, policy, chunk=MiB, gc_reserve=2, heads=0, occupancy=False):
    """Run the trace through one placement; the state is sampled after every
    step (a delete, or a group of creates taken together). heads: the
    multi-head log's (0: as many as the device allows). occupancy: also
    keep every zone's state (live % of its capacity, -1 empty) at up to
    OCCUPANCY_SAMPLES steps spread over the trace, as series zone_t_s and
    zone_live_pct, for the occupancy map."""
    p = MultiLog(g, chunk, gc_reserve, heads) if policy == "multi-log" else PLACEMENTS[policy](g, chunk, gc_reserve)
    s = {k: [] for k in SERIES}
    zt, zl = [], []
    done = 0
    for grp in groups(events):
        if grp[0].op == "create":
            p.create_group(grp)
        else:
            p.delete(grp[0])
        done += len(grp)
        live = sum(p.live)
        used = g.zones - len(p.empty_zones())
        for k, v in (("t_s", grp[-1].time_s), ("events", done), ("live_bytes", live), ("used_zones", used),
                     ("util_used", round(live / (used * g.zone_capacity), 4) if used else None),
                     ("util_total", round(live / g.capacity, 4)), ("host_bytes", p.host_bytes),
                     ("relocated_bytes", p.relocated_bytes), ("resets", p.dev.resets),
                     ("mixed_zones", p.mixed_zones())):
            s[k].append(v)
        if occupancy:
            zt.append(grp[-1].time_s)
            zl.append([-1 if z.state == EMPTY else round(100 * p.live[z.index] / g.zone_capacity)
                       for z in p.dev.zones])
    if occupancy and zt:
        n = len(zt)
        keep = sorted({round(i * (n - 1) / (OCCUPANCY_SAMPLES - 1)) for i in range(OCCUPANCY_SAMPLES)}) \
            if n > OCCUPANCY_SAMPLES else range(n)
        s["zone_t_s"] = [zt[i] for i in keep]
        s["zone_live_pct"] = [zl[i] for i in keep]
    return Outcome(policy, metrics(p, s, events), p.failures, s)


def time_mean(ts, vs):
    """Mean of a state sampled at times ts, each value weighted by how long
    it held: states between rounds count, the moment between a round's
    creates and its deletes does not."""
    pairs = [(t1 - t0, v) for t0, t1, v in zip(ts, ts[1:], vs) if v is not None]
    span = sum(d for d, _ in pairs)
    if span <= 0:
        vals = [v for v in vs if v is not None]
        return round(sum(vals) / len(vals), 4) if vals else None
    return round(sum(d * v for d, v in pairs) / span, 4)


def metrics(p, s, events):
    used = [u for u in s["util_used"] if u is not None]
    creates = sum(e.op == "create" for e in events)
    return {
        "creates": creates, "deletes": len(events) - creates, "failed": len(p.failures),
        "stored_bytes": p.stored_bytes,
        "host_bytes": p.host_bytes, "relocated_bytes": p.relocated_bytes,
        "write_amplification": round((p.host_bytes + p.relocated_bytes) / p.host_bytes, 4) if p.host_bytes else None,
        "resets": p.dev.resets, "finishes": p.dev.finishes, "gc_runs": p.gc_runs,
        "finished_unwritten_bytes": p.dev.finished_unwritten,
        "mixed_zones_max": max(s["mixed_zones"], default=0), "mixed_zones_end": p.mixed_zones(),
        "util_used_min": min(used) if used else None,
        "util_used_mean": time_mean(s["t_s"], s["util_used"]),
        "util_total_mean": time_mean(s["t_s"], s["util_total"]),
        "util_total_max": max(s["util_total"], default=None),
        "peak_live_bytes": max(s["live_bytes"], default=0),
        "peak_open": p.dev.peak_open, "peak_active": p.dev.peak_active,
    }


def compare(events, g, policies=POLICIES, chunk=MiB, gc_reserve=2, heads=0):
    return [replay(events, g, pol, chunk, gc_reserve, heads) for pol in policies]


# --- presenting ------------------------------------------------------------

def gib(n):
    return f"{n / (1 << 30):.2f} GiB"


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


ROWS = (
    ("host written", lambda m: gib(m["host_bytes"])),
    ("relocated by GC", lambda m: gib(m["relocated_bytes"])),
    ("write amplification", lambda m: "-" if m["write_amplification"] is None else f"{m['write_amplification']:.3f}"),
    ("zone resets", lambda m: str(m["resets"])),
    ("mixed zones (max / end)", lambda m: f"{m['mixed_zones_max']} / {m['mixed_zones_end']}"),
    ("used-zone utilisation (min / mean)", lambda m: f"{pct(m['util_used_min'])} / {pct(m['util_used_mean'])}"),
    ("device utilisation (mean / max)", lambda m: f"{pct(m['util_total_mean'])} / {pct(m['util_total_max'])}"),
    ("peak open / active zones", lambda m: f"{m['peak_open']} / {m['peak_active']}"),
    ("failed creates", lambda m: f"{m['failed']} of {m['creates']}"),
)


def table(outcomes):
    """Policies side by side, one metric a line (for a terminal)."""
    w = max(len(r[0]) for r in ROWS)
    cols = [[fn(o.metrics) for _, fn in ROWS] for o in outcomes]
    cw = [max(len(o.policy), *(len(c) for c in col)) for o, col in zip(outcomes, cols)]
    lines = [" " * w + "".join(f"  {o.policy:>{n}}" for o, n in zip(outcomes, cw))]
    for i, (name, _) in enumerate(ROWS):
        lines.append(f"{name:<{w}}" + "".join(f"  {col[i]:>{n}}" for col, n in zip(cols, cw)))
    return "\n".join(lines)


# --- command line ----------------------------------------------------------

def _arg(fn):
    def parse(text):
        try:
            return fn(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["gen-trace"]:
            return gen_main(argv[1:])
        if argv[:1] == ["trace-from-log"]:
            return log_main(argv[1:])
        return replay_main(argv)
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def replay_main(argv):
    d = Geometry()
    p = argparse.ArgumentParser(prog="ab.zns", description="Replay a checkpoint trace on a zoned device under "
                                "shared-log, zone-aware and multi-head log placement. `ab.zns gen-trace --help`: the default trace.")
    p.add_argument("--trace", required=True, help="CSV: " + ",".join(HEADER))
    p.add_argument("--zone-size", type=_arg(units.size), default=d.zone_size)
    p.add_argument("--zone-capacity", type=_arg(units.size), default=d.zone_capacity)
    p.add_argument("--zones", type=int, default=d.zones)
    p.add_argument("--max-open", type=int, default=d.max_open, help="0: no limit")
    p.add_argument("--max-active", type=int, default=d.max_active, help="0: no limit")
    p.add_argument("--block", type=_arg(units.size), default=d.block)
    p.add_argument("--chunk", type=_arg(units.size), default=MiB, help="interleaving unit of concurrent images")
    p.add_argument("--gc-reserve", type=int, default=2, help="empty zones kept for the logs' collector")
    p.add_argument("--heads", type=int, default=0, help="the multi-head log's host heads (0: the open limit less one)")
    p.add_argument("--policy", action="append", choices=POLICIES, help="default: both")
    p.add_argument("--json", help="write the metrics and time series here")
    a = p.parse_args(argv)
    g = Geometry(zone_size=a.zone_size, zone_capacity=a.zone_capacity, zones=a.zones,
                 max_open=a.max_open, max_active=a.max_active, block=a.block)
    for k, msg in g.problems() + placement_problems(g, a.chunk, a.gc_reserve, a.heads):
        p.error(f"--{k.replace('_', '-')}: {msg}")
    events = read_trace(a.trace)
    outs = compare(events, g, a.policy or POLICIES, a.chunk, a.gc_reserve, a.heads)
    print(f"trace {a.trace}: {len(events)} events; device: {g.describe()}\n")
    print(table(outs))
    if a.json:
        doc = {"trace": dict(describe_trace(events), source=a.trace, sha256=trace_digest(a.trace)),
               "geometry": dataclasses.asdict(g), "placement": {"chunk": a.chunk, "gc_reserve": a.gc_reserve, "heads": a.heads},
               "results": [o.entry({"chunk": a.chunk, "gc_reserve": a.gc_reserve, "heads": a.heads}, g)
                           for o in outs]}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
    return 0


def log_main(argv):
    p = argparse.ArgumentParser(prog="ab.zns trace-from-log", description=trace_from_log.__doc__)
    p.add_argument("log", nargs="+", help="patched dockerd logs (the harness keeps patched-dockerd.log)")
    p.add_argument("--out", required=True)
    p.add_argument("--keep", type=int, default=3, help="checkpoints kept per container (default 3)")
    p.add_argument("--together", type=_arg(units.duration), default=1.0,
                   help="creates within this of each other are taken together (default 1s)")
    a = p.parse_args(argv)
    if a.keep < 1:
        p.error("--keep: want at least 1")
    lines = []
    for path in a.log:
        try:
            with open(path, errors="replace") as f:
                lines += f.readlines()
        except OSError as e:
            raise TraceError(f"{path}: {e.strerror}") from None
    events = trace_from_log(lines, a.keep, a.together)
    write_trace(a.out, events)
    info = describe_trace(events)
    print(f"{a.out}: {info['creates']} creates, {info['deletes']} deletes, {gib(info['bytes'])} over "
          f"{info['duration_s']:g} s")
    return 0


def gen_main(argv):
    d = TraceParams()
    p = argparse.ArgumentParser(prog="ab.zns gen-trace", description=TraceParams.__doc__)
    p.add_argument("--out", required=True)
    p.add_argument("--containers", default=",".join(d.containers), help="memory held, comma-separated")
    p.add_argument("--interval", type=_arg(units.duration), default=d.interval_s, help="e.g. 5m, 300s")
    p.add_argument("--rounds", type=int, default=d.rounds)
    p.add_argument("--keep", type=int, default=d.keep, help="checkpoints kept per container")
    p.add_argument("--jitter", type=_arg(units.percent), default=d.jitter, help="e.g. 5%%")
    p.add_argument("--skip", type=_arg(units.percent), default=d.skip, help="e.g. 10%%")
    p.add_argument("--overhead", type=_arg(units.size), default=d.overhead)
    p.add_argument("--seed", type=int, default=d.rng_seed)
    a = p.parse_args(argv)
    cs = [c.strip() for c in a.containers.split(",") if c.strip()]
    for c in cs:
        try:
            units.size(c)
        except ValueError as e:
            p.error(f"--containers: {e}")
    if not cs or len(set(cs)) != len(cs):
        p.error("--containers: want distinct memory sizes (each names its container)")
    if a.rounds < 1 or a.keep < 1:
        p.error("--rounds and --keep: want at least 1")
    if a.jitter >= 1 or a.skip >= 1:
        p.error("--jitter and --skip: want less than 100%")
    tp = TraceParams(containers=cs, interval_s=a.interval, rounds=a.rounds, keep=a.keep, jitter=a.jitter,
                     overhead=a.overhead, skip=a.skip, rng_seed=a.seed)
    events = generate(tp)
    write_trace(a.out, events)
    info = describe_trace(events)
    print(f"{a.out}: {info['creates']} creates, {info['deletes']} deletes, {gib(info['bytes'])} over "
          f"{info['duration_s']:g} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
