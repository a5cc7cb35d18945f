"""Statistics on samples: median and spread of a cell, and patched against
stock as a paired comparison.

The flavors take turns within a repetition (measure.interleave), so the
samples of one repetition are a pair: they ran minutes apart, under the
same load. A comparison takes the log-ratio d_i = log(a_i / b_i) of each
pair (i a repetition both measured) and

- estimates the ratio as exp(mean of d), the geometric mean of the pairs'
  ratios;
- tests "no difference" with a paired t-test on d: t = mean / (sd / sqrt n),
  two-sided p from Student's t with n - 1 degrees of freedom (student_t_p,
  scipy.stats.t, the field's reference);
- gives the interval exp(mean +- t_(1 - alpha/2, n-1) * sd / sqrt n), the
  ratios that test does not reject, at level 1 - alpha;
- checks the call with an exact sign-flip permutation test on the same
  log-ratios (sign_flip_p): under the null each log-ratio is as likely
  positive as negative, so every one of the 2^n sign patterns is equally
  likely; p is the share of patterns whose |sum| is at least the observed
  one (exact up to EXACT_MAX pairs, a fixed-seed Monte Carlo over sign
  patterns above).

The t-test assumes the log-ratios are roughly normal; what a pair measures
here (a time, a rate) is a product of many small delays, so its log is
close to normal, and a log-ratio of two such is closer still. It has power
at small n: six pairs that all show a 2x change give p < 1e-4, where the
sign-flip test cannot go below 2/2^6 = 0.031, which Holm's correction over
a report's cells lifts above 0.05. The sign-flip test needs no normality
(only symmetry under the null), so it is kept as the check (check()): a
verdict the sign-flip test does not confirm on its own, or a difference it
finds that the t-test does not, is reported as a disagreement beside the
verdict.

A comparison's verdict is one of five words (verdict()):

- better or worse: the (Holm-adjusted) t-test rejects "no difference" at
  5% and the sign-flip test, on its own, agrees at 5%; where the t-test
  rejects and the sign-flip test does not, it is inconclusive;
- level: the interval shown (at Holm's level, wider than 95%) lies within
  the suite's equivalence margin, 1 - margin to 1 + margin (margin, by
  default MARGIN, 5%): two one-sided tests at that level reject a change
  beyond the margin either way. A difference not found is not "level": an
  interval that reaches past the margin is inconclusive;
- inconclusive: anything else, with the reason where there is one (failed
  repetitions, too few pairs, the tests disagree);
- failed: no repetition gave a pair, every one failed.

Each comparison also has its minimal detectable effect (mde()): the ratio
its test finds with 80% power at its level, from its own spread and n; an
inconclusive cell whose MDE is 1.3x says that a 1.2x change could hide
there.

Below MIN_PAIRS pairs no verdict is given ("inconclusive (too few pairs)"):
the sign-flip check cannot confirm anything at 5% there (its smallest p,
2/2^n, is 0.0625 at n = 5), nor can anything check the t-test's normality.

A repetition that either side failed (both measured it, one or both have
no value: Reps.failed) is no pair, and it is counted (failed): a
comparison with any gives no verdict, "inconclusive (k failed)", or
"failed" when no pair is left. A side
that fails on its slow runs would look faster on the pairs left, so they
cannot decide; what they show (ratio, interval, p) is still reported, with
the count beside it.

Across a report's comparisons, holm() adjusts the p-values (Holm-Bonferroni:
the chance of any false verdict in the report stays at or below 5%), and
adjust() puts each comparison's interval at the level Holm's step-down
tested it at (holm_levels: 1 - 0.05/(m - j) for the j-th smallest p of m,
until the procedure stops), so that an interval excludes 1 exactly when
the adjusted p is below 5%; a 95% interval beside an adjusted p could read
"1.21 [1.01, 1.44] p=0.073" beside a verdict that finds no difference.

The flavors run in an order drawn per repetition (measure.orders), each
in each position equally often; a difference between the log-ratios of
the repetitions in which one side ran first and those in which it ran
second (report.order_effects) is an order effect the balance averages
out, shown as a diagnostic, never tested."""
import bisect
import math
import random
import statistics

