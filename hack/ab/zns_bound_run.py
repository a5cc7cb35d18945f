"""The ZNS study's bound (issue 47, item 3): tiny traces from the sweep's
generator, the replayer's policies on them, and the exact offline model of
ab.zns_bound, side by side; a JSON and a markdown report.

    PYTHONPATH=hack nice -n 10 /usr/bin/python3 -m ab.zns_bound_run --out DIR [--seeds 10]

The model is solved by `--python` (default: .venv/bin/python, a virtualenv
with hack/ab/zns_bound-requirements.txt installed) running ab.zns_bound,
so that the harness's interpreter needs no solver; the replayer is built by
hack/zoned/zns-replay.sh on first use, or ZNS_REPLAY names it.

The traces are the sweep's generator (ab.kinds.zns_sweep.generate, its
misfit, irregular and pinned containers, declared lifetimes) scaled down:
MIX's containers and memories, cut after the first MAX_CREATES creates, so
that the exact model solves in seconds. The device: zones of ZONE_BLOCKS
blocks of 4 KiB (the model's unit is the block, so nothing is rounded
between the two), no open or active limit beyond the zone count, no reserve
(--gc-reserve 0), the chunk one block. The device compared on is the
sweep's 90% fill: ceil(peak / (0.9 x zone capacity)) zones.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

from . import zns, zns_bound
from .kinds import zns_sweep

BLOCK = 4096
ZONE_BLOCKS = 4
MAX_CREATES = 24
FILL = 0.9
ZONE_SCAN = 8  # policies' least zones: from the trivial bound up to this many more
POLICIES = ("zone-pack", "shared-log", "oracle", "multi-log", "hint-log", "shared-log-idle", "oracle-idle",
            "zone-aware", "zone-tail")
MIX = zns_sweep.TraceMix(containers=4, memory=["4KiB", "8KiB", "12KiB", "16KiB"], intervals_s=[60.0, 120.0, 300.0],
                         keeps=[1, 2, 3], duration_s=1800.0, overhead=512)


def geometry(zones):
    return zns.Geometry(zone_size=ZONE_BLOCKS * BLOCK, zone_capacity=ZONE_BLOCKS * BLOCK, zones=zones,
                        max_open=zones, max_active=zones, block=BLOCK)


def tiny_trace(seed):
    """The sweep's generator on MIX, cut after MAX_CREATES creates (deletes of
    the checkpoints kept before the cut stay; the later ones go)."""
    out, born = [], set()
    for e in zns_sweep.generate(MIX, seed):
        if e.op == "create":
            if sum(x.op == "create" for x in out) == MAX_CREATES:
                break
            born.add(e.key)
        elif e.key not in born:
            continue
        out.append(e)
    return out


def replay(path, zones, policies):
    """{policy: (failed, relocated bytes, host bytes)} on a device of zones."""
    outs = zns.replay_trace(path, geometry(zones), policies, chunk=BLOCK, gc_reserve=0)
    return {o.policy: (o.metrics["failed"], o.metrics["relocated_bytes"], o.metrics["host_bytes"]) for o in outs}


def policies_least(path, trivial, policies):
    """{policy: the fewest zones from `trivial` up on which it fails no
    create (None: none within ZONE_SCAN more)}, scanning up one zone at a
    time, and {policy: [zones on which it failed a create although it
    stored every one on fewer]}: where the replay is not monotone."""
    least, broken = {p: None for p in policies}, {p: [] for p in policies}
    for z in range(trivial, trivial + ZONE_SCAN + 1):
        for p, (failed, _, _) in replay(path, z, policies).items():
            if failed and least[p] is not None:
                broken[p].append(z)
            if not failed and least[p] is None:
                least[p] = z
    return least, broken


def solver(python, jobs):
    """Run ab.zns_bound's jobs under the solver's interpreter: (version, results)."""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.run([python, "-m", "ab.zns_bound"], input=json.dumps(jobs), capture_output=True, text=True,
                       env=env, check=False)
    if p.returncode:
        raise SystemExit(f"ab.zns_bound_run: the solver ({python}) failed:\n{p.stderr.strip()}")
    d = json.loads(p.stdout)
    return d["solver"], d["results"]


def run_seed(python, seed, tmp, time_limit, rounds):
    events = tiny_trace(seed)
    path = os.path.join(tmp, f"seed{seed}.csv")
    zns.write_trace(path, events)
    inst = zns_bound.from_events(events, BLOCK, ZONE_BLOCKS * BLOCK, name=f"seed{seed}")
    peak = inst.peak()
    zones = math.ceil(peak / (FILL * inst.cap))
    got = replay(path, zones, POLICIES)
    j = {"instance": inst.to_json(), "zones": zones, "rounds": rounds, "time_limit": time_limit}
    _, (opt, lz) = solver(python, [dict(j, optimum=True), dict(j, upto=inst.trivial_zones() + ZONE_SCAN)])
    least, tried = lz["least_zones"], lz["tried"]
    pleast, broken = policies_least(path, inst.trivial_zones(), POLICIES)
    info = zns.describe_trace(events)
    # the exact fewest zones lies in [trivial, the least of the model's and every policy's]
    known = [x for x in [least] + list(pleast.values()) if x is not None]
    bracket = [inst.trivial_zones(), min(known) if known else None]
    return {"least_zones": bracket,"seed": seed, "creates": info["creates"], "deletes": info["deletes"], "steps": len(inst.steps),
            "peak_units": peak, "trivial_zones": inst.trivial_zones(), "zones": zones,
            "sha256": zns.trace_digest(path),
            "model": {"optimum": opt,
                      "least_zones": least, "least_zones_tried": tried},
            "policies": {p: {"failed": f, "relocated_bytes": r, "host_bytes": h, "least_zones": pleast[p],
                             "not_monotone_at": broken[p]} for p, (f, r, h) in got.items()}}


def solve_hand(python, time_limit, rounds):
    """(the solver's version, its answers on the hand-made instances)."""
    jobs = []
    for inst, z in zns_bound.hand_instances():
        j = {"instance": inst.to_json(), "zones": z, "rounds": rounds, "time_limit": time_limit}
        jobs += [j, dict(j, buffered=True), dict(j, upto=6)]
    version, res = solver(python, jobs)
    return version, [{"instance": jobs[3 * k]["instance"], "zones": jobs[3 * k]["zones"], "strict": res[3 * k],
                      "buffered": res[3 * k + 1], "least_zones": res[3 * k + 2]["least_zones"]}
                     for k in range(len(jobs) // 3)]


def _mean(xs):
    return round(statistics.mean(xs), 3) if xs else None


def summarise(seeds):
    """Per policy: over the traces where it stored every create on the 90%
    device and the optimum is exact, the mean relocated blocks above it
    (and that over the host blocks it wrote: its gap in write
    amplification); over the traces where both are known, the mean of its
    least zones less the model's."""
    out = {}
    for p in POLICIES:
        ok = [s for s in seeds if not s["policies"][p]["failed"] and s["model"]["optimum"]["status"] == "exact"]
        gap = [s["policies"][p]["relocated_bytes"] / BLOCK - s["model"]["optimum"]["relocated"] for s in ok]
        host = [s["policies"][p]["host_bytes"] / BLOCK for s in ok]
        zs = [s for s in seeds if s["policies"][p]["least_zones"] is not None]
        zgap = [s["policies"][p]["least_zones"] - s["least_zones"][1] for s in zs]  # at least
        zgap_hi = [s["policies"][p]["least_zones"] - s["least_zones"][0] for s in zs]  # at most
        out[p] = {"stored_all": len(ok), "failed_traces": sum(bool(s["policies"][p]["failed"]) for s in seeds),
                  "relocated_blocks_mean": _mean([s["policies"][p]["relocated_bytes"] / BLOCK for s in ok]),
                  "gap_blocks_mean": _mean(gap), "gap_blocks_max": max(gap) if gap else None,
                  "at_optimum": sum(g == 0 for g in gap),
                  "wa_gap_mean": _mean([g / h for g, h in zip(gap, host)]),
                  "zones_traces": len(zs), "zones_gap_mean": _mean(zgap), "zones_gap_max": max(zgap) if zgap else None,
                  "zones_gap_upper_mean": _mean(zgap_hi),
                  "zones_at_optimum": sum(g == 0 for g in zgap),
                  "no_least_within_scan": sum(s["policies"][p]["least_zones"] is None for s in seeds)}
    return out


def report(doc):
    L = [f"# The exact offline bound on {len(doc['seeds'])} tiny traces", "",
         f"Device: zones of {ZONE_BLOCKS} blocks of {BLOCK // 1024} KiB, no open or active limit but the zone count, "
         f"no reserve, chunk one block; the device compared on has ceil(peak / ({FILL:g} x {ZONE_BLOCKS})) zones. "
         f"Traces: the sweep's generator scaled down ({MIX.containers} containers), the first {MAX_CREATES} creates. "
         f"Model: ab.zns_bound, {doc['solver']}, {doc['time_limit_s']:g} s per solve (strict model: "
         f"{doc['rounds']} rounds a step). Units: blocks of 4 KiB. {doc['wall_s']:g} s in all.", "",
         "## Per trace", "",
         "Relocated blocks on the 90% device: the model's optimum (exact, or [lower, upper]) and each policy's "
         "(`xN`: N failed creates, no gap); then the fewest zones: the trivial bound ceil(peak / zone), the "
         "model's (the first size on which it found a schedule), the exact fewest (or the bracket it is in: from the "
         "trivial bound to the least the model or any policy stored every create on), each policy's.", "",
         "| seed | creates | peak blocks | zones | optimum | " + " | ".join(POLICIES) + " |",
         "| --- " * (5 + len(POLICIES)) + "|"]
    for s in doc["seeds"]:
        m = s["model"]

        def val(x):
            if x["status"] == "exact":
                return str(x["relocated"])
            return f"[{x['bound']}, {x['relocated']}]" if x["status"] == "bracket" else x["status"]
        cells = []
        for p in POLICIES:
            q = s["policies"][p]
            cells.append(f"x{q['failed']}" if q["failed"] else str(q["relocated_bytes"] // BLOCK))
        L.append(f"| {s['seed']} | {s['creates']} | {s['peak_units']} | {s['zones']} | {val(m['optimum'])} | "
                 + " | ".join(cells) + " |")
    L += ["", "| seed | trivial bound | the model's | exact fewest zones | " + " | ".join(POLICIES) + " |",
          "| --- " * (4 + len(POLICIES)) + "|"]
    for s in doc["seeds"]:
        cells = []
        for p in POLICIES:
            q = s["policies"][p]
            z = "-" if q["least_zones"] is None else str(q["least_zones"])
            cells.append(z + (f" (fails at {','.join(map(str, q['not_monotone_at']))})" if q["not_monotone_at"] else ""))
        lz = s["model"]["least_zones"]
        lo, hi = s["least_zones"]
        L.append(f"| {s['seed']} | {lo} | {lz if lz else '-'} | {hi if hi == lo else f'[{lo}, {hi}]'} | "
                 + " | ".join(cells) + " |")
    L += ["", "## Per policy", "",
          "Relocated blocks above the optimum on the 90% device, over the traces where the policy stored "
          "every create there and the optimum is exact (and the same over host blocks written: its gap in write "
          "amplification); least zones above the exact fewest, over the traces where the policy stored every create "
          "within the scan: at least (above the bracket's top) and at most (above the trivial bound).", "",
          "| policy | traces with a failed create (90%) | stored all | mean relocated | mean gap | max gap | "
          "at the optimum | mean gap in write amplification | least zones: mean gap, at least | at most | max (at least) | "
          "at the bracket's top |",
          "| --- " * 12 + "|"]
    for p, v in doc["summary"].items():
        L.append(f"| {p} | {v['failed_traces']} | {v['stored_all']} | {v['relocated_blocks_mean']} | "
                 f"{v['gap_blocks_mean']} | {v['gap_blocks_max']} | {v['at_optimum']} | {v['wa_gap_mean']} | "
                 f"{v['zones_gap_mean']} | {v['zones_gap_upper_mean']} | {v['zones_gap_max']} | {v['zones_at_optimum']} |")
    L += ["", "## Hand-made instances (the test's)", "", "| instance | zones | strict | buffered | least zones (strict) |",
          "| --- | --- | --- | --- | --- |"]
    for h in doc["hand"]:
        f = lambda x: x["status"] + ("" if x["relocated"] is None else f", {x['relocated']}")
        L.append(f"| {h['instance']['name']} | {h['zones']} | {f(h['strict'])} | {f(h['buffered'])} | {h['least_zones']} |")
    return "\n".join(L) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ab.zns_bound_run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=20.0, help="seconds per solve")
    ap.add_argument("--python", default=os.path.join(zns.ROOT, ".venv", "bin", "python"),
                    help="the interpreter with the solver (hack/ab/zns_bound-requirements.txt)")
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    doc = {"block": BLOCK, "zone_blocks": ZONE_BLOCKS, "max_creates": MAX_CREATES, "fill": FILL,
           "rounds": a.rounds, "time_limit_s": a.time_limit, "mix": dict(vars(MIX)), "policies": list(POLICIES),
           "seeds": []}
    version, doc["hand"] = solve_hand(a.python, a.time_limit, a.rounds)
    doc["solver"] = f"{version} (CP-SAT, 2 workers, random seed 1)"
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, a.seeds + 1):
            doc["seeds"].append(run_seed(a.python, seed, tmp, a.time_limit, a.rounds))
            print(f"seed {seed}: {doc['seeds'][-1]['model']['optimum']}", file=sys.stderr)
    doc["summary"] = summarise(doc["seeds"])
    doc["wall_s"] = round(time.time() - t0, 1)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(report(doc))


if __name__ == "__main__":
    main()
