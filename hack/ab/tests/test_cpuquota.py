"""kind = "cpuquota" (seed 003): its suite files, the file text, and the
report of where worker threads stop paying."""
import os
import unittest

from ab.kinds import cpuquota
from ab.tests.docs import results_doc, write_report
from ab.tests.test_suite import SuiteErrors, load

CPUQUOTA = """
name = "q"
kind = "cpuquota"
repetitions = 2
cpus = ["unlimited", 0.6]
modes = ["async", "workers"]
workers = [1, 4]
files = 500
file_size = "19001B"

[flavor.stock]
daemon = {}
"""


class CPUQuotaSuiteTest(SuiteErrors, unittest.TestCase):

    def test_good(self):
        s = load(CPUQUOTA)
        q = s.cpuquota
        self.assertEqual(s.kind, "cpuquota")
        self.assertEqual(q.cpus, [None, 0.6])
        self.assertEqual(q.cells(), [("async", 0), ("workers", 1), ("workers", 4)])
        self.assertEqual((q.files, q.file_size), (500, 19001))
        self.assertEqual([cpuquota.cpus_label(c) for c in q.cpus], ["unlimited", "0.6"])
        self.assertEqual(cpuquota.mode_label("workers", 4), "workers x4")

    def test_errors_name_the_line(self):
        self.assertEditsRefused(CPUQUOTA, [
            ('cpus = ["unlimited", 0.6]', 'cpus = ["none"]',
             r":5: cpus: want \"unlimited\" or a number of CPUs like 0.6, got 'none'"),
            ('cpus = ["unlimited", 0.6]', 'cpus = [0.6, 0.6]', r":5: cpus: 0.6 is listed twice"),
            ('cpus = ["unlimited", 0.6]', 'cpus = [4096]', r":5: cpus: 4096 is outside 0.01 to \d+"),
            ('cpus = ["unlimited", 0.6]', 'cpus = []', r":5: cpus: want at least one CPU limit"),
            ('modes = ["async", "workers"]', 'modes = ["async", "threads"]',
             r":6: modes: 'threads' is not one of sequential, async, workers"),
            ("workers = [1, 4]", "workers = [0]", r":7: workers: want worker counts from 1 to 64, got 0"),
            ('modes = ["async", "workers"]', 'modes = ["async"]',
             r":7: workers: worker counts need mode \"workers\" in modes"),
            ("files = 500", "files = 0", r":8: files: want 1 to 200000, got 0"),
            ('file_size = "19001B"', 'file_size = "19 KB"', r":9: file_size: bad size '19 KB'"),
        ])

    def test_defaults(self):
        s = load("""
            name = "q"
            kind = "cpuquota"
            [flavor.patched]
            daemon = {}
        """)
        self.assertEqual(s.cpuquota.cpus, [None, 0.6])
        self.assertEqual(s.cpuquota.cells(), [("async", 0), ("workers", 4)])
        self.assertEqual(s.repetitions, 3)


class ParseTest(unittest.TestCase):
    def test_seed003_text(self):
        body = cpuquota.seed003_text(19001)
        self.assertEqual(body, b"longonglndinfdfkjds" * 1000 + b"\n")
        self.assertEqual(len(cpuquota.seed003_text(4096)), 4096)
        self.assertEqual(cpuquota.seed003_text(1), b"\n")


class CPUQuotaReportTest(unittest.TestCase):
    def doc(self):
        seed = {"files": 100000, "file_size": "19001 B",
                "runs": [{"label": "Promise.all", "mode": "async", "cpus": "unlimited", "elapsed_s": [12.0, 13.0, 14.0]},
                         {"label": "4 workers at 0.6", "mode": "workers", "workers": 4, "cpus": 0.6,
                          "elapsed_s": [20.0]}]}
        doc = results_doc("cpuquota", seed)
        doc["workload"] = {"files": 1000, "file_size": 19001}
        # workers x4 pay without a limit (0.5 s against 1.0 s), not at 0.6 CPU (2.0 against 1.5)
        t = {("async", None): 1.0, ("workers x4", None): 0.5, ("async", 0.6): 1.5, ("workers x4", 0.6): 2.0}
        for f in ("stock", "patched"):
            for (mode, cpus), x in t.items():
                xs = [x * 0.98, x, x * 1.02] * 2 + [x]  # 7: enough pairs for a verdict at two limits (Holm)
                doc["results"].append({"flavor": f, "profile": None, "image": "ab/node", "params": {},
                                       "scenario": mode, "container": "unlimited" if cpus is None else "0.6",
                                       "mode": mode.split()[0], "workers": 4 if "x4" in mode else 0, "cpus": cpus,
                                       "times_s": xs, "files_per_s": [1000 / v for v in xs], "cpu_s": [x] * 7,
                                       "throttled_s": [0.0 if cpus is None else x / 2] * 7, "run_s": [x + 1] * 7,
                                       "errors": []})
        return doc

    def test_crossover(self):
        self.assertEqual(cpuquota.crossover(self.doc(), "stock"), {"workers x4": ([None], [], [0.6])})
        self.assertEqual(cpuquota.cpus_phrase([None, 1.5, 1.0]), "with no CPU limit and at 1.5 and 1 CPUs")
        self.assertEqual(cpuquota.cpus_phrase([1.0]), "at 1 CPU")
        self.assertEqual(cpuquota.cpus_phrase([0.6, 0.3, 1.0]), "at 0.6, 0.3 and 1 CPUs")

    def test_tables_and_plot(self):
        d, md = write_report(self, self.doc())
        self.assertIn("## Where workers stop paying (seed 003)", md)
        self.assertIn("| unlimited | 1.000 (1000) | 0.500 (2000) | workers x4 | 0.50 [", md)
        self.assertIn("| 0.6 | 1.500 (667) | 2.000 (500) | async | 1.33 [", md)
        self.assertIn("- workers x4: faster than async with no CPU limit; slower at 0.6 CPUs.", md)
        self.assertIn("| 0.6 | workers x4 | 2.00 / 1.00 | 2.00 / 1.00 |", md)
        # the seed's runs, on the files/s scale: 100000 / 13 s and 100000 / 20 s
        self.assertIn("| Promise.all | async | unlimited | 13.00 s (3) | 7692 | 1000 | 1000 |", md)
        self.assertIn("| 4 workers at 0.6 | workers x4 | 0.6 | 20.00 s (1) | 5000 | 500 | 500 |", md)
        self.assertIn("ours read 1000 files of 18.6KiB", md)
        self.assertIn("| workers x4 @ 0.6 CPU | 7 | 0 patched, 0 stock | 2.000 s (defaults) | 2.000 s |", md)
        self.assertTrue(os.path.getsize(os.path.join(d, "cpuquota-workers.png")) > 1000)


if __name__ == "__main__":
    unittest.main()