from scipy import stats as scipy_stats

ALPHA = 0.05
MARGIN = 0.05  # the default equivalence margin: "level" within 0.95-1.05
POWER = 0.8  # the power the minimal detectable effect is given at
MIN_PAIRS = 6  # smallest n whose smallest sign-flip p (2/2^n = 0.031) is below ALPHA
EXACT_MAX = 16  # enumerate all 2^n sign patterns up to here
MONTE_CARLO = 20000


def summary(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"n": len(xs), "median": statistics.median(xs), "min": min(xs), "max": max(xs),
            "mean": statistics.fmean(xs), "stdev": statistics.stdev(xs) if len(xs) > 1 else 0.0}


class Reps(dict):
    """One side's samples by repetition (repetition -> value), and the
    repetitions it measured without a value (failed: the sample failed, or
    gave none)."""

    def __init__(self, values=(), failed=()):
        super().__init__(values)
        self.failed = set(failed)


def pairing(a, b):
    """(the pairs of a and b, how many repetitions failed): a and b each a
    dict repetition -> value (a Reps, or a list taken as values of
    repetitions 0, 1, ...). A pair is a repetition both have a positive
    value of; a failed one is a repetition both measured (a value, or in
    failed) where either has none."""
    a, b = (x if isinstance(x, Reps) else Reps(x if isinstance(x, dict) else enumerate(x)) for x in (a, b))
    both = (set(a) | a.failed) & (set(b) | b.failed)
    ok = lambda x, k: x.get(k) is not None and x[k] > 0
    ps = [(a[k], b[k]) for k in sorted(both) if ok(a, k) and ok(b, k)]
    return ps, len(both) - len(ps)


def pairs(a, b):
    """The pairs of a and b (see pairing)."""
    return pairing(a, b)[0]


def student_t_p(t, df):
    """Two-sided p of Student's t with df degrees of freedom: P(|T| >= |t|)
    (scipy.stats.t)."""
    return min(1.0, float(2 * scipy_stats.t.sf(abs(t), df)))


def student_t_quantile(p, df):
    """The t > 0 whose two-sided p is p (student_t_p(t, df) == p), 0 < p <= 1."""
    return float(scipy_stats.t.isf(p / 2, df))


def t_interval(m, se, df, alpha=ALPHA):
    """(lo, hi): the mean shifts a t-test with df degrees of freedom (n - 1
    of n values; Welch's of two runs, ab.compare), mean m and standard
    error se does not reject at alpha."""
    if se == 0:
        return m, m
    q = student_t_quantile(alpha, df) * se
    return m - q, m + q


def t_test(d, alpha=ALPHA):
    """The paired t-test of d (log-ratios) against 0: (two-sided p, (lo, hi)
    the interval of mean shifts it does not reject at alpha)."""
    n = len(d)
    m = statistics.fmean(d)
    se = statistics.stdev(d) / math.sqrt(n)
    if se == 0:  # every pair the same: no spread to test against
        return (1.0 if m == 0 else 0.0), (m, m)
    return student_t_p(m / se, n - 1), t_interval(m, se, n - 1, alpha)


def _sums(d, seed=1):
    """sum s_i d_i over sign patterns s: every one of the 2^n up to
    EXACT_MAX (built by doubling), else the identity and MONTE_CARLO random
    ones."""
    n = len(d)
    if n <= EXACT_MAX:
        sums = [0.0]
        for x in d:
            sums = [v + x for v in sums] + [v - x for v in sums]
        return sums
    rng = random.Random(seed)
    return [sum(d)] + [sum(x if rng.random() < 0.5 else -x for x in d) for _ in range(MONTE_CARLO)]


