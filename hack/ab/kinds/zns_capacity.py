"""The zns-sweep kind's bisection of the smallest device on which a policy
fails no create (min_capacity = true): smallest_passing, the search itself
on any fails(zones), and run_min_capacity, which runs it for every report
seed, reserve and policy of a sweep. kinds/zns_sweep.py runs it; the
report's section is kinds/zns_capacity_report.py."""
import concurrent.futures
import math

from .. import zns
from ..measure import Progress
from ..results import Cell
from .zns_sweep_report import MAX_OVER_PEAK, NO_RESERVE


# The bisection of the smallest device (run_min_capacity): its first probe
# is the device at START_FILL (the sweep's cell there, where it has one);
# if that fails, the devices at UP_FILLS in turn, the first that stores
# every create bounding the search from above. Then, around the answer z,
# the devices CHECK_ABOVE zones larger (each should store every create)
# and CHECK_BELOW zones smaller (each should fail one): a device that
# breaks this breaks the monotonicity the bisection assumes, and is kept.
START_FILL = 0.95
UP_FILLS = (0.90, 0.80, 2 / 3, 0.5, 1 / MAX_OVER_PEAK)
CHECK_ABOVE = (1, 2)
CHECK_BELOW = (2,)


def smallest_passing(fails, floor, ladder, above=CHECK_ABOVE, below=CHECK_BELOW):
    """The fewest zones z on which fails(z) is false (no failed create),
    by bisection, assuming that fewer zones never fail less: floor is a
    zone count known to fail (never asked); ladder the increasing zone
    counts asked first, until one passes (the upper bound); then bisection
    between the last that failed and it. Then the checks: z + each of above
    should pass and z - each of below (above floor) should fail. Returns
    (z or None if every ladder step fails, {zones: failed?} of every zone
    count asked, [zones of the checks that broke monotonicity]): a zone
    count asked that passed below z, or failed above it."""
    asked = {}

    def ask(z):
        if z not in asked:
            asked[z] = bool(fails(z))
        return asked[z]

    lo, hi = floor, None
    for z in sorted(set(ladder)):
        if z <= lo:
            continue
        if ask(z):
            lo = z
        else:
            hi = z
            break
    if hi is None:
        return None, asked, []
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ask(mid):
            lo = mid
        else:
            hi = mid
    for d in above:
        ask(hi + d)
    for d in below:
        if hi - d > floor:
            ask(hi - d)
    broken = sorted(z for z, bad in asked.items() if (z > hi and bad) or (z < hi and not bad))
    return hi, asked, broken


def run_min_capacity(r, traces, report, chosen):
    """For every report seed, reserve and policy, on the main device and
    each [[devices]] device: the smallest device on which the policy fails
    no create (smallest_passing over the zone count, the time model on),
    with that replay's metrics and the failed creates of the largest device
    it asked that failed (why it fails just below). Tasks run jobs at a
    time; the results are in the same order whatever the jobs."""
    from .zns_sweep import _replay, sized, fill_zones
    s = r.s
    doc = r.results.doc
    known = {}  # the sweep's cells at START_FILL: a first probe already made
    for e in doc["results"]:
        if e["scenario"] == "sweep" and e.get("half") == "report" and e["fill"] is not None \
                and abs(e["fill"] - START_FILL) < 1e-9:
            known[(e.get("device", "main"), e["seed"], e["reserve"], e["policy"], e["zones"])] = \
                (e["metrics"], e.get("failures", []))
    tasks = []
    for seed in report:
        for reserve in s.reserves:
            for p in s.policies:
                tasks.append(("main", seed, reserve, p, s.geometry, s.chunk, s.costs))
    for d in s.devices:
        if d.zones:  # a real device's zone count: nothing to bisect
            continue
        for seed in list(report)[:d.seeds]:
            for reserve in d.reserves:
                for p in d.policies or s.policies:
                    tasks.append((d.name, seed, reserve, p, d.geometry, d.chunk, d.costs))

    def one(t):
        device, seed, reserve, p, g0, chunk, costs = t
        path, peak = traces[(device, seed)]
        cleaner = chosen.get(p, s.cleaners[0])
        got = {}

        def fails(zones):
            k = (device, seed, reserve, p, zones)
            if k in known:
                got[zones] = known[k]
            else:
                got[zones] = _replay(path, sized(g0, zones), [p], chunk, reserve, cleaner, costs)[p]
            return got[zones][0]["failed"] > 0

        # Known to fail: less than the peak outside the reserve (in all, for those that take none).
        floor = math.ceil(peak / g0.zone_capacity) - 1 + (0 if p in NO_RESERVE else reserve)
        ladder = [fill_zones(peak, g0, reserve, f) for f in (START_FILL,) + UP_FILLS]
        zones, asked, broken = smallest_passing(fails, floor, ladder)
        return t, peak, zones, asked, broken, got

    zns.replayer()
    prog = Progress(len(tasks))
    with concurrent.futures.ThreadPoolExecutor(max_workers=s.jobs) as pool:
        for i, (t, peak, zones, asked, broken, got) in enumerate(pool.map(one, tasks)):
            device, seed, reserve, p, g0, _, _ = t
            cap = g0.zone_capacity
            below = max((z for z, bad in asked.items() if bad and (zones is None or z < zones)), default=None)
            m = dict(got[zones][0]) if zones else {}
            m.update({"device_over_peak": round(zones * cap / peak, 4) if zones else None,
                      "capacity_over_peak": round((zones - reserve) * cap / peak, 4) if zones else None,
                      "fill": round(peak / ((zones - reserve) * cap), 4) if zones else None,
                      "probes": len(asked), "monotone": not broken})
            doc["results"].append(Cell(p, params={"reserve": reserve, "cleaner": chosen.get(p)}, scenario="min-capacity",
                                  kind_fields={"policy": p, "seed": seed, "half": "report", "reserve": reserve,
                                               "fill": None, "zones": zones, "device": device}).entry(
                metrics=m, asked={str(z): bad for z, bad in sorted(asked.items())}, broken=broken,
                failures_below=got[below][1] if below is not None else [],
                zones_below=below))
            prog.step(f"min capacity: {device} seed {seed} reserve {reserve} {p}: {zones} zones")
            if i % 50 == 49:
                r.results.save()
    r.results.save()
