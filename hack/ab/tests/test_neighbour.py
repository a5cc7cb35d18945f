"""kind = "neighbour": its suite files and its report."""
import unittest

from ab import neighbour_io, report
from ab.kinds import neighbour
from ab.tests.docs import render
from ab.tests.test_suite import SuiteErrors, load

GOOD = """
name = "t"
kind = "neighbour"
repetitions = 2

[neighbour]
size = "64MiB"
lead = "1s"

[flavor.stock]
daemon = {}

[flavor.patched]
daemon = { "checkpoint-write-bandwidth" = ["0", "auto"] }
"""


class NeighbourSuiteTest(SuiteErrors, unittest.TestCase):
    def test_good_suite(self):
        s = load(GOOD)
        self.assertEqual((s.neighbour.size, s.neighbour.lead, s.neighbour.idle, s.neighbour.commit),
                         (64 << 20, 1.0, 5.0, 4096))
        self.assertEqual(load(GOOD.replace('lead = "1s"', 'lead = "1s"\ncommit = "16KiB"')).neighbour.commit, 16384)
        self.assertEqual(s.flavours["patched"].variants(), [{"checkpoint-write-bandwidth": "0"},
                                                            {"checkpoint-write-bandwidth": "auto"}])

    def test_bad_keys(self):
        self.assertEditsRefused(GOOD, [
            ('size = "64MiB"', 'size = "64 MiB"', r":7: size: bad size"),
            ('size = "64MiB"', 'size = "512KiB"', r"size: want at least 1MiB"),
            ('lead = "1s"', 'lead = "100ms"', r"lead: want at least 0.5s"),
            ('lead = "1s"', 'leed = "1s"', r"unknown key 'leed' in \[neighbour\]"),
            ('lead = "1s"', 'commit = "32MiB"', r"commit: want 512B to 16MiB"),
        ])
        pull = GOOD.replace('kind = "neighbour"', 'kind = "checkpoint"')
        self.assertIn("[neighbour] belongs to neighbour suites", self.error(pull))


class NeighbourReportTest(unittest.TestCase):
    def test_report(self):
        base = {"profile": None, "image": "ab/memholder", "scenario": "neighbour", "container": "64MiB",
                "failed": 0, "errors": []}
        series = [[0.0, 10.0], [0.1, 300.0], [0.2, 290.0]]

        def entry(flavor, params, p99, ck):
            return dict(base, flavor=flavor, params=params, times_s=ck, reps=list(range(len(ck))),
                        p50_ms=[0.1] * len(ck), p99_ms=p99, max_ms=[5.0] * len(ck), read_p99_ms=[0.3] * len(ck),
                        commits_per_s=[5000.0] * len(ck), disk_worst_1s_bytes_per_s=[300 << 20] * len(ck),
                        disk_series=[series] + [None] * (len(ck) - 1))
        doc = {"suite": "t", "kind": "neighbour", "repetitions": 6, "started": "x", "finished": "y", "disk": "vda",
               "machine": {"cpu": "c", "cpus": 2, "memory_gib": 1, "kernel": "k"},
               "daemons": {"stock": {"version": "29.8.1"}, "patched": {"version": "29.8.1+ab.x"}},
               "results": [dict(base, flavor="idle", params=None, container="idle", times_s=[5.0] * 6,
                                reps=list(range(6)), p50_ms=[0.1] * 6, p99_ms=[0.2] * 6, max_ms=[1.0] * 6,
                                read_p99_ms=[0.3] * 6, commits_per_s=[8000.0] * 6,
                                disk_worst_1s_bytes_per_s=[None] * 6, disk_series=[None] * 6),
                           entry("stock", {}, [2.0, 2.1, 1.9, 2.2, 2.0, 2.1], [8.0] * 6),
                           entry("patched", {"checkpoint-write-bandwidth": "auto"},
                                 [0.5, 0.52, 0.48, 0.5, 0.51, 0.49], [1.0] * 6)]}
        md, files = render(doc)
        rows = report.comparisons(doc)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["unit"], "ms")
        self.assertAlmostEqual(rows[0]["vs_default"]["ratio"], 0.5 / 2.05, places=1)
        self.assertIn("| 64MiB holder, checkpoint-write-bandwidth=auto | 6 |", md)
        self.assertIn("| patched: 64MiB holder, checkpoint-write-bandwidth=auto | 1.000 | 0.10 / 0.50 / 5.0 |", md)
        self.assertIn("| neighbour alone |", md)
        self.assertTrue(files.get("neighbour-disk.png", 0) > 1000)


class NeighbourSeriesTest(unittest.TestCase):
    def test_windows(self):
        """Latencies by completion into 100 ms windows: n, p50, p99 and the
        longest, an empty window where a stall was, at most limit windows."""
        w = neighbour_io.Windows(0.1)
        for i in range(100):  # 1..100 ms, completing in the first window
            w.add(0.0005 + i * 0.0009, (i + 1) / 1000)
        w.add(0.25, 0.25)  # a stall of 250 ms: nothing completed from 0.1 to 0.2
        self.assertEqual(w.close(), [[0.0, 100, 51.0, 100.0, 100.0], [0.1, 0, None, None, None],
                                     [0.2, 1, 250.0, 250.0, 250.0]])
        self.assertFalse(w.truncated)
        w = neighbour_io.Windows(0.1, limit=2)
        for t in (0.05, 0.15, 0.25, 0.35):
            w.add(t, 0.001)
        self.assertEqual([r[0] for r in w.close()], [0.0, 0.1])
        self.assertTrue(w.truncated)
        self.assertEqual(neighbour_io.Windows().close(), [])

    def test_fields(self):
        """The first repetition keeps the windows, moved to the checkpoint's
        time axis, and the checkpoint's start and end; later ones do not."""
        nb = {"runtime_s": 3.5, "commit": {"n": 7000, "p50_ms": 0.1, "p99_ms": 0.4, "max_ms": 9.0},
              "read": {"p99_ms": 0.2}, "commit_bytes": 16384, "start_unix": 1000.25, "window_s": 0.1,
              "windows": [[0.0, 10, 0.1, 0.2, 0.3], [0.1, 0, None, None, None]], "windows_truncated": False}
        rows = [(1002.0, 0), (1002.5, 2048 * 100), (1003.0, 2048 * 200), (1003.5, 2048 * 200)]
        f = neighbour.fields(nb, rows, 1002.25, 1003.75, series=True)
        self.assertEqual(f["neighbour_series"], {"window_s": 0.1, "commit_bytes": 16384, "checkpoint_s": [0.0, 1.5],
                                                 "truncated": False,
                                                 "windows": [[-2.0, 10, 0.1, 0.2, 0.3], [-1.9, 0, None, None, None]]})
        self.assertEqual(f["disk_series"], [[0.25, 200.0], [0.75, 200.0], [1.25, 0.0]])
        self.assertEqual((f["p99_ms"], f["max_ms"], f["commits_per_s"]), (0.4, 9.0, 2000.0))
        self.assertIsNone(neighbour.fields(nb, rows, 1002.25, 1003.75)["neighbour_series"])
        # the neighbour alone: its own start is 0 s, no checkpoint
        alone = neighbour.fields(nb, None, series=True)["neighbour_series"]
        self.assertEqual((alone["checkpoint_s"], alone["windows"][1][0]), (None, 0.1))
        self.assertIsNone(neighbour.fields(None, None, series=True)["neighbour_series"])


if __name__ == "__main__":
    unittest.main()
