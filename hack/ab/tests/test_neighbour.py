"""kind = "neighbour": its suite files and its report."""
import os
import tempfile
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


BASE = {"profile": None, "image": "ab/memholder", "scenario": "neighbour", "container": "64MiB",
        "failed": 0, "errors": []}
DISK = [[-0.5, 20.0], [0.0, 10.0], [0.1, 300.0], [0.2, 290.0], [1.2, 20.0]]
# the first repetition's commit windows: [start s, n, p50, p99, longest ms], 0 s the checkpoint's start
WINDOWS = [[-0.2, 400, 0.1, 0.2, 0.9], [-0.1, 380, 0.1, 0.3, 1.0], [0.0, 0, None, None, None],
           [0.1, 2, 60.0, 80.0, 80.0], [0.2, 300, 0.2, 0.6, 4.0]]


def entry(flavor, params, p99, ck, p50=None, longest=None, series=True):
    n = len(p99)
    return dict(BASE, flavor=flavor, params=params, times_s=ck, reps=list(range(n)),
                p50_ms=p50 or [0.1] * n, p99_ms=p99, max_ms=longest or [5.0] * n, read_p99_ms=[0.3] * n,
                commits_per_s=[5000.0] * n, disk_worst_1s_bytes_per_s=[300 << 20] * n,
                disk_series=[DISK if series else None] + [None] * (n - 1),
                neighbour_series=[{"window_s": 0.1, "commit_bytes": 4096, "checkpoint_s": [0.0, ck[0]],
                                   "truncated": False, "windows": WINDOWS} if series else None] + [None] * (n - 1))


