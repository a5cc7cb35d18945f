"""What every kind measures with and computes: statistics, the order of
the measurements, the JSON line of a measuring program."""
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
import types
import unittest
from unittest import mock

from ab import hosts, measure, report, results, stats


class StatsTest(unittest.TestCase):
    def test_summary(self):
        s = stats.summary([3.0, 1.0, 2.0, None])
        self.assertEqual((s["n"], s["median"], s["min"], s["max"]), (3, 2.0, 1.0, 3.0))
        self.assertIsNone(stats.summary([]))

    def test_sign_flip_exact_p(self):
        # all of one sign: only the observed pattern and its mirror are as extreme
        self.assertEqual(stats.sign_flip_p([1.0, 2.0, 3.0]), 2 / 8)
        self.assertEqual(stats.sign_flip_p([0.1] * 6), 2 / 64)
        # 1, 2, -3: |sum| = 0, every pattern is as extreme
        self.assertEqual(stats.sign_flip_p([1.0, 2.0, -3.0]), 1.0)
        # 1, 2, 4 (sum 7): patterns with |sum| >= 7 are +-(1+2+4) only; 1, 2, 3, -1
        # (sum 5): of 16, |sum| >= 5: +-7 (+++ then +-1... ) counted by hand below
        self.assertEqual(stats.sign_flip_p([1.0, 2.0, 4.0]), 2 / 8)
        d = [1.0, 2.0, 3.0, -1.0]
        import itertools
        want = sum(abs(sum(s * x for s, x in zip(signs, d))) >= 5 for signs in itertools.product((1, -1), repeat=4))
        self.assertEqual(want, 6)
        self.assertEqual(stats.sign_flip_p(d), 6 / 16)

    def test_holm(self):
        self.assertEqual(stats.holm([0.01, 0.04, 0.03, 0.005]), [0.03, 0.06, 0.06, 0.02])
        self.assertEqual(stats.holm([0.5, None, 0.01]), [0.5, None, 0.02])
        self.assertEqual(stats.holm([0.9, 0.8]), [1.0, 1.0])

    def test_pairs_by_repetition(self):
        # repetition 1 of a failed: it pairs 0 and 2 only
        self.assertEqual(stats.pairs({0: 1.0, 2: 3.0}, [4.0, 5.0, 6.0]), [(1.0, 4.0), (3.0, 6.0)])

    def test_student_t_known_values(self):
        # two-sided critical values of Student's t (tables): p = 0.05 at
        # t = 12.706 (df 1), 2.571 (df 5), 2.228 (df 10), 2.042 (df 30);
        # p = 0.01 at 4.032 (df 5); df 1 is Cauchy: P(|T| >= 1) = 1/2
        for t, df, p in ((12.706, 1, 0.05), (2.571, 5, 0.05), (2.228, 10, 0.05), (2.042, 30, 0.05),
                         (4.032, 5, 0.01), (1.0, 1, 0.5)):
            self.assertAlmostEqual(stats.student_t_p(t, df), p, delta=p * 2e-3, msg=(t, df))
            self.assertAlmostEqual(stats.student_t_quantile(p, df), t, delta=t * 2e-3, msg=(t, df))
        # df 2 has a closed form: p = 1 - t / sqrt(2 + t^2)
        for t in (0.1, 0.5, 1.0, 3.0, 30.0):
            self.assertAlmostEqual(stats.student_t_p(t, 2), 1 - t / math.sqrt(2 + t * t), places=12)
        self.assertEqual(stats.student_t_p(0.0, 5), 1.0)
        self.assertEqual(stats.student_t_p(math.inf, 5), 0.0)
        # far in the tail (a 12x change in 6 tight pairs): small, not 0 or negative
        self.assertTrue(0 < stats.student_t_p(200.0, 5) < 1e-9)
        # large df: the normal's 1.96
        self.assertAlmostEqual(stats.student_t_p(1.959964, 100000), 0.05, places=4)

    def test_t_test_by_hand(self):
        # d = 1, 2, 3: mean 2, sd 1, se 1/sqrt 3, t = 2 sqrt 3 = 3.464, df 2
        p, (lo, hi) = stats.t_test([1.0, 2.0, 3.0])
        self.assertAlmostEqual(p, 1 - 3.4641016 / math.sqrt(2 + 12), places=6)
        q = stats.student_t_quantile(0.05, 2)  # 4.303
        self.assertAlmostEqual(q, 4.303, places=3)
        self.assertAlmostEqual(lo, 2 - q / math.sqrt(3), places=9)
        self.assertAlmostEqual(hi, 2 + q / math.sqrt(3), places=9)

    def test_clear_difference_is_called(self):
        r = stats.paired([1.0, 1.1, 0.9, 1.05, 0.95, 1.0], [2.0, 2.1, 1.9, 2.05, 1.95, 2.0])
        self.assertAlmostEqual(r["ratio"], 0.5, places=2)
        self.assertEqual((r["n"], r["p_sign"]), (6, 2 / 64))
        self.assertLess(r["p"], 1e-6)
        self.assertLess(r["hi"], 1)
        self.assertEqual(stats.verdict(r, True), "better")
        self.assertEqual(stats.verdict(r, False), "worse")
        # the interval [0.47, 0.53] is far from level
        self.assertEqual(stats.verdict(r, True, 0.06), "inconclusive")
        self.assertIsNone(stats.check(r, True))

    def test_small_n_large_effect_survives_holm(self):
        """Six pairs, each patched 2.5-12x faster (as on a held-out checkpoint
        suite), among 13 cells: the sign-flip test's smallest p (2/64) times
        13 is 0.41, no difference; the t-test calls it, and the sign-flip check
        confirms it on its own."""
        patched = [0.556, 0.61, 0.9, 1.2, 2.0, 2.4]
        stock = [6.679, 6.5, 6.3, 6.0, 5.5, 6.1]
        r = stats.paired(patched, stock)
        others = [stats.paired([1.0, 1.1, 0.9, 1.0, 1.05, 0.95], [1.02, 1.0, 0.95, 1.1, 1.0, 0.97]) for _ in range(12)]
        tests = [r] + others
        stats.adjust(tests)
        self.assertGreater(stats.holm([t["p_sign"] for t in tests])[0], 0.4)
        self.assertEqual(stats.verdict(r, True, r["p_adj"]), "better")
        self.assertIsNone(stats.check(r, True, r["p_adj"], r["p_sign_adj"]))
        for o in others:
            self.assertEqual(stats.verdict(o, True, o["p_adj"]), "inconclusive")

    def test_check_flags_disagreement(self):
        # five pairs clearly faster, one slower: the t-test calls it, the
        # sign-flip test (p = 4/64) does not confirm, so it is no verdict
        r = stats.paired([0.5, 0.52, 0.49, 0.51, 0.5, 1.02], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
        self.assertLess(r["p"], 0.05)
        self.assertEqual(r["p_sign"], 4 / 64)
        self.assertEqual(stats.verdict(r, True), "inconclusive (the sign-flip test disagrees)")
        self.assertEqual(stats.check(r, True), "sign-flip does not confirm: p=0.062")
        # every pair the same way, but the settings' factor puts the
        # sign-flip's smallest p above 0.05: the phrase says so
        r = stats.paired([0.5, 0.4, 0.45, 0.5, 0.42, 0.48], [1.0] * 6, correction=3)
        self.assertEqual(stats.verdict(r, True), "inconclusive (the sign-flip test disagrees)")
        self.assertEqual(stats.check(r, True),
                         "sign-flip does not confirm: p=0.094, the smallest it can give with 6 pairs and 3 settings")
        # one wild pair inflates the spread: t finds no difference, every
        # pair is faster and the sign-flip test finds it
        r = stats.paired([0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.001], [1.0] * 8)
        self.assertGreaterEqual(r["p"], 0.05)
        self.assertEqual(stats.verdict(r, True), "inconclusive")
        self.assertEqual(stats.check(r, True), "sign-flip says better: p=0.0078")
        # with adjusted p-values given, the sign-flip's adjusted one decides
        self.assertIsNone(stats.check(r, True, 0.5, 0.06))
        self.assertEqual(stats.check(r, True, 0.5, 0.03), "sign-flip says better: p=0.03 (Holm)")
        # no verdict, no check
        self.assertIsNone(stats.check(stats.paired([1.0] * 3, [2.0] * 3), True))

    def test_report_cell_says_the_check(self):
        ok = stats.paired([0.5, 0.4, 0.45, 0.5, 0.42, 0.48], [1.0] * 6)
        odd = stats.paired([0.5, 0.52, 0.49, 0.51, 0.5, 1.02], [1.0] * 6)
        stats.adjust([ok, odd])
        # ok's interval is at Holm's first step (97.5%), odd's at its second (95%)
        self.assertRegex(report.fmt_ratio(ok, True),
                         r"^0\.46 \[0\.40, 0\.52\] p=1e-05 better; MDE 1\.1\dx; sign-flip p=0\.031$")
        self.assertRegex(report.fmt_ratio(odd, True),
                         r"^0\.57 \[0\.42, 0\.77\] p=0\.0048 inconclusive \(the sign-flip test disagrees\); MDE 1\.\d\dx; "
                         r"\*\*sign-flip does not confirm: p=0\.062\*\*$")

    def test_intervals_are_at_the_holm_level(self):
        """Each adjusted comparison's interval is at the level Holm's step
        down tested it at, so that it excludes 1 exactly when the adjusted
        p is below 0.05 (a 95% interval beside a Holm-adjusted p could read
        "1.21 [1.01, 1.44] p=0.073", no difference)."""
        import random
        rng = random.Random(5)
        disagreed_at_95 = 0
        for _ in range(60):
            tests = []
            for _ in range(rng.randint(2, 12)):
                shift = rng.choice([0.0, 0.05, 0.08, 0.12, 0.3])
                n = rng.choice([6, 8, 10])
                tests.append(stats.paired([rng.lognormvariate(shift, 0.1) for _ in range(n)],
                                          [rng.lognormvariate(0, 0.1) for _ in range(n)],
                                          correction=rng.choice([1, 1, 3])))
            plain = [dict(t) for t in tests]
            stats.adjust(tests)
            for t, was in zip(tests, plain):
                excludes = t["lo"] > 1 or t["hi"] < 1
                self.assertEqual(excludes, t["p_adj"] < stats.ALPHA, t)
                # never narrower than the unadjusted interval, p unchanged
                self.assertLessEqual(t["lo"], was["lo"] + 1e-12)
                self.assertGreaterEqual(t["hi"], was["hi"] - 1e-12)
                self.assertEqual(t["p"], was["p"])
                disagreed_at_95 += (was["lo"] > 1 or was["hi"] < 1) != (t["p_adj"] < stats.ALPHA)
        # the case the intervals are widened for does occur here
        self.assertGreater(disagreed_at_95, 0)

    def test_a_bound_near_1_shows_its_side(self):
        # two decimals would print [0.83, 1.00] beside "better"
        self.assertEqual(report.interval({"lo": 0.83, "hi": 0.99961}), "[0.83, 0.9996]")
        self.assertEqual(report.interval({"lo": 1.0004, "hi": 1.3}), "[1.0004, 1.30]")
        self.assertEqual(report.interval({"lo": 0.9, "hi": 1.0}), "[0.90, 1.00]")

    def test_holm_levels_by_hand(self):
        # p sorted 0.005, 0.01, 0.03, 0.04 of four: 0.005 < 0.05/4 and
        # 0.01 < 0.05/3 are rejected; 0.03 >= 0.05/2 stops the procedure,
        # and what is not rejected keeps the level of that step
        self.assertEqual(stats.holm_levels([0.01, 0.04, 0.03, 0.005]),
                         [0.05 / 3, 0.05 / 2, 0.05 / 2, 0.05 / 4])
        self.assertEqual(stats.holm_levels([0.5, None, 0.01]), [0.05, None, 0.025])
        r = stats.paired([1.3, 1.1, 1.25, 1.05, 1.4, 1.2], [1.0] * 6)
        other = stats.paired([1.0, 1.2, 0.9, 1.1, 1.0, 0.95], [1.1, 0.95, 1.15, 1.0, 1.05, 1.0])
        lo95 = r["lo"]
        stats.adjust([r, other])
        self.assertAlmostEqual(r["level"], 1 - 0.05 / 2)
        self.assertLess(r["lo"], lo95)

    def test_too_few_samples(self):
        for n in range(1, stats.MIN_PAIRS):
            r = stats.paired([1.0] * n, [2.0] * n)
            self.assertTrue(r["too_few"])
            self.assertIsNone(r["lo"])
            self.assertEqual(stats.verdict(r, True), "inconclusive (too few pairs)")
        # and why: below MIN_PAIRS the sign-flip check cannot confirm
        # anything (its smallest possible p is above 5%)
        self.assertGreater(stats.sign_flip_p([1.0] * (stats.MIN_PAIRS - 1)), stats.ALPHA)
        self.assertLess(stats.sign_flip_p([1.0] * stats.MIN_PAIRS), stats.ALPHA)
        self.assertEqual(stats.sign_flip_floor(stats.MIN_PAIRS), 2 / 2 ** stats.MIN_PAIRS)
        self.assertFalse(stats.paired([1.0] * stats.MIN_PAIRS, [2.0] * stats.MIN_PAIRS)["too_few"])

    def test_overlap_is_not_called(self):
        r = stats.paired([1.0, 1.2, 0.9, 1.1, 1.0, 0.95], [1.1, 0.95, 1.15, 1.0, 1.05, 1.0])
        self.assertEqual(stats.verdict(r, True), "inconclusive")
        self.assertLess(r["lo"], 1)
        self.assertGreater(r["hi"], 1)

    def test_level_needs_the_interval_within_the_margin(self):
        """"level" only where the interval lies within 1 +- margin: a
        difference not found with a wide interval is inconclusive."""
        import random
        rng = random.Random(3)
        tight = stats.paired([rng.lognormvariate(0, 0.01) for _ in range(10)], [1.0] * 10)
        self.assertLess(tight["hi"], 1.05)
        self.assertGreater(tight["lo"], 0.95)
        self.assertEqual(stats.verdict(tight, True), "level")
        # a margin the suite narrows below the interval's reach
        self.assertEqual(stats.verdict(tight, True, margin=0.001), "inconclusive")
        tight["margin"] = 0.001
        self.assertEqual(stats.verdict(tight, True), "inconclusive")
        # n.s. with an interval past the margin
        wide = stats.paired([1.0, 1.2, 0.9, 1.1, 1.0, 0.95], [1.1, 0.95, 1.15, 1.0, 1.05, 1.0])
        self.assertGreater(wide["p"], 0.05)
        self.assertEqual(stats.verdict(wide, True), "inconclusive")
        self.assertEqual(stats.verdict(wide, True, margin=0.5), "level")

    def test_mde_by_hand(self):
        """mde: exp((t_(0.975, n-1) + t_(0.8, n-1)) * se)."""
        r = stats.paired([1.1, 1.0, 0.9, 1.05, 0.95, 1.0], [1.0] * 6)
        d = [math.log(x) for x in [1.1, 1.0, 0.9, 1.05, 0.95, 1.0]]
        se = statistics.stdev(d) / math.sqrt(6)
        # t quantiles with 5 degrees of freedom: 2.5706 (0.975) and 0.9195 (0.8)
        self.assertAlmostEqual(stats.mde(r), math.exp((2.5706 + 0.9195) * se), places=3)
        # wider at a Holm level, none without a spread
        lvl = dict(r, level=1 - 0.05 / 4)
        self.assertGreater(stats.mde(lvl), stats.mde(r))
        self.assertIsNone(stats.mde(stats.paired([1.0], [1.0])))
        # the power it is stated at: a true effect of the MDE is found about
        # 80% of the time at this n and spread
        rng = random.Random(11)
        sd = statistics.stdev(d)
        m = math.log(stats.mde(r))
        hits = sum(stats.paired([rng.lognormvariate(m, sd) for _ in range(6)], [1.0] * 6)["p"] < 0.05
                   for _ in range(2000))
        self.assertAlmostEqual(hits / 2000, 0.8, delta=0.05)

    def test_a_verdict_is_one_of_five_words(self):
        import random
        rng = random.Random(9)
        seen = set()
        for _ in range(300):
            n = rng.choice([2, 6, 8])
            shift = rng.choice([0.0, 0.01, 0.3])
            a = stats.Reps({i: rng.lognormvariate(shift, 0.05) for i in range(n)},
                           failed=set(range(n, n + rng.choice([0, 0, 1]))))
            r = stats.paired(a, {i: 1.0 for i in range(n + 1)})
            v = stats.verdict(r, True)
            self.assertIn(v.split(" (")[0], ("better", "worse", "level", "inconclusive", "failed"), v)
            seen.add(v.split(" (")[0])
        self.assertLessEqual({"worse", "level", "inconclusive"}, seen)

    def test_a_a_false_positives_with_holm(self):
        """Identical distributions, 30 cells a report, 200 reports: the share
        of reports with any verdict (Holm) stays at or below 5%."""
        import random
        rng = random.Random(7)
        reports_with_a_verdict = 0
        for _ in range(200):
            rs = []
            for _ in range(30):
                n = 8
                a = [rng.lognormvariate(0, 0.1) for _ in range(n)]
                b = [rng.lognormvariate(0, 0.1) for _ in range(n)]
                rs.append(stats.paired(a, b))
            adj = stats.holm([r["p"] for r in rs])
            if any(stats.verdict(r, True, p) in ("better", "worse") for r, p in zip(rs, adj)):
                reports_with_a_verdict += 1
        # the t-test is exact on these normal log-ratios, so the share is
        # about 0.049 (and 0.085 with this seed: 200 reports have a
        # standard error of 0.015); without Holm it would be about 0.79
        self.assertLessEqual(reports_with_a_verdict / 200, 0.1)
        # per cell, uncorrected, the test holds its level too
        cells = [stats.paired([rng.gauss(10, 1) for _ in range(8)], [rng.gauss(10, 1) for _ in range(8)])
                 for _ in range(2000)]
        self.assertLessEqual(sum(r["p"] < 0.05 for r in cells) / 2000, 0.06)


    def test_committed_a_a_runs_stay_clean(self):
        """The committed A/A runs (the same daemon on both test hosts) have
        no cell better or worse, and no disagreement of the check."""
        root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "measurements")
        dirs = [os.path.join(root, d, s) for d in sorted(os.listdir(root)) if d.endswith("-aa")
                for s in sorted(os.listdir(os.path.join(root, d))) if os.path.isfile(os.path.join(root, d, s, "results.json"))]
        self.assertGreaterEqual(len(dirs), 2)
        cells = 0
        for d in dirs:
            for r in report.comparisons(report.load(d)):
                for c in [r["vs_default"], r["vs_best"]] + [pe["vs_best"] for pe in r["peers"].values()]:
                    if not c:
                        continue
                    cells += 1
                    self.assertFalse(c["too_few"], d)
                    self.assertFalse(stats.decided(stats.verdict(c, r["lower_is_better"], c["p_adj"])), (d, r["cell"]))
                    self.assertIsNone(stats.check(c, r["lower_is_better"], c["p_adj"], c["p_sign_adj"]), (d, r["cell"]))
        self.assertGreaterEqual(cells, 6)


