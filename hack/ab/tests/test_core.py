"""What every kind measures with and computes: statistics, the order of
the measurements, the JSON line of a measuring program."""
import math
import os
import unittest

from ab import measure, report, stats


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

    def test_betainc(self):
        # I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(a, b) = 1 - I_(1-x)(b, a)
        for x in (0.0, 0.1, 0.5, 0.9, 1.0):
            self.assertAlmostEqual(stats.betainc(1, 1, x), x, places=12)
            self.assertAlmostEqual(stats.betainc(3.5, 1, x), x ** 3.5, places=12)
        self.assertAlmostEqual(stats.betainc(2.5, 0.5, 0.3), 1 - stats.betainc(0.5, 2.5, 0.7), places=12)

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
        self.assertEqual(stats.verdict(r, True, 0.06), "n.s.")
        self.assertIsNone(stats.check(r, True))

    def test_small_n_large_effect_survives_holm(self):
        """Six pairs, each patched 2.5-12x faster (as on a held-out checkpoint
        suite), among 13 cells: the sign-flip test's smallest p (2/64) times
        13 is 0.41, n.s.; the t-test calls it, and the sign-flip check
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
            self.assertEqual(stats.verdict(o, True, o["p_adj"]), "n.s.")

    def test_check_flags_disagreement(self):
        # five pairs clearly faster, one slower: the t-test calls it, the
        # sign-flip test (p = 4/64) does not confirm
        r = stats.paired([0.5, 0.52, 0.49, 0.51, 0.5, 1.02], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
        self.assertLess(r["p"], 0.05)
        self.assertEqual(r["p_sign"], 4 / 64)
        self.assertEqual(stats.verdict(r, True), "better")
        self.assertEqual(stats.check(r, True), "sign-flip does not confirm: p=0.062")
        # every pair the same way, but the settings' factor puts the
        # sign-flip's smallest p above 0.05: the phrase says so
        r = stats.paired([0.5, 0.4, 0.45, 0.5, 0.42, 0.48], [1.0] * 6, correction=3)
        self.assertEqual(stats.verdict(r, True), "better")
        self.assertEqual(stats.check(r, True),
                         "sign-flip does not confirm: p=0.094, the smallest it can give with 6 pairs and 3 settings")
        # one wild pair inflates the spread: t says n.s., every pair is
        # faster and the sign-flip test finds it
        r = stats.paired([0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.001], [1.0] * 8)
        self.assertGreaterEqual(r["p"], 0.05)
        self.assertEqual(stats.verdict(r, True), "n.s.")
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
        self.assertRegex(report.fmt_ratio(ok, True), r"^0\.46 \[0\.41, 0\.50\] p=1e-05 better; sign-flip p=0\.031$")
        self.assertRegex(report.fmt_ratio(odd, True),
                         r"^0\.57 \[0\.42, 0\.77\] p=0\.0048 better; \*\*sign-flip does not confirm: p=0\.062\*\*$")

    def test_too_few_samples(self):
        for n in range(1, stats.MIN_PAIRS):
            r = stats.paired([1.0] * n, [2.0] * n)
            self.assertTrue(r["too_few"])
            self.assertIsNone(r["lo"])
            self.assertEqual(stats.verdict(r, True), f"too few samples (n={n})")
        # and why: below MIN_PAIRS the sign-flip check cannot confirm
        # anything (its smallest possible p is above 5%)
        self.assertGreater(stats.sign_flip_p([1.0] * (stats.MIN_PAIRS - 1)), stats.ALPHA)
        self.assertLess(stats.sign_flip_p([1.0] * stats.MIN_PAIRS), stats.ALPHA)
        self.assertEqual(stats.sign_flip_floor(stats.MIN_PAIRS), 2 / 2 ** stats.MIN_PAIRS)
        self.assertFalse(stats.paired([1.0] * stats.MIN_PAIRS, [2.0] * stats.MIN_PAIRS)["too_few"])

    def test_overlap_is_not_called(self):
        r = stats.paired([1.0, 1.2, 0.9, 1.1, 1.0, 0.95], [1.1, 0.95, 1.15, 1.0, 1.05, 1.0])
        self.assertEqual(stats.verdict(r, True), "n.s.")
        self.assertLess(r["lo"], 1)
        self.assertGreater(r["hi"], 1)

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
                    self.assertEqual(stats.verdict(c, r["lower_is_better"], c["p_adj"]), "n.s.", (d, r["cell"]))
                    self.assertIsNone(stats.check(c, r["lower_is_better"], c["p_adj"], c["p_sign_adj"]), (d, r["cell"]))
        self.assertGreaterEqual(cells, 6)


class InterleaveTest(unittest.TestCase):
    def test_abab_and_alternating_start(self):
        v = [("stock", 1), ("stock", 3), ("stock", 7), ("patched", 0)]
        self.assertEqual([f for f, _ in measure.interleave(list(v), 0)], ["patched", "stock", "stock", "stock"])
        self.assertEqual([f for f, _ in measure.interleave(list(v), 1)], ["stock", "patched", "stock", "stock"])
        two = [("stock", None), ("patched", None)]
        self.assertNotEqual(measure.interleave(list(two), 0), measure.interleave(list(two), 1))


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
