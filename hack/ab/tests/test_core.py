"""What every kind measures with and computes: statistics, the order of
the measurements, the JSON line of a measuring program."""
import unittest

from ab import measure, stats


class StatsTest(unittest.TestCase):
    def test_summary(self):
        s = stats.summary([3.0, 1.0, 2.0, None])
        self.assertEqual((s["n"], s["median"], s["min"], s["max"]), (3, 2.0, 1.0, 3.0))
        self.assertIsNone(stats.summary([]))

    def test_ratio_clear_difference_is_significant(self):
        r = stats.ratio_ci([1.0, 1.1, 0.9, 1.05, 0.95], [2.0, 2.1, 1.9, 2.05, 1.95])
        self.assertAlmostEqual(r["ratio"], 0.5, places=2)
        self.assertTrue(r["significant"])
        self.assertLess(r["hi"], 1)

    def test_one_sample_gives_no_verdict(self):
        r = stats.ratio_ci([1.0], [2.0, 2.1])
        self.assertAlmostEqual(r["ratio"], 1.0 / 2.05)
        self.assertIsNone(r["lo"])
        self.assertFalse(r["significant"])

    def test_ratio_overlap_is_not_significant(self):
        r = stats.ratio_ci([1.0, 1.2, 0.9], [1.1, 0.95, 1.15])
        self.assertFalse(r["significant"])


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