def recorder(test, kind="overhead", repetitions=4):
    """A Results for a pretend suite, in a directory the test removes."""
    out = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, out, True)
    s = types.SimpleNamespace(name="t", kind=kind, path=os.path.join(out, "t.toml"), description="", margin=0.05,
                              repetitions=repetitions, seed={})
    with mock.patch.object(results, "provenance", lambda path: {}):
        return results.Results(s, out)


class RepetitionTest(unittest.TestCase):
    """Every value carries its repetition: a failed sample or a None among
    a field's values shifts nothing, and a list that cannot be matched to
    repetitions is an error naming the cell and the field, never paired by
    position."""

    def test_a_none_shifts_nothing(self):
        res = recorder(self)
        cell = results.Cell("stock", scenario="pingpong", container="bridge")
        res.add(cell, 1.0, None, p50_us=10.0)
        res.add(cell, 1.1, None, p50_us=None)  # ran, printed no median
        res.add(cell, None, "pingpong failed", p50_us=None)
        res.add(cell, 1.3, None, p50_us=13.0)
        e = res.doc["results"][0]
        self.assertEqual((e["reps"], e["failed"], e["failed_reps"]), ([0, 1, 3], 1, [2]))
        got = report.keyed(e, "p50_us")
        self.assertEqual(dict(got), {0: 10.0, 3: 13.0})
        self.assertEqual(got.failed, {1, 2})
        self.assertEqual(dict(report.keyed(e)), {0: 1.0, 1: 1.1, 3: 1.3})
        self.assertEqual(report.keyed(e).failed, {2})
        # the kind's compared value (pingpong: the median round trip) is read the same way
        self.assertEqual(dict(report.by_rep(e, "overhead")), {0: 10.0, 3: 13.0})
        self.assertEqual(report.values(e, "overhead")[0], [10.0, 13.0])
        # and it survives the file
        with open(res.path) as f:
            self.assertEqual(dict(report.keyed(json.load(f)["results"][0], "p50_us")), {0: 10.0, 3: 13.0})

    def test_warm_ups_are_not_repetitions(self):
        res = recorder(self, kind="pull")
        cell = results.Cell("stock", profile="far", image="small")
        res.add(cell, None, None, rep=None, warmup_s=2.0, served_bytes=5)
        res.add(cell, 3.0, None, rep=0, served_bytes=7)
        res.add(cell, 3.1, None, rep=1, served_bytes=8)
        e = res.doc["results"][0]
        self.assertEqual(dict(report.keyed(e, "served_bytes")), {0: 7, 1: 8})
        self.assertEqual(dict(report.keyed(e, "warmup_s")), {})

    def test_a_list_that_does_not_match_is_an_error(self):
        # per attempt, a failed one among them, and no record of whose each value is
        e = {"flavor": "patched", "profile": None, "image": "ab/pingpong", "scenario": "pingpong",
             "container": "bridge", "params": {}, "times_s": [1.0, 1.0, 1.0], "reps": [0, 1, 3], "failed": 1,
             "failed_reps": [2], "errors": ["x"], "p50_us": [10.0, 11.0, 12.0, 13.0]}
        with self.assertRaisesRegex(report.Unpairable, r"patched ab/pingpong pingpong bridge \(defaults\): p50_us: "):
            report.keyed(e, "p50_us")
        doc = {"kind": "overhead", "results": [e, dict(e, flavor="stock", failed=0, failed_reps=[],
                                                        times_s=[1.0] * 4, reps=[0, 1, 2, 3])]}
        with self.assertRaisesRegex(report.Unpairable, r"p50_us"):
            report.comparisons(doc)

    def test_results_from_before(self):
        """A results.json from before the repetitions of every list were
        recorded: a list as long as reps is theirs; times without reps are
        in repetition order when none failed; anything else is an error."""
        e = {"flavor": "stock", "times_s": [1.0, 2.0, 3.0], "reps": [0, 2, 3], "failed": 1, "failed_reps": [1],
             "rps": [10.0, 20.0, 30.0]}
        self.assertEqual(dict(report.keyed(e, "rps")), {0: 10.0, 2: 20.0, 3: 30.0})
        self.assertEqual(dict(report.keyed({"times_s": [1.0, 2.0], "errors": []})), {0: 1.0, 1: 2.0})
        with self.assertRaisesRegex(report.Unpairable, "times_s"):
            report.keyed({"flavor": "stock", "times_s": [1.0, 2.0], "failed": 1, "errors": ["x"]})
        # failures without their repetitions: which pairs they leave is not known
        with self.assertRaisesRegex(report.Unpairable, "failed"):
            report.keyed({"flavor": "stock", "times_s": [1.0, 2.0], "reps": [0, 2], "failed": 1})


