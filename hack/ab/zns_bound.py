"""An exact offline placement of a tiny trace on a zoned device: the bound
the ZNS study places its policies and its "oracle" against (issue 47,
item 3). hack/ab/zns_bound_run.py generates the traces, replays the
policies and writes the report; this module is the model.

The problem. A device of `zones` zones of `cap` units each (a unit is one
logical block of the replayer's device, so the model and the replay count
the same bytes); a trace cut into steps as the replayer cuts it (every group
of creates at the same time is one step, every delete one step of its own),
each create with its size in units (the replayer's block padding). A zone
has a write pointer: what is written to it since its last reset, live or
dead, counts against its capacity until the zone is reset; a zone is reset
only when it holds no live data; moving a unit of live data out of a zone
(so that it may be reset) writes it at another zone's write pointer and is
counted as a relocated unit. Every create must be stored in its step (zero
failed creates). Objective: the fewest relocated units; second question:
the fewest zones on which any placement stores every create.

What the model allows that the replayed policies cannot:

- It is offline: it knows every create and every delete of the trace in
  advance, and may place and relocate by that knowledge.
- It may relocate at every step, deletes included (a log's idle variant
  does that too; zone-pack relocates only on a create's path).
- It has no open or active zone limit (the replays are given
  max_open = max_active = zones, so they have none either, except for
  zone-pack's own split of the active zones into heads and streams), and
  no reserve (the replays run with --gc-reserve 0).
- It places units anywhere: an image may be split over any zones, in any
  proportion, and two images written at once need no stream of their own
  (the replay interleaves their chunks; here the chunk is a block too).

Simplifications against the replayer: time is the trace's steps only (no
latency, no bandwidth, no time model); a zone's condition (open, closed,
full) is not modelled, only its write pointer; finishing a zone is never
useful to it and is not offered; within a step the order of a relocation's
reads, writes and resets is the model's to choose, in rounds (below).

Three versions. Without relocation (relocate=False): every image stays
where it was written; a small model, and where it stores every create the
optimum is exactly 0 (optimum() tries it first). The other two bracket the
exact offline optimum under the rules where relocation is needed:

- strict (rounds=R): each step has R rounds; in a round the live units that
  move are read from their zones and written into zones that are not reset
  in that round, then the zones left with no live data may be reset; the
  step's creates are written in its last round, into any zone with room
  (one just reset included). Every solution is a schedule a host could run
  under the replayer's rules with one unit in flight, so its optimum is an
  upper bound of the exact optimum (which may need more rounds in a step).
- buffered (rounds=1, buffered=True): relocated units may be written into a
  zone reset in the same step, as if the host held them in memory while it
  reset their zone. Every schedule under the rules is one of these, so its
  optimum is a lower bound of the exact one, and of every policy's
  relocation where that policy fails no create on the same device. Its
  fewest zones is always ceil(peak / cap) (it can rewrite everything
  compactly at any step), the trivial bound; the strict version's fewest
  zones is the informative one.

The test (hack/ab/tests/test_zns_bound.py) checks both against `brute`,
an exhaustive search over one-unit operations under the rules (no rounds,
no buffer: the exact optimum) on instances of 2-3 zones, using only the
standard library; the solver is OR-Tools' CP-SAT (hack/ab/zns_bound-
requirements.txt pins it) and is imported only where a model is solved.
"""
import heapq
import math
from dataclasses import dataclass, field


@dataclass
class Instance:
    """steps: [("create", [(name, units), ...])] or [("delete", name)], in order."""
    cap: int
    steps: list = field(default_factory=list)
    name: str = ""

    def sizes(self):
        return {n: u for op, x in self.steps if op == "create" for n, u in x}

    def peak(self):
        """The most live units at once (after a step's creates, before later deletes)."""
        live, peak, size = 0, 0, self.sizes()
        for op, x in self.steps:
            live += sum(u for _, u in x) if op == "create" else -size[x]
            peak = max(peak, live)
        return peak

    def trivial_zones(self):
        return max(1, math.ceil(self.peak() / self.cap))

    def to_json(self):
        return {"name": self.name, "cap": self.cap, "steps": [[op, x] for op, x in self.steps]}

    @classmethod
    def from_json(cls, d):
        return cls(d["cap"], [(op, [tuple(c) for c in x] if op == "create" else x) for op, x in d["steps"]],
                   d.get("name", ""))


