"""Checkpoint create/delete traces of the ZNS study (ab.zns): reading,
checking, writing and describing them, generating them, and recording them
from a patched daemon's log; and the names the study shares (the policies,
the cleaners). ab.zns imports them and gives them under its own name too."""
import collections
import csv
import datetime
import hashlib
import math
import random
import re
from dataclasses import dataclass, field

from . import units


HEADER = ["time_s", "op", "container", "checkpoint", "bytes"]
# The optional sixth column: the lifetime in seconds a create declares (its
# retention's interval times the checkpoints it keeps), the hint the
# lifetime-hint log places by; empty on deletes and where none is declared.
HINT = "hint_s"
OPS = ("create", "delete")
POLICIES = ("shared-log", "zone-aware", "multi-log", "zone-tail", "zone-pack", "hint-log", "oracle",
            "shared-log-idle", "multi-log-idle", "hint-log-idle", "oracle-idle")
CLEANERS = ("greedy", "cost-benefit")  # the logs' victim rules
MiB = 1 << 20


class TraceError(Exception):
    pass


# --- the trace -------------------------------------------------------------

@dataclass
class Event:
    time_s: float
    op: str
    container: str
    checkpoint: str
    bytes: int = 0
    line: int = 0  # in the trace file, for messages
    hint: float = 0.0  # the lifetime the create declares, seconds (0: none)

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
    hinted = [h.strip() for h in header] == HEADER + [HINT]
    if not hinted and [h.strip() for h in header] != HEADER:
        raise TraceError(f"{path}:1: bad header {','.join(header)!r} (want {','.join(HEADER)}, and optionally {HINT})")
    events, order = [], _Order(path)
    try:
        for row in rows:
            no = rows.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            e = _event(row, no, path, hinted)
            order.add(e)
            events.append(e)
    except csv.Error as e:
        raise TraceError(f"{path}:{rows.line_num}: {e}") from None
    return events


def check_order(events, path="<trace>"):
    """events, if they keep a trace's order (see _Order); each error names
    path and the event's line."""
    order = _Order(path)
    for e in events:
        order.add(e)
    return events


class _Order:
    """A trace's order: time never goes back, a create makes a checkpoint
    that does not exist, a delete ends one that does."""

    def __init__(self, path):
        self.path, self.live, self.last = path, set(), 0.0

    def add(self, e):
        where = f"{self.path}:{e.line}"
        if e.time_s < self.last:
            raise TraceError(f"{where}: time goes backwards ({e.time_s:g} after {self.last:g})")
        self.last = e.time_s
        if e.op == "create":
            if e.key in self.live:
                raise TraceError(f"{where}: create of {e.container}/{e.checkpoint}, which already exists")
            self.live.add(e.key)
        else:
            if e.key not in self.live:
                raise TraceError(f"{where}: delete of unknown checkpoint {e.container}/{e.checkpoint}")
            self.live.remove(e.key)


def _event(row, no, path, hinted=False):
    cols = HEADER + [HINT] if hinted else HEADER
    if len(row) != len(cols):
        raise TraceError(f"{path}:{no}: want {len(cols)} fields ({','.join(cols)}), got {len(row)}")
    t, op, container, checkpoint, size = (x.strip() for x in row[:5])
    hint = 0.0
    if hinted and row[5].strip():
        try:
            hint = float(row[5])
        except ValueError:
            hint = -1.0
        if not math.isfinite(hint) or hint < 0:
            raise TraceError(f"{path}:{no}: {HINT}: want a lifetime in seconds >= 0 (or nothing), got {row[5].strip()!r}")
        if op == "delete" and hint:
            raise TraceError(f"{path}:{no}: {HINT}: a delete takes no hint, got {row[5].strip()!r}")
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
    return Event(time_s, op, container, checkpoint, n, no, hint)


_LOG_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


CREATED, DELETED = 'msg="Checkpoint created"', 'msg="Checkpoint deleted"'


def logs_deletes(lines):
    """Whether a daemon's log has "Checkpoint deleted" lines (patched
    daemons log them since 0035): a trace from it then has its real
    deletes."""
    return any(DELETED in line for line in lines)