class FailureVerdictTest(unittest.TestCase):
    """A repetition that failed on one side counts: the comparison says
    how many and gives no verdict."""

    def doc(self):
        # patched is as fast as stock, but fails its three slowest runs (6-8)
        stock = [2.0, 2.1, 1.9, 2.05, 1.95, 2.0, 2.0, 2.1, 1.9]
        patched = [1.6, 1.68, 1.52, 1.64, 1.56, 1.6]
        base = {"profile": "far", "image": "small", "scenario": None, "container": None, "errors": []}
        return {"suite": "t", "kind": "pull", "repetitions": 9, "started": "x", "finished": "y",
                "machine": {"cpu": "c", "cpus": 2, "memory_gib": 1, "kernel": "k"},
                "daemons": {"stock": {"version": "a"}, "patched": {"version": "b"}}, "seed": {}, "results": [
                    dict(base, flavor="stock", params={}, times_s=stock, reps=list(range(9)), failed=0,
                         failed_reps=[]),
                    dict(base, flavor="patched", params={}, times_s=patched, reps=list(range(6)), failed=3,
                         failed_reps=[6, 7, 8], errors=["timeout after 600 s"] * 3)]}

    def test_failures_on_slow_runs_do_not_look_faster(self):
        [row] = report.comparisons(self.doc())
        r = row["vs_default"]
        self.assertEqual((r["n"], r["failed"]), (6, 3))
        self.assertEqual(stats.verdict(r, True, r["p_adj"]), "inconclusive (3 failed)")
        self.assertIsNone(stats.check(r, True, r["p_adj"], r["p_sign_adj"]))
        table = report.summary_table(self.doc())
        self.assertIn("n=6: inconclusive (3 failed)", table)
        self.assertNotIn("better", table)
        self.assertIn("| 3 patched, 0 stock |", table)

    def test_paired_counts_each_side(self):
        a = stats.Reps({0: 1.0, 1: 1.0, 3: 1.0}, failed={2})
        b = stats.Reps({0: 2.0, 2: 2.0, 3: 2.0}, failed={1})
        r = stats.paired(a, b)
        self.assertEqual((r["n"], r["failed"]), (2, 2))
        self.assertEqual(stats.verdict(r, True), "inconclusive (2 failed)")
        # a side that failed every repetition: no ratio, the failures said
        r = stats.paired(stats.Reps({}, failed={0, 1}), {0: 1.0, 1: 1.0})
        self.assertEqual((r["n"], r["failed"], r["ratio"]), (0, 2, None))
        self.assertEqual(stats.verdict(r, True), "failed (2 of 2)")
        self.assertEqual(report.fmt_ratio(r, True), "n=0: failed (2 of 2)")
        # none failed: as before
        self.assertEqual(stats.paired([1.0] * 6, [2.0] * 6)["failed"], 0)

    def test_a_side_that_failed_every_time_is_shown(self):
        # the sections' ratios (report.versus): a side with no value left is
        # its failures, not an empty cell
        self.assertEqual(report.versus(stats.Reps({}, failed={0, 1, 2}), {0: 1.0, 1: 1.0, 2: 1.0}, True),
                         "n=0: failed (3 of 3)")
        self.assertEqual(report.versus({}, {0: 1.0}, True), "-")

    def test_the_statistics_paragraph_says_so(self):
        self.assertIn("inconclusive (k failed)", report.STATISTICS)