def from_events(events, block, zone_capacity, name=""):
    """The replayer's steps (trace.go, groups) of [zns.Event], sizes in blocks."""
    steps, i = [], 0
    nm = lambda e: f"{e.container}/{e.checkpoint}"
    while i < len(events):
        e = events[i]
        if e.op == "delete":
            steps.append(("delete", nm(e)))
            i += 1
            continue
        j = i
        group = []
        while j < len(events) and events[j].op == "create" and events[j].time_s == e.time_s:
            group.append((nm(events[j]), -(-events[j].bytes // block)))
            j += 1
        steps.append(("create", group))
        i = j
    assert zone_capacity % block == 0
    return Instance(zone_capacity // block, steps, name)


def hand_instances():
    """The test's hand-made instances (hack/ab/tests/test_zns_bound.py)."""
    full = Instance(2, [("create", [("a", 1), ("b", 1), ("c", 1), ("d", 1)]), ("delete", "a"),
                                  ("create", [("e", 1)])], "full")
    forced = Instance(2, [("create", [("i0", 2), ("i1", 2)]), ("delete", "i0"), ("create", [("i2", 1)]),
                                    ("create", [("i3", 2), ("i4", 1)]), ("delete", "i4"), ("delete", "i1"),
                                    ("create", [("i5", 1), ("i6", 2)])], "forced")
    grouped = Instance(3, [("create", [("a", 2), ("b", 1)]), ("create", [("c", 1), ("d", 2)]),
                                     ("delete", "a"), ("delete", "c"), ("create", [("e", 3)]), ("delete", "b"),
                                     ("delete", "d"), ("create", [("f", 3), ("g", 2)])], "grouped")
    return [(full, 2), (full, 3), (forced, 3), (grouped, 3), (grouped, 2)]


# --- the exact optimum by exhaustive search (standard library) ------------

def brute(inst, zones, limit=2_000_000):
    """The fewest relocated units over every schedule of one-unit operations
    under the rules (write a unit at a zone's write pointer, move a live
    unit to another zone's write pointer at a cost of 1, reset a zone with
    no live data), every create stored in its step: Dijkstra over device
    states, zones taken as interchangeable. None: no schedule stores every
    create. For instances of a few zones of a few units only; raises
    RuntimeError past `limit` states."""
    names = sorted(inst.sizes())
    idx = {n: k for k, n in enumerate(names)}
    cap = inst.cap
    # a zone: (written, ((image, live units), ...)); a state: sorted zones
    empty = tuple((0, ()) for _ in range(zones))

    def canon(zs):
        return tuple(sorted(zs))

    def live_of(z):
        return sum(c for _, c in z[1])

    def add(z, img, k=1):
        d = dict(z[1])
        d[img] = d.get(img, 0) + k
        return (z[0] + k, tuple(sorted(d.items())))

    def take(z, img):
        d = dict(z[1])
        d[img] -= 1
        if not d[img]:
            del d[img]
        return (z[0], tuple(sorted(d.items())))

    def drop(z, img):
        return (z[0], tuple((i, c) for i, c in z[1] if i != img))

    def moves(zs, pending):
        """(cost, next state, next pending) of one operation."""
        zs = list(zs)
        for a, za in enumerate(zs):
            if za[0] and not live_of(za):
                yield 0, canon(zs[:a] + [(0, ())] + zs[a + 1:]), pending
        for b, zb in enumerate(zs):
            if zb[0] >= cap:
                continue
            if pending:
                img = pending[0][0]
                rest = ((img, pending[0][1] - 1),) + pending[1:] if pending[0][1] > 1 else pending[1:]
                yield 0, canon(zs[:b] + [add(zb, img)] + zs[b + 1:]), rest
            for a, za in enumerate(zs):
                if a == b:
                    continue
                for img, _ in za[1]:
                    n = list(zs)
                    n[a], n[b] = take(za, img), add(zb, img)
                    yield 1, canon(n), pending

    # frontier of (cost, state) before each step
    frontier = {empty: 0}
    seen_total = 0
    for op, x in inst.steps:
        if op == "delete":
            img = idx[x]
            start = {}
            for s, c in frontier.items():
                t = canon([drop(z, img) for z in s])
                start[t] = min(start.get(t, c), c)
            pending0 = ()
        else:
            start = frontier
            pending0 = tuple((idx[n], u) for n, u in x)
        # Dijkstra within the step; the step ends when nothing is pending
        dist, heap, out = {}, [], {}
        for s, c in start.items():
            heapq.heappush(heap, (c, s, pending0))
        while heap:
            c, s, p = heapq.heappop(heap)
            if (s, p) in dist:
                continue
            dist[(s, p)] = c
            seen_total += 1
            if seen_total > limit:
                raise RuntimeError(f"brute: more than {limit} states")
            if not p:
                out[s] = min(out.get(s, c), c)
            for dc, t, q in moves(s, p):
                if (t, q) not in dist:
                    heapq.heappush(heap, (c + dc, t, q))
        if not out:
            return None
        frontier = out
    return min(frontier.values())


def brute_least_zones(inst, upto=6):
    for z in range(inst.trivial_zones(), upto + 1):
        if brute(inst, z) is not None:
            return z
    return None


# --- the model (CP-SAT) ------------------------------------------------------

@dataclass
class Solution:
    # "optimal"; "feasible": a schedule found (not proven the best, or no
    # objective); "infeasible"; "unknown": none found by the time limit
    status: str
    relocated: int = None  # units, the best schedule found
    bound: int = None  # units: no schedule of this model relocates less
    seconds: float = 0.0

    def to_json(self):
        return dict(vars(self))


def solve(inst, zones, rounds=2, buffered=False, optimise=True, time_limit=20.0, workers=2, relocate=True,
          at_least=0):
    """Solve the model (the module's docstring) on `zones` zones: Solution.
    optimise False: only whether any schedule stores every create.
    relocate False: no relocation at all (every image stays where it was
    written), a much smaller model whose feasibility says exactly whether
    the optimum is 0. at_least: a known lower bound of the relocated units
    (given to the solver as a constraint)."""
    from ortools.sat.python import cp_model  # noqa: PLC0415 (only here: the tests run without it)

    if buffered or not relocate:
        rounds = 1
    m = cp_model.CpModel()
    cap, size = inst.cap, inst.sizes()
    Z = range(zones)
    w = [0] * zones  # the write pointers before the round: constants, then variables
    live = {}  # image -> [its live units per zone] before the round
    moved = []
    for s, (op, x) in enumerate(inst.steps):
        if op == "delete":
            live.pop(x)
        new = x if op == "create" else []
        for r in range(rounds):
            last = r == rounds - 1
            tag = f"{s}.{r}"
            reset = [m.NewBoolVar(f"reset{tag}.{z}") for z in Z]
            nxt, into = {}, [[] for _ in Z]
            residual = [[] for _ in Z]
            for img, a in live.items():
                if not relocate:
                    for z in Z:
                        residual[z].append(a[z])
                    nxt[img] = a
                    continue
                u = size[img]
                b = [m.NewIntVar(0, u, f"a{tag}.{img}.{z}") for z in Z]
                m.Add(sum(b) == u)
                for z in Z:
                    inn = m.NewIntVar(0, u, f"in{tag}.{img}.{z}")
                    m.Add(inn >= b[z] - a[z])
                    m.Add(inn <= b[z])
                    into[z].append(inn)
                    residual[z].append(b[z] - inn)
                    moved.append(inn)
                nxt[img] = b
            host = [[] for _ in Z]
            if last:
                for img, u in new:
                    b = [m.NewIntVar(0, u, f"h{tag}.{img}.{z}") for z in Z]
                    m.Add(sum(b) == u)
                    for z in Z:
                        host[z].append(b[z])
                    nxt[img] = b
            w2 = []
            for z in Z:
                m.Add(sum(residual[z]) == 0).OnlyEnforceIf(reset[z])
                if not buffered:
                    m.Add(sum(into[z]) == 0).OnlyEnforceIf(reset[z])
                carry = m.NewIntVar(0, cap, f"carry{tag}.{z}")
                m.Add(carry == w[z]).OnlyEnforceIf(reset[z].Not())
                m.Add(carry == 0).OnlyEnforceIf(reset[z])
                wz = m.NewIntVar(0, cap, f"w{tag}.{z}")
                m.Add(wz == carry + sum(into[z]) + sum(host[z]))
                w2.append(wz)
            w, live = w2, nxt
        # symmetry: zones are interchangeable until something is written
    if at_least:
        m.Add(sum(moved) >= at_least)
    if optimise and relocate:
        m.Minimize(sum(moved))
    sv = cp_model.CpSolver()
    sv.parameters.max_time_in_seconds = time_limit
    sv.parameters.num_workers = workers
    sv.parameters.random_seed = 1
    st = sv.Solve(m)
    name = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible", cp_model.INFEASIBLE: "infeasible"}
    out = Solution(name.get(st, "unknown"), seconds=round(sv.WallTime(), 3))
    if st in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        if not relocate:
            out.status, out.relocated, out.bound = "feasible", 0, 0
        elif optimise:
            out.relocated, out.bound = round(sv.ObjectiveValue()), round(sv.BestObjectiveBound())
        else:
            out.status = "feasible"
    return out


def optimum(inst, zones, rounds=2, time_limit=20.0):
    """The fewest relocated units on `zones` zones, as exactly as the models
    say it: {"status", "relocated", "bound", "how"}. First the model without
    relocation: if it stores every create, the optimum is 0 (exact). Else the
    strict model (at least 1 relocated unit) gives the best schedule found,
    and the buffered one a lower bound; "exact" only where they meet."""
    z0 = solve(inst, zones, relocate=False, time_limit=time_limit)
    if z0.status == "feasible":
        return {"status": "exact", "relocated": 0, "bound": 0, "how": "no relocation needed", "seconds": z0.seconds}
    st = solve(inst, zones, rounds=rounds, time_limit=time_limit, at_least=1 if z0.status == "infeasible" else 0)
    bf = solve(inst, zones, buffered=True, time_limit=time_limit)
    lo = max(bf.bound or 0, 1 if z0.status == "infeasible" else 0)
    if bf.status == "infeasible":
        return {"status": "infeasible", "relocated": None, "bound": None, "how": "buffered model infeasible",
                "seconds": z0.seconds + bf.seconds}
    hi = st.relocated
    return {"status": "exact" if hi is not None and hi == lo else "bracket", "relocated": hi, "bound": lo,
            "how": f"strict {st.status}, buffered {bf.status}", "seconds": z0.seconds + st.seconds + bf.seconds}


def least_zones(inst, upto, rounds=2, time_limit=20.0):
    """(the fewest zones from ceil(peak / cap) up on which the model finds a
    schedule that stores every create, or None up to `upto`; [(zones, what
    was found)] of every size tried): per size, first the model without
    relocation, then the strict model. It is an upper bound of the exact
    fewest zones, and exact where it is the trivial bound ceil(peak / cap),
    below which no placement can go; the strict model being limited to its
    rounds, a size it finds infeasible (or unknown) is not proven too small."""
    tried = []
    for z in range(inst.trivial_zones(), upto + 1):
        s = solve(inst, z, relocate=False, optimise=False, time_limit=time_limit)
        if s.status == "feasible":
            tried.append((z, "feasible without relocation"))
            return z, tried
        s0 = s.status
        s = solve(inst, z, rounds=rounds, optimise=False, time_limit=time_limit)
        tried.append((z, f"without relocation {s0}; strict {s.status}"))
        if s.status == "feasible":
            return z, tried
    return None, tried


# --- the solver's side of ab.zns_bound_run -----------------------------------

def run_jobs(jobs):
    """[{"instance", "zones", "rounds", "buffered", "time_limit"} or, with
    "upto", a least-zones search] -> [their results]: what ab.zns_bound_run
    asks of the solver's interpreter (the venv with OR-Tools, which the
    harness's own interpreter need not have)."""
    out = []
    for j in jobs:
        inst = Instance.from_json(j["instance"])
        if j.get("optimum"):
            out.append(optimum(inst, j["zones"], rounds=j["rounds"], time_limit=j["time_limit"]))
        elif "upto" in j:
            z, tried = least_zones(inst, j["upto"], rounds=j["rounds"], time_limit=j["time_limit"])
            out.append({"least_zones": z, "tried": tried})
        else:
            out.append(solve(inst, j["zones"], rounds=j["rounds"], buffered=j.get("buffered", False),
                             time_limit=j["time_limit"]).to_json())
    return out


def main():
    """python -m ab.zns_bound: jobs (JSON) on standard input, their results
    (JSON) on standard output, and the solver's version."""
    import json  # noqa: PLC0415
    import sys  # noqa: PLC0415

    from ortools import __version__  # noqa: PLC0415
    json.dump({"solver": f"ortools {__version__}", "results": run_jobs(json.load(sys.stdin))}, sys.stdout)


if __name__ == "__main__":
    main()