def _log_lines(lines):
    """[(time, line no, op, container, checkpoint, bytes)] of the "Checkpoint
    created" and "Checkpoint deleted" lines, in time order (lines of the same
    time in log order)."""
    out = []
    for no, line in enumerate(lines, 1):
        op = "create" if CREATED in line else "delete" if DELETED in line else None
        if op is None:
            continue
        f = {k: v.strip('"') for k, v in _LOG_FIELD.findall(line)}
        try:
            when = datetime.datetime.fromisoformat(f["time"].replace("Z", "+00:00"))
            if when.tzinfo is None:
                raise ValueError(f"time {f['time']!r} has no zone")
            size = int(f["written"] if "written" in f else f["memory"]) if op == "create" else 0
            out.append((when, no, op, f["container"][:12], f["checkpoint"], size))
        except (KeyError, ValueError) as e:
            if op == "create":
                raise TraceError(f"log line {no}: a \"Checkpoint created\" line without time, container, "
                                 f"checkpoint, or written or memory ({e})") from None
            raise TraceError(f"log line {no}: a \"Checkpoint deleted\" line without time, container or "
                             f"checkpoint ({e})") from None
    out.sort(key=lambda c: (c[0], c[1]))
    return out


def trace_from_log(lines, keep, together_s=1.0):
    """[Event] from a patched dockerd's log: a create for every "Checkpoint
    created" line (its container and checkpoint at its time since the
    first; its size the bytes written where a write cap logged them, else
    the container's memory usage, what CRIU dumps of it), creates within
    together_s of the group's first taken together (at its time), and a
    delete for every "Checkpoint deleted" line (a checkpoint deleted, or
    removed with its container), after the group it falls in, at its own
    time. A log without "Checkpoint deleted" lines (a daemon before 0035)
    gets deletes made up instead: after each group, those that keep each
    container's last `keep` checkpoints."""
    logged = _log_lines(lines)
    if not any(op == "create" for _, _, op, *_ in logged):
        raise TraceError("no \"Checkpoint created\" line in the log (a patched dockerd's, at info level)")
    real = any(op == "delete" for _, _, op, *_ in logged)
    t0 = next(when for when, _, op, *_ in logged if op == "create")
    kept = collections.defaultdict(collections.deque)  # made-up deletes: container -> names, oldest first
    live = collections.defaultdict(collections.deque)  # real deletes: (container, logged name) -> names, oldest first
    events, i, seen = [], 0, set()

    def since(when):
        return round(max(0.0, (when - t0).total_seconds()), 3)

    def target(no, c, cp):
        names = live.get((c, cp))
        if not names:
            raise TraceError(f"log line {no}: delete of unknown checkpoint {c}/{cp} "
                             "(none of that name created before it in the log)")
        return names.popleft()

    while i < len(logged):
        when, no, op, c, cp, n = logged[i]
        if op == "delete":
            events.append(Event(since(when), "delete", c, target(no, c, cp)))
            i += 1
            continue
        first = (when - t0).total_seconds()
        j = i + 1  # the group has its first create, whatever together_s is
        while j < len(logged) and (logged[j][0] - t0).total_seconds() - first < together_s:
            j += 1
        t, later = since(when), []
        for when, no, op, c, cp, n in logged[i:j]:
            if op == "delete":
                # After the group's creates, which are all at its time.
                later.append(Event(since(when), "delete", c, target(no, c, cp)))
                continue
            name = cp
            if real:
                while name in live[(c, cp)]:  # the same name while one lives (in another directory)
                    name += "+"
                live[(c, cp)].append(name)
            else:
                while (c, name) in seen:  # the same name again: a later checkpoint of that name
                    name += "+"
                seen.add((c, name))
                kept[c].append(name)
            events.append(Event(t, "create", c, name, max(1, n)))
        events += later
        if not real:
            for c in sorted(kept):
                while len(kept[c]) > keep:
                    events.append(Event(t, "delete", c, kept[c].popleft()))
        i = j
    return events


def write_trace(path, events):
    """The trace as CSV; with the hint column only if an event has a hint."""
    hinted = any(e.hint for e in events)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER + [HINT] if hinted else HEADER)
        for e in events:
            row = [f"{e.time_s:.6f}".rstrip("0").rstrip("."), e.op, e.container, e.checkpoint,
                   e.bytes if e.op == "create" else ""]
            if hinted:
                row.append(f"{e.hint:g}" if e.hint else "")
            w.writerow(row)


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