class ShTimeoutTest(unittest.TestCase):
    """A command past its timeout is ended with what it started and
    answers as a failure; TimeoutExpired never reaches the caller."""

    def test_timeout(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        pidfile = os.path.join(d, "pid")
        t0 = time.monotonic()
        p = hosts.sh("sh", "-c", f"sleep 30 & echo $! >{pidfile}; wait", check=False, timeout=0.5)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(p.returncode, hosts.TIMED_OUT)
        self.assertEqual(p.stderr.strip().splitlines()[-1], "timeout after 0.5 s")
        with open(pidfile) as f:
            pid = int(f.read())
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.05)
        self.assertFalse(alive(pid), "the command's child outlived it")
        with self.assertRaisesRegex(hosts.HostError, "timeout after 0.5 s"):
            hosts.sh("sleep", "30", timeout=0.5)
        self.assertEqual(hosts.sh("true", timeout=5).returncode, 0)

    def test_hyperfine_failure_is_the_timeout(self):
        done = subprocess.CompletedProcess([], hosts.TIMED_OUT, "", "timeout after 45 s\n")
        with mock.patch.object(hosts, "sh", lambda *a, **kw: done):
            self.assertEqual(measure.hyperfine("/nonexistent", {}, "docker pull x", timeout=45),
                             (None, "timeout after 45 s"))