def idle_entry(n=6):
    return dict(BASE, flavor="idle", params=None, image=None, container="idle", times_s=[5.0] * n,
                reps=list(range(n)), p50_ms=[0.1] * n, p99_ms=[0.2] * n, max_ms=[1.0, 2.0] * (n // 2),
                read_p99_ms=[0.3] * n, commits_per_s=[8000.0] * n, disk_worst_1s_bytes_per_s=[None] * n,
                disk_series=[None] * n,
                neighbour_series=[{"window_s": 0.1, "commit_bytes": 4096, "checkpoint_s": None, "truncated": False,
                                   "windows": [[0.0, 500, 0.1, 0.2, 0.5], [0.1, 510, 0.1, 0.2, 1.0]]}]
                + [None] * (n - 1))


def results(*entries):
    return {"suite": "t", "kind": "neighbour", "repetitions": 6, "started": "x", "finished": "y", "disk": "vda",
            "machine": {"cpu": "c", "cpus": 2, "memory_gib": 1, "kernel": "k"},
            "daemons": {"stock": {"version": "29.8.1"}, "patched": {"version": "29.8.1+ab.x"}},
            "results": list(entries)}


class NeighbourReportTest(unittest.TestCase):
    def test_report(self):
        doc = results(idle_entry(), entry("stock", {}, [2.0, 2.1, 1.9, 2.2, 2.0, 2.1], [8.0] * 6),
                      entry("patched", {"checkpoint-write-bandwidth": "auto"},
                            [0.5, 0.52, 0.48, 0.5, 0.51, 0.49], [1.0] * 6))
        md, files = render(doc)
        rows = report.comparisons(doc)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["unit"], "ms")
        self.assertAlmostEqual(rows[0]["vs_default"]["ratio"], 0.5 / 2.05, places=1)
        self.assertIn("| 64MiB holder, checkpoint-write-bandwidth=auto | 6 |", md)
        self.assertIn("commit latency is a 4 KiB write", md)
        self.assertIn("| neighbour alone | 6 | 0 | - | 0.10 | 1 | 0.20 | 1 | 1.5 (2.0) | 1 | 0.30 | 8000 | - |", md)
        self.assertIn("| patched: 64MiB holder, checkpoint-write-bandwidth=auto | 6 | 0 | 1.000 | 0.10 | "
                      "1.00 [1.00, 1.00] p=1 | 0.50 | 2.50 [2.43, 2.57] p=6e-09 | 5.0 (5.0) | ", md)
        for name in ("neighbour-disk.png", "neighbour-timeline.png"):
            self.assertIn(f"![{name}]({name})", md)
            self.assertTrue(files.get(name, 0) > 1000, name)

    def test_against_alone(self):
        """n and failed per row, the checkpoint's time, and p50, p99 and the
        longest commit each against the neighbour alone, paired by
        repetition: a failed repetition (3) has no pair."""
        e = entry("patched", {"checkpoint-write-bandwidth": "16MiB"}, [0.4, 0.6, 0.4, None, 0.4, 0.4],
                  [20.0, 22.0, 21.0, 19.0, 30.0], p50=[0.2, 0.1, 0.1, None, 0.1, 0.1],
                  longest=[10.0, 40.0, 2.0, None, 4.0, 2.0])
        e["reps"], e["failed"], e["errors"] = [0, 1, 2, 4, 5], 1, ["checkpoint failed"]
        idle, stock = idle_entry(), entry("stock", {}, [1.0] * 6, [12.0] * 6)
        rows = neighbour.table_rows(results(stock, e, idle))
        self.assertEqual([r["name"] for r in rows], ["neighbour alone", "stock: 64MiB holder",
                                                     "patched: 64MiB holder, checkpoint-write-bandwidth=16MiB"])
        r = rows[2]
        self.assertEqual((r["n"], r["failed"], r["checkpoint_s"]), (5, 1, 21.0))
        self.assertEqual((r["p50_ms"], r["p99_ms"], r["max_ms"], r["worst_ms"]), (0.1, 0.4, 4.0, 40.0))
        self.assertEqual((rows[0]["n"], rows[0]["failed"], rows[0]["checkpoint_s"], rows[0]["vs_alone"]),
                         (6, 0, None, None))
        vs = r["vs_alone"]
        self.assertEqual([vs[k]["n"] for k in ("p50_ms", "p99_ms", "max_ms")], [5, 5, 5])
        # p99: 2, 3, 2, 2, 2 against 0.2 each
        self.assertAlmostEqual(vs["p99_ms"]["ratio"], (2 * 3 * 2 * 2 * 2) ** (1 / 5), places=12)
        # p50: 2, 1, 1, 1, 1
        self.assertAlmostEqual(vs["p50_ms"]["ratio"], 2 ** (1 / 5), places=12)
        # longest: 10/1, 40/2, 2/1, 4/1 (rep 4), 2/2 (rep 5)
        self.assertAlmostEqual(vs["max_ms"]["ratio"], (10 * 20 * 2 * 4 * 1) ** (1 / 5), places=12)
        # the ratios the table shows are those (5 pairs: no interval)
        md = neighbour.sections(results(stock, e, idle))[0]
        self.assertIn(f"| patched: 64MiB holder, checkpoint-write-bandwidth=16MiB | 5 | 1 | 21.000 | 0.10 | "
                      f"{2 ** 0.2:.2f}, too few samples (n=5) | 0.40 | {48 ** 0.2:.2f}, too few samples (n=5) | "
                      f"4.0 (40.0) | {1600 ** 0.2:.2f}, too few samples (n=5) | 0.30 | 5000 | 300 |", md)
        # without the neighbour alone, no ratios
        self.assertIsNone(neighbour.table_rows(results(stock, e))[1]["vs_alone"])

    def test_timeline(self):
        """The plot's panels: the commit windows with commits at their middle,
        the neighbour's own write rate, the disk's, the checkpoint's start
        and end, the neighbour alone's p99; the PNG is written."""
        doc = results(idle_entry(), entry("stock", {}, [2.0] * 6, [1.5] * 6),
                      entry("patched", {"checkpoint-write-bandwidth": "auto"}, [0.5] * 6, [7.25] * 6, series=False))
        panels = neighbour.timeline(doc)
        self.assertEqual([p["name"] for p in panels], ["neighbour alone", "stock: 64MiB holder"])
        p = panels[1]
        self.assertEqual(p["checkpoint_s"], [0.0, 1.5])
        self.assertEqual(p["latency"], [(-0.15, 0.2, 0.9), (-0.05, 0.3, 1.0), (0.15, 80.0, 80.0), (0.25, 0.6, 4.0)])
        self.assertEqual([x[0] for x in p["neighbour_mib_s"]], [-0.15, -0.05, 0.05, 0.15, 0.25])
        self.assertAlmostEqual(p["neighbour_mib_s"][0][1], 400 * 4096 / 0.1 / 2**20)
        self.assertEqual(p["neighbour_mib_s"][2][1], 0)
        self.assertEqual(p["disk"], [tuple(x) for x in DISK])
        self.assertEqual(p["alone_p99_ms"], 0.2)
        self.assertIsNone(panels[0]["checkpoint_s"])
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(neighbour.timeline_plot(doc, d, plt), ["neighbour-timeline.png"])
            with open(os.path.join(d, "neighbour-timeline.png"), "rb") as f:
                png = f.read()
            plt.close("all")
            self.assertEqual(png[:8], b"\x89PNG\r\n\x1a\n")
            self.assertGreater(len(png), 5000)
            # a results.json from before the series were recorded: no timeline
            for e in doc["results"]:
                e.pop("neighbour_series")
            self.assertEqual(neighbour.timeline_plot(doc, d, plt), [])


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