def sign_flip_p(d):
    """Two-sided p of the sign-flip test of d (mean 0): the share of sign
    patterns s with |sum s_i d_i| >= |sum d_i|."""
    sums = sorted(_sums(d))
    c = abs(sum(d))
    tol = 1e-12 * (1 + c)
    if c <= tol:
        return 1.0
    count = len(sums) - bisect.bisect_left(sums, c - tol) + bisect.bisect_right(sums, -c + tol)
    return min(1.0, count / len(sums))


def sign_flip_floor(n):
    """The smallest p the sign-flip test can give with n pairs: 2/2^n."""
    return 2 / 2 ** n if n <= EXACT_MAX else 1 / (MONTE_CARLO + 1)


def paired(a, b, alpha=ALPHA, correction=1):
    """a against b, paired by repetition (see pairing): ratio exp(mean
    log(a/b)), the t-test's interval at level 1 - alpha/correction and
    its p times correction (a Bonferroni factor, at most 1), the sign-flip
    check's p (p_sign, times correction too), n pairs, failed repetitions
    (any: no verdict). too_few: below MIN_PAIRS, no verdict and no
    interval. None when there is neither a pair nor a failure; with
    failures and no pair, ratio is None. log_mean and log_se (the
    log-ratios' mean and its standard error) let adjust() put the
    interval at another level."""
    ps, failed = pairing(a, b)
    n = len(ps)
    out = {"ratio": None, "lo": None, "hi": None, "p": None, "p_sign": None, "n": n, "failed": failed,
           "too_few": n < MIN_PAIRS, "correction": correction}
    if n == 0:
        return out if failed else None
    d = [math.log(x / y) for x, y in ps]
    out["ratio"] = math.exp(statistics.fmean(d))
    if n < 2:
        return out
    out["log_mean"], out["log_se"] = statistics.fmean(d), statistics.stdev(d) / math.sqrt(n)
    out["level"] = 1 - alpha / correction
    p, (lo, hi) = t_test(d, alpha / correction)
    out["p"] = min(1.0, p * correction)
    out["p_sign"] = min(1.0, sign_flip_p(d) * correction)
    out["p_sign_floor"] = min(1.0, sign_flip_floor(n) * correction)
    if not out["too_few"]:
        out["lo"], out["hi"] = math.exp(lo), math.exp(hi)
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


def holm_levels(ps, alpha=ALPHA):
    """The level Holm's step-down procedure tests each p at, in the order
    given (None stays None): the j-th smallest of m at alpha / (m - j)
    while every smaller one was rejected; from the first that is not on,
    the procedure stops, and those left keep that step's level. A p is
    below its level exactly when its holm() p is below alpha."""
    idx = sorted((i for i, p in enumerate(ps) if p is not None), key=lambda i: ps[i])
    m = len(idx)
    out = list(ps)
    stop = None
    for rank, i in enumerate(idx):
        if stop is None and (m - rank) * ps[i] >= alpha:  # holm()'s own comparison
            stop = rank
        out[i] = alpha / (m - (rank if stop is None else stop))
    return out


def adjust(tests):
    """Holm over tests (paired comparisons of one report, each not too_few):
    sets p_adj (the t-tests') and p_sign_adj (the sign-flip checks'), and
    puts each interval (lo, hi) at the level Holm tested it at
    (holm_levels, divided by the comparison's correction as its p was
    multiplied; level: the interval's confidence level). An adjusted
    interval excludes 1 exactly when p_adj is below ALPHA, where a 95% one
    beside an adjusted p could exclude 1 and find no difference."""
    tests = [t for t in tests if t and not t["too_few"] and t["p"] is not None]
    ps = [t["p"] for t in tests]
    for t, padj, sadj, a in zip(tests, holm(ps), holm([t["p_sign"] for t in tests]), holm_levels(ps)):
        t["p_adj"], t["p_sign_adj"] = padj, sadj
        a /= t.get("correction", 1)
        lo, hi = t_interval(t["log_mean"], t["log_se"], dof(t), a)
        t["lo"], t["hi"], t["level"] = math.exp(lo), math.exp(hi), 1 - a