def alive(pid):
    """Whether pid runs (a zombie waiting for its reaper does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class ParseTest(unittest.TestCase):
    def test_json_line(self):
        self.assertEqual(measure.parse_json_line('noise\n{"mean_us": 7.5}\n'), {"mean_us": 7.5})
        self.assertIsNone(measure.parse_json_line("pingpong: connection refused\n"))
        self.assertIsNone(measure.parse_json_line(None))

    def test_rotate(self):
        self.assertEqual(measure.rotate(["a", "b", "c"], 0), ["a", "b", "c"])
        self.assertEqual(measure.rotate(["a", "b", "c"], 4), ["b", "c", "a"])
        self.assertEqual(measure.rotate([], 3), [])


if __name__ == "__main__":
    unittest.main()


class RejudgeTest(unittest.TestCase):
    """ab.rejudge lists every comparison under the rule before 2026-11-29
    and under the five verdicts."""

    def test_a_committed_fixture(self):
        from ab import rejudge
        top = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, top, True)
        os.makedirs(os.path.join(top, "run"))
        shutil.copy(os.path.join(os.path.dirname(__file__), "golden", "pull.results.json"),
                    os.path.join(top, "run", "results.json"))
        out = rejudge.table([top])
        rows = [line for line in out.splitlines() if line.startswith(f"| {top}")]
        self.assertGreater(len(rows), 0)
        self.assertRegex(out.splitlines()[-1], rf"^{len(rows)} comparisons, \d+ whose verdict word changed\.$")
        r = stats.paired([1.0, 1.2, 0.9, 1.1, 1.0, 0.95], [1.1, 0.95, 1.15, 1.0, 1.05, 1.0])
        stats.adjust([r])
        self.assertEqual(rejudge.old_verdict(r, True), "n.s.")
        self.assertEqual(stats.verdict(r, True, r["p_adj"]), "inconclusive")


class FamilyTest(unittest.TestCase):
    """One Holm family per run of a group of suites, each comparison in it
    once."""

    def doc(self, shift, name="t"):
        """A pull suite of 8 repetitions: stock at its default (the faster
        setting) and at max-concurrent-downloads 1, patched shift faster."""
        reps = list(range(8))
        stock = [2.0, 2.1, 1.9, 2.05, 1.95, 2.0, 2.02, 1.98]
        base = {"profile": "far", "image": "small", "scenario": None, "container": None, "errors": [],
                "reps": reps, "failed": 0, "failed_reps": []}
        return {"suite": name, "kind": "pull", "repetitions": 8, "started": "x", "finished": "y",
                "machine": {"cpu": "c", "cpus": 2, "memory_gib": 1, "kernel": "k"},
                "daemons": {"stock": {"version": "a"}, "patched": {"version": "b"}}, "seed": {}, "results": [
                    dict(base, flavor="stock", params={}, times_s=stock),
                    dict(base, flavor="stock", params={"max-concurrent-downloads": 1}, times_s=[x * 3 for x in stock]),
                    dict(base, flavor="patched", params={}, times_s=[x * shift * (1 + 0.01 * (i % 3))
                                                                     for i, x in enumerate(stock)])]}

    def test_a_default_that_is_the_best_is_one_comparison(self):
        [row] = report.comparisons(self.doc(0.9))
        self.assertTrue(row["stock_best"]["default"])
        self.assertIs(row["vs_best"], row["vs_default"])
        self.assertEqual(len(report.tests_of([row])), 1)
        # alone in its family: Holm's level is 95%, not 97.5% as two would be
        self.assertAlmostEqual(row["vs_default"]["level"], 0.95)
        self.assertIn("best of 2: the default, one comparison", report.summary_table(self.doc(0.9)))

    def test_a_group_run_is_one_family(self):
        from ab import __main__ as cli
        top = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, top, True)
        done = []
        for i, shift in enumerate([0.9, 0.97, 1.0]):
            out = os.path.join(top, f"s{i}")
            os.makedirs(out)
            with open(os.path.join(out, "results.json"), "w") as f:
                json.dump(self.doc(shift, f"s{i}"), f)
            done.append((types.SimpleNamespace(name=f"s{i}", kind="pull"), out))
        text = cli.group_summary(done, top)
        self.assertIn("One Holm family across the 3 suites of this run (3 comparisons)", text)
        with open(os.path.join(top, "summary.md")) as f:
            self.assertEqual(f.read(), text)
        # the family's p-values are Holm's over all three, not each alone
        rows = [report.comparisons(report.load(out), adjust=False) for _, out in done]
        ps = [r[0]["vs_default"]["p"] for r in rows]
        self.assertEqual(report.adjust_rows(rows), 3)
        self.assertEqual([r[0]["vs_default"]["p_adj"] for r in rows], stats.holm(ps))
        # alone, a suite's comparison is its own family
        alone = report.comparisons(report.load(done[1][1]))[0]["vs_default"]
        self.assertEqual(alone["p_adj"], ps[1])
        self.assertGreater(rows[1][0]["vs_default"]["p_adj"], ps[1])
        # one suite: its own family, no summary.md
        one = os.path.join(top, "one")
        os.makedirs(one)
        cli.group_summary(done[:1], one)
        self.assertFalse(os.path.exists(os.path.join(one, "summary.md")))


class HostStateTest(unittest.TestCase):
    """Every measured sample carries what the machine was doing when it was
    recorded; a warm-up (no repetition) does not."""

    def test_recorded_with_each_measured_sample(self):
        res = recorder(self)
        cell = results.Cell("stock", scenario="pingpong", container="bridge")
        res.add(cell, 1.0)
        res.add(cell, None, "timeout after 600 s")
        res.add(cell, 0.5, rep=None)  # a warm-up
        [e] = res.doc["results"]
        self.assertEqual(len(e["host"]), 2)
        self.assertEqual(e["reps_of"]["host"], [0, 1])
        for h in e["host"]:
            self.assertRegex(h["at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
            for k in ("load1", "psi_cpu", "psi_io", "psi_memory"):
                self.assertTrue(h[k] is None or h[k] >= 0, (k, h[k]))
        # this machine has a load average, and pressure where the kernel
        # keeps it
        self.assertIsNotNone(e["host"][0]["load1"])
        if os.path.exists("/proc/pressure/cpu"):
            self.assertIsNotNone(e["host"][0]["psi_cpu"])
        lines = report.host_lines(res.doc)
        self.assertEqual(len(lines), 1)
        self.assertIn("the machine during the 2 samples: load average", lines[0])
        self.assertEqual(report.host_lines({"results": [{"times_s": [1.0]}]}), [])


def harness_sources():
    """The paths of hack/ab's modules, its tests left out."""
    root = os.path.join(os.path.dirname(__file__), "..")
    return sorted(os.path.join(d, f) for d, _, files in os.walk(root) if os.path.basename(d) != "tests"
                  for f in files if f.endswith(".py"))


