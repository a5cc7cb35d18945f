"""What every kind measures with and computes: statistics, the order of
the measurements, the JSON line of a measuring program."""
import unittest

from ab import measure, stats


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

    def test_clear_difference_is_called(self):
        r = stats.paired([1.0, 1.1, 0.9, 1.05, 0.95, 1.0], [2.0, 2.1, 1.9, 2.05, 1.95, 2.0])
        self.assertAlmostEqual(r["ratio"], 0.5, places=2)
        self.assertEqual((r["n"], r["p"]), (6, 2 / 64))
        self.assertLess(r["hi"], 1)
        self.assertEqual(stats.verdict(r, True), "better")
        self.assertEqual(stats.verdict(r, False), "worse")
        self.assertEqual(stats.verdict(r, True, 0.06), "n.s.")

    def test_too_few_samples(self):
        for n in range(1, stats.MIN_PAIRS):
            r = stats.paired([1.0] * n, [2.0] * n)
            self.assertTrue(r["too_few"])
            self.assertEqual(stats.verdict(r, True), f"too few samples (n={n})")
        # and why: below MIN_PAIRS the smallest possible p is above 5%
        self.assertGreater(stats.sign_flip_p([1.0] * (stats.MIN_PAIRS - 1)), stats.ALPHA)
        self.assertLess(stats.sign_flip_p([1.0] * stats.MIN_PAIRS), stats.ALPHA)
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
        self.assertLessEqual(reports_with_a_verdict / 200, 0.05)
        # per cell, uncorrected, the test holds its level too
        cells = [stats.paired([rng.gauss(10, 1) for _ in range(8)], [rng.gauss(10, 1) for _ in range(8)])
                 for _ in range(2000)]
        self.assertLessEqual(sum(r["p"] < 0.05 for r in cells) / 2000, 0.06)


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
