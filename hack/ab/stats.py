"""Statistics on samples: median, spread, and the patched/stock ratio of
medians with a bootstrap confidence interval."""
import random
import statistics


def summary(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"n": len(xs), "median": statistics.median(xs), "min": min(xs), "max": max(xs),
            "mean": statistics.fmean(xs), "stdev": statistics.stdev(xs) if len(xs) > 1 else 0.0}


def ratio_ci(a, b, iters=4000, level=0.95, seed=1):
    """Ratio median(a)/median(b) with a percentile bootstrap interval.
    significant: the interval excludes 1."""
    a = [x for x in a if x is not None]
    b = [x for x in b if x is not None]
    if not a or not b or statistics.median(b) == 0:
        return None
    est = statistics.median(a) / statistics.median(b)
    if len(a) < 2 or len(b) < 2:
        # One sample has no spread to resample: no interval, no verdict.
        return {"ratio": est, "lo": None, "hi": None, "significant": False, "n": (len(a), len(b))}
    rng = random.Random(seed)
    rs = []
    for _ in range(iters):
        ma = statistics.median(rng.choices(a, k=len(a)))
        mb = statistics.median(rng.choices(b, k=len(b)))
        if mb > 0:
            rs.append(ma / mb)
    rs.sort()
    lo = rs[int((1 - level) / 2 * len(rs))]
    hi = rs[min(len(rs) - 1, int((1 + level) / 2 * len(rs)))]
    return {"ratio": est, "lo": lo, "hi": hi, "significant": not (lo <= 1 <= hi),
            "n": (len(a), len(b))}