class TypedCoreTest(unittest.TestCase):
    """The core asks kinds and systems through an explicit registry and a
    Kind with defaults: nothing is looked up by name."""

    def test_no_hook_looked_up_by_name(self):
        import ast
        root = os.path.join(os.path.dirname(__file__), "..")
        found = []
        for path in harness_sources():
            with open(path) as fh:
                tree = ast.parse(fh.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Call):
                    name = node.func.id if isinstance(node.func, ast.Name) else \
                        node.func.attr if isinstance(node.func, ast.Attribute) else None
                    if name in ("hasattr", "import_module", "__import__"):
                        found.append(f"{os.path.relpath(path, root)}:{node.lineno} {name}")
                if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "importlib" for a in node.names) or \
                        isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "importlib":
                    found.append(f"{os.path.relpath(path, root)}:{node.lineno} importlib")
        self.assertEqual(found, [])

    def test_a_misspelt_hook_is_an_error(self):
        from ab import kinds
        from ab.kinds import pull
        with self.assertRaises(TypeError):
            kinds.Kind(name="x", KEYS=(), SWITCHES=(), REPETITIONS=1, Suite=object,
                       validate=pull.validate, refuse=pull.refuse, run=pull.run, sumary_note=lambda doc: None)

    def test_the_registry(self):
        from ab import kinds, systems
        self.assertEqual([k.name for k in kinds.every()], list(kinds.NAMES))
        self.assertEqual(kinds.get("zns-sweep").name, "zns-sweep")
        # defaults: nothing to prepare, no extra images, times compared
        self.assertIsNone(kinds.get("pull").prepare(None))
        self.assertEqual(kinds.get("pull").images(None), [])
        self.assertIsNone(kinds.get("pull").compared)
        self.assertEqual([m.__name__ for m in systems.every()], [f"ab.systems.{n}" for n in systems.NAMES])


