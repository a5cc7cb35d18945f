"""Statistics on samples: median and spread of a cell, and patched against
stock as a paired comparison.

The flavours are measured in ABAB order, so the samples of one repetition
are a pair: they ran minutes apart, under the same load. A comparison takes
the log-ratio log(a_i / b_i) of each pair (i a repetition both measured) and

- estimates the ratio as exp(mean of the log-ratios), the geometric mean of
  the pairs' ratios;
- tests "no difference" with an exact sign-flip permutation test on the
  log-ratios: under the null each log-ratio is as likely positive as
  negative, so every one of the 2^n sign patterns is equally likely; p is
  the share of patterns whose |sum| is at least the observed one (exact up
  to EXACT_MAX pairs, a fixed-seed Monte Carlo over sign patterns above);
- gives the interval of ratios the same test does not reject (inverting
  it), at level 1 - alpha.

The smallest p a sign-flip test can give with n pairs is 2 / 2^n: 0.0625 at
n = 5, 0.031 at n = 6. Below MIN_PAIRS no difference can be called at 5%,
and a comparison says "too few samples" rather than a verdict.

Across a report's comparisons, holm() adjusts the p-values (Holm-Bonferroni:
the chance of any false verdict in the report stays at or below 5%)."""
import bisect
import math
import random
import statistics

ALPHA = 0.05
MIN_PAIRS = 6  # smallest n whose smallest possible p (2/2^n = 0.031) is below ALPHA
EXACT_MAX = 16  # enumerate all 2^n sign patterns up to here
MONTE_CARLO = 20000


def summary(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"n": len(xs), "median": statistics.median(xs), "min": min(xs), "max": max(xs),
            "mean": statistics.fmean(xs), "stdev": statistics.stdev(xs) if len(xs) > 1 else 0.0}


def pairs(a, b):
    """The pairs of a and b: each a dict repetition -> value (or a list,
    taken as values of repetitions 0, 1, ...); only repetitions both have,
    with positive values."""
    if not isinstance(a, dict):
        a = dict(enumerate(a))
    if not isinstance(b, dict):
        b = dict(enumerate(b))
    return [(a[k], b[k]) for k in sorted(set(a) & set(b))
            if a[k] is not None and b[k] is not None and a[k] > 0 and b[k] > 0]


def _patterns(n, seed=1):
    """Sign patterns as (sum of signs, signs): every one of the 2^n up to
    EXACT_MAX, else the identity and MONTE_CARLO random ones."""
    if n <= EXACT_MAX:
        out = [()]
        for _ in range(n):
            out = [p + (s,) for p in out for s in (1, -1)]
        return out
    rng = random.Random(seed)
    return [(1,) * n] + [tuple(rng.choice((1, -1)) for _ in range(n)) for _ in range(MONTE_CARLO)]


class SignFlip:
    """The sign-flip test of d (log-ratios) against a shift delta: how many
    sign patterns give |sum s_i (d_i - delta)| >= |sum (d_i - delta)|.
    Patterns are grouped by their sum of signs k, so that for any delta the
    count is a bisection per group: sum s_i d_i - delta k."""

    def __init__(self, d):
        self.d, self.n = list(d), len(d)
        groups = {}
        pats = _patterns(self.n)
        for p in pats:
            groups.setdefault(sum(p), []).append(sum(s * x for s, x in zip(p, self.d)))
        self.groups = {k: sorted(v) for k, v in groups.items()}
        self.total = len(pats)
        self.observed = sum(self.d)

    def p(self, delta=0.0):
        c = abs(self.observed - delta * self.n)
        tol = 1e-12 * (1 + abs(c))
        count = 0
        for k, a in self.groups.items():
            mid = delta * k
            count += len(a) - bisect.bisect_left(a, mid + c - tol)  # A - delta k >= c
            count += bisect.bisect_right(a, mid - c + tol)  # A - delta k <= -c
            if c <= tol:  # both sides counted every pattern at the boundary
                count -= bisect.bisect_right(a, mid + c + tol) - bisect.bisect_left(a, mid - c - tol)
        return min(1.0, count / self.total)

    def interval(self, alpha=ALPHA):
        """The shifts the test does not reject at alpha, (lo, hi) (log scale);
        None when it cannot reject any (too few pairs)."""
        if 2 / self.total >= alpha or self.n < 2:
            return None
        m = self.observed / self.n
        span = (max(self.d) - min(self.d)) or abs(m) or 1.0

        def edge(direction):
            inside, out = m, m + direction * span
            while self.p(out) >= alpha:
                out += direction * span
            for _ in range(50):
                mid = (inside + out) / 2
                if self.p(mid) >= alpha:
                    inside = mid
                else:
                    out = mid
            return inside
        return edge(-1), edge(1)


def sign_flip_p(d):
    """Two-sided p of the sign-flip test of d (mean 0)."""
    return SignFlip(d).p(0.0)


def paired(a, b, alpha=ALPHA, correction=1):
    """a against b, paired by repetition (see pairs): ratio exp(mean log(a/b)),
    its interval at 1 - alpha/correction, the sign-flip p times correction
    (a Bonferroni factor, at most 1), n pairs. too_few: below MIN_PAIRS, no
    verdict."""
    ps = pairs(a, b)
    n = len(ps)
    if n == 0:
        return None
    d = [math.log(x / y) for x, y in ps]
    out = {"ratio": math.exp(statistics.fmean(d)), "lo": None, "hi": None, "p": None, "n": n,
           "too_few": n < MIN_PAIRS, "correction": correction}
    if n < 2:
        return out
    t = SignFlip(d)
    out["p"] = min(1.0, t.p(0.0) * correction)
    ci = t.interval(alpha / correction)
    if ci:
        out["lo"], out["hi"] = math.exp(ci[0]), math.exp(ci[1])
    return out


def holm(ps):
    """Holm-Bonferroni adjusted p-values, in the order given (None stays None)."""
    idx = sorted((i for i, p in enumerate(ps) if p is not None), key=lambda i: ps[i])
    m = len(idx)
    out = list(ps)
    running = 0.0
    for rank, i in enumerate(idx):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def verdict(r, lower_is_better, p=None):
    """'better', 'worse', 'n.s.' or 'too few samples (n=k)' for a paired
    comparison r, at p (r's own p unless an adjusted one is given)."""
    if r is None:
        return "n/a"
    if r["too_few"] or r["p"] is None:
        return f"too few samples (n={r['n']})"
    p = r["p"] if p is None else p
    if p >= ALPHA:
        return "n.s."
    return "better" if (r["ratio"] < 1) == lower_is_better else "worse"


def ratio_ci(a, b):
    """paired(a, b) with significant: a verdict at its own p (no
    correction across comparisons: holm() that)."""
    r = paired(a, b)
    if r is not None:
        r["significant"] = verdict(r, True) in ("better", "worse")
    return r