def verdict(r, lower_is_better, p=None, margin=None):
    """One of the five verdicts of a paired comparison r (see the module's
    doc): 'better', 'worse', 'level', 'inconclusive' (with its reason in
    parentheses where there is one) or 'failed'; 'n/a' without a
    comparison. p: r's adjusted p (r's own p unless given); margin: the
    equivalence margin (r's, else MARGIN)."""
    if r is None:
        return "n/a"
    if r.get("failed"):
        return f"failed ({r['failed']} of {r['failed']})" if r["n"] == 0 else f"inconclusive ({r['failed']} failed)"
    if r["too_few"] or r["p"] is None:
        return "inconclusive (too few pairs)"
    p = r["p"] if p is None else p
    if p < ALPHA:
        if r.get("p_sign") is not None and r["p_sign"] >= ALPHA:
            return "inconclusive (the sign-flip test disagrees)"
        return "better" if (r["ratio"] < 1) == lower_is_better else "worse"
    m = r.get("margin", MARGIN) if margin is None else margin
    if r["lo"] is not None and 1 - m <= r["lo"] and r["hi"] <= 1 + m:
        return "level"
    return "inconclusive"


def decided(v):
    """Whether verdict v finds a difference (better or worse)."""
    return v in ("better", "worse")


def mde(r, power=POWER):
    """The minimal detectable effect of a paired comparison r: the ratio
    above 1 that its t-test, at r's level (Holm's once adjusted), finds
    with the given power, exp((t_(1 - a/2) + t_power) * se) with r's
    degrees of freedom (dof) and its standard error of the mean log-ratio; None
    without a spread (n < 2)."""
    if r is None or r.get("log_se") is None or r["n"] < 2:
        return None
    a = 1 - r.get("level", 1 - ALPHA)
    df = dof(r)
    return math.exp((student_t_quantile(a, df) + student_t_quantile(2 * (1 - power), df)) * r["log_se"])


def dof(r):
    """A comparison's degrees of freedom: its own (df: Welch's, ab.compare),
    else those of its n pairs' paired t-test."""
    return r.get("df", r["n"] - 1)


def check(r, lower_is_better, p=None, p_sign=None):
    """Where the sign-flip test disagrees with the t-test on r (at p, as in
    verdict()): None when it agrees (or there is nothing to check), else a
    phrase.

    - a t-test that finds a difference is confirmed when the sign-flip test
      on its own (its p times the settings' factor, not adjusted across the
      report: Holm would leave it no power at the pair counts suites run)
      is below ALPHA; else the verdict is inconclusive, and the phrase
      gives its p and says when it is the smallest it can give with n pairs;
    - a t-test that finds none is contradicted when the sign-flip test
      finds the difference at the same level (p_sign: its Holm-adjusted p,
      given with an adjusted p): a t-test that an outlier pair inflated the
      spread of."""
    if r is None or r["too_few"] or r["p"] is None or r.get("p_sign") is None or r.get("failed"):
        return None
    p = r["p"] if p is None else p
    if p < ALPHA:
        if r["p_sign"] < ALPHA:
            return None
        floor = r.get("p_sign_floor")
        at_floor = floor is not None and r["p_sign"] <= floor * (1 + 1e-9)
        return f"sign-flip does not confirm: p={r['p_sign']:.2g}" + \
            (f", the smallest it can give with {r['n']} pairs" if at_floor else "") + \
            (f" and {r['correction']} settings" if at_floor and r.get("correction", 1) > 1 else "")
    ps = r["p_sign"] if p_sign is None else p_sign
    if ps < ALPHA:
        side = "better" if (r["ratio"] < 1) == lower_is_better else "worse"
        return f"sign-flip says {side}: p={ps:.2g}" + ("" if p_sign is None else " (Holm)")
    return None


def ratio_ci(a, b):
    """paired(a, b) with significant: a verdict at its own p (no
    correction across comparisons: holm() that)."""
    r = paired(a, b)
    if r is not None:
        r["significant"] = decided(verdict(r, True))
    return r