class CompareTest(unittest.TestCase):
    """ab compare: B's patched/stock against A's, Welch's test on the two
    runs' log-ratios, Holm across the comparisons, five verdicts."""

    def dirs(self, *shifts):
        top = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, top, True)
        out = []
        for i, shift in enumerate(shifts):
            d = os.path.join(top, f"r{i}")
            os.makedirs(d)
            with open(os.path.join(d, "results.json"), "w") as f:
                json.dump(FamilyTest.doc(None, shift, f"r{i}"), f)
            out.append(d)
        return out

    def test_by_hand(self):
        from ab import compare
        a, b = self.dirs(0.9, 0.7)
        [row] = compare.compare(report.load(a), report.load(b))
        ra, rb, t = row["a"], row["b"], row["change"]
        self.assertAlmostEqual(t["ratio"], rb["ratio"] / ra["ratio"])
        va, vb = ra["log_se"] ** 2, rb["log_se"] ** 2
        df = (va + vb) ** 2 / (va ** 2 / 7 + vb ** 2 / 7)
        tt = (rb["log_mean"] - ra["log_mean"]) / math.sqrt(va + vb)
        self.assertAlmostEqual(t["p"], stats.student_t_p(tt, df))
        # alone in its family, Holm is the test itself
        self.assertEqual(t["p_adj"], t["p"])
        self.assertEqual(stats.verdict(t, True, t["p_adj"]), "better")
        self.assertEqual(stats.verdict(compare.compare(report.load(b), report.load(a))[0]["change"], True,
                                       None), "worse")

    def test_the_same_is_level_and_a_small_change_inconclusive(self):
        from ab import compare
        a, b, c = self.dirs(0.9, 0.9, 0.94)
        [row] = compare.compare(report.load(a), report.load(b))
        self.assertAlmostEqual(row["change"]["ratio"], 1.0)
        self.assertEqual(stats.verdict(row["change"], True, row["change"]["p_adj"]), "level")
        [row] = compare.compare(report.load(a), report.load(c), margin=0.01)
        self.assertNotEqual(stats.verdict(row["change"], True, row["change"]["p_adj"]), "level")
        self.assertIsNotNone(stats.mde(row["change"]))

    def test_the_command(self):
        import contextlib
        import io
        from ab import __main__ as cli
        a, b = self.dirs(0.9, 0.7)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(cli.main(["compare", a, b]), 0)
        self.assertIn(f"patched/stock in B against A (A: {a}, B: {b})", out.getvalue())
        self.assertRegex(out.getvalue(), r"\| far / small \| stock default \| 0\.91 \(8\) \| 0\.71 \(8\) \| "
                         r"0\.778 \[0\.7\d, 0\.7\d\] p=\S+ \| better \| 1\.\d\dx \|")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(cli.main(["compare", a, os.path.join(a, "missing")]), 2)
        self.assertIn("error: compare:", err.getvalue())


