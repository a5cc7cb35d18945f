import json
import os
import tempfile
import unittest

from ab import measure, report, stats


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


def render(doc):
    """Write doc as results.json, build the report; (report.md, the files written)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "results.json"), "w") as f:
            json.dump(doc, f)
        report.write(d)
        with open(os.path.join(d, "report.md")) as f:
            md = f.read()
        return md, {n: os.path.getsize(os.path.join(d, n)) for n in os.listdir(d)}


class ReportTest(unittest.TestCase):
    def test_report_from_results(self):
        doc = {"suite": "t", "kind": "pull", "repetitions": 3, "started": "x", "finished": "y",
               "machine": {"cpu": "c", "cpus": 2, "memory_gib": 1, "kernel": "k"},
               "daemons": {"stock": {"version": "29.7.1"}, "patched": {"version": "29.7.1+ab.x"}},
               "link": {"backend": "tun"}, "seed": {"best_vs_worst_pct": {"far": {"small": 189.91}}},
               "results": []}
        for mcd, ts in ((1, [4.0, 4.1, 4.2]), (3, [3.0, 3.1, 3.2]), (7, [2.5, 2.6, 2.4])):
            doc["results"].append({"flavor": "stock", "profile": "far", "image": "small",
                                   "params": {"max-concurrent-downloads": mcd}, "scenario": None,
                                   "container": None, "times_s": ts, "errors": []})
        doc["results"].append({"flavor": "patched", "profile": "far", "image": "small", "params": {},
                               "scenario": None, "container": None, "times_s": [2.5, 2.45, 2.55], "errors": []})
        md, files = render(doc)
        self.assertTrue(files.get("pull.png", 0) > 1000)
        row = report.comparisons(doc)[0]
        self.assertEqual(row["stock_default"]["params"], "max-concurrent-downloads=3")
        self.assertEqual(row["stock_best"]["params"], "max-concurrent-downloads=7")
        self.assertAlmostEqual(row["vs_default"]["ratio"], 2.5 / 3.1, places=3)
        self.assertIn("| far / small |", md)
        self.assertIn("2.450, 2.500, 2.550".replace("2.450, 2.500, 2.550", "2.500, 2.450, 2.550"), md)
        # Table 1: best c=7, worst c=1, (4.1 - 2.5) / 2.5 = 64%, the seed's number beside it
        self.assertIn("| far | small | 2.500 s (c=7) | 4.100 s (c=1) | 64% | 189.91% |", md)

    def test_floor_table(self):
        doc = {"suite": "t", "kind": "checkpoint", "repetitions": 3, "started": "x", "finished": "y",
               "machine": {}, "daemons": {"stock": {"version": "a"}, "patched": {"version": "b"}},
               "seed": {}, "results": []}
        for f, ts in (("stock", [20.0, 21.0, 22.0]), ("patched", [1.0, 1.1, 1.2]), ("runc", [0.8, 0.9, 1.0])):
            doc["results"].append({"flavor": f, "profile": None, "image": "ab/memholder", "params": None,
                                   "scenario": "alone", "container": "512MiB", "times_s": ts, "errors": []})
        md, _ = render(doc)
        self.assertIn("| 512MiB | 0.900 s | 21.000 s | 1.100 s | 1.22", md)


    def test_together_table(self):
        doc = {"suite": "t", "kind": "checkpoint", "repetitions": 3, "started": "x", "finished": "y",
               "machine": {}, "daemons": {"stock": {"version": "a"}, "patched": {"version": "b"}},
               "seed": {}, "results": []}
        for f, scen, c, ts in (("stock", "alone", "16MiB", [0.8, 0.9, 1.0]),
                               ("stock", "together", "16MiB", [2.6, 2.7, 2.8]),
                               ("patched", "alone", "16MiB", [0.10, 0.12, 0.14]),
                               ("patched", "together", "16MiB", [0.15, 0.18, 0.21]),
                               ("stock", "together", "(batch)", [20.0, 21.0, 22.0]),
                               ("patched", "together", "(batch)", [1.2, 1.3, 1.4])):
            doc["results"].append({"flavor": f, "profile": None, "image": None if c == "(batch)" else "ab/memholder",
                                   "params": {}, "scenario": scen, "container": c, "times_s": ts, "errors": []})
        md, _ = render(doc)
        self.assertIn("| stock | 16MiB | 0.900 | 2.700 | 3.00 [", md)
        self.assertIn("| patched | 16MiB | 0.120 | 0.180 | 1.50 [", md)
        self.assertIn("| all together | 21.000 | 1.300 | 0.06 [", md)
        self.assertNotIn("| patched | (batch) |", md)


if __name__ == "__main__":
    unittest.main()