class ForestTest(unittest.TestCase):
    """ab.forest draws the comparisons of the runs its spec lists, as the
    reports compute them."""

    def test_rows_and_drawing(self):
        from ab import forest
        top = tempfile.mkdtemp(dir=os.path.join(os.path.dirname(__file__)))
        self.addCleanup(shutil.rmtree, top, True)
        for i, shift in enumerate([0.5, 1.0]):
            os.makedirs(os.path.join(top, f"r{i}"))
            with open(os.path.join(top, f"r{i}", "results.json"), "w") as f:
                json.dump(FamilyTest.doc(None, shift, f"r{i}"), f)
        rel = os.path.relpath(top, hosts.ROOT)
        spec = {"title": "t", "runs": [{"dir": f"{rel}/r0", "label": "half"}, {"dir": f"{rel}/r1", "label": "same"}]}
        drawn = forest.rows(spec)
        self.assertEqual([(d[0], d[2]) for d in drawn], [("half", "stock default"), ("same", "stock default")])
        want = report.comparisons(report.load(os.path.join(top, "r0")))[0]["vs_default"]
        self.assertAlmostEqual(drawn[0][3]["ratio"], want["ratio"])
        self.assertAlmostEqual(drawn[0][3]["lo"], want["lo"])
        out = os.path.join(top, "forest.png")
        forest.draw(spec, out)
        with open(out, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        with open(os.path.join(top, "forest.md")) as f:
            md = f.read()
        self.assertRegex(md, r"\| half \| far / small \| stock default \| 0\.50 \[0\.50, 0\.51\] \| 8 \| better \|")
        self.assertRegex(md, r"\| same \| far / small \| stock default \| 1\.01 ")


class ModuleSizeTest(unittest.TestCase):
    def test_no_module_over_600_lines(self):
        root = os.path.join(os.path.dirname(__file__), "..")
        big = []
        for path in harness_sources():
            with open(path) as fh:
                n = sum(1 for _ in fh)
            if n > 600:
                big.append(f"{os.path.relpath(path, root)}: {n}")
        self.assertEqual(big, [])


class AATest(unittest.TestCase):
    """An A/A run's report states its false-positive rate."""

    def test_rate_stated(self):
        doc = FamilyTest.doc(None, 1.0)
        doc["daemons"] = {"stock": {"version": "a", "binary": "dockerd-stock"},
                          "patched": {"version": "a", "binary": "dockerd-stock"}}
        doc["provenance"] = {"series": "x", "upstream": {}}
        lines = report.provenance_lines(doc)
        self.assertRegex(lines[-1], r"^- \*\*A/A run: both test hosts run dockerd-stock\*\*.*False positives: "
                         r"\d of 1 comparisons called better or worse \(\d+\.\d%; Holm keeps .*before Holm \d had "
                         r"p < 0\.05")
        # not an A/A run: no rate
        doc["daemons"]["patched"]["binary"] = "dockerd-patched"
        self.assertNotIn("False positives", "\n".join(report.provenance_lines(doc)))
