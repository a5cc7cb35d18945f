"""kind = "neighbour": its suite files and its report."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import types
import unittest
from unittest import mock

from ab import hosts, neighbour_io, report
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
        self.assertEqual(s.flavors["patched"].variants(), [{"checkpoint-write-bandwidth": "0"},
                                                            {"checkpoint-write-bandwidth": "auto"}])
        self.assertEqual(s.neighbour.workload, "commits")
        self.assertEqual(load(GOOD.replace('lead = "1s"', 'lead = "1s"\nworkload = "reads"')).neighbour.workload,
                         "reads")
        self.assertEqual(load(GOOD.replace('lead = "1s"', 'lead = "1s"\nworkload = "commits"\ncommit = "8KiB"'))
                         .neighbour.workload, "commits")

    def test_bad_keys(self):
        self.assertEditsRefused(GOOD, [
            ('size = "64MiB"', 'size = "64 MiB"', r":7: size: bad size"),
            ('size = "64MiB"', 'size = "512KiB"', r"size: want at least 1MiB"),
            ('lead = "1s"', 'lead = "100ms"', r"lead: want at least 0.5s"),
            ('lead = "1s"', 'leed = "1s"', r"unknown key 'leed' in \[neighbour\]"),
            ('lead = "1s"', 'commit = "32MiB"', r"commit: want 512B to 16MiB"),
            ('lead = "1s"', 'workload = "writes"', r":8: workload: 'writes' is not one of commits, reads"),
            ('lead = "1s"', 'workload = "Reads"', r":8: workload: 'Reads' is not one of commits, reads"),
            ('lead = "1s"', 'workload = ["reads"]', r":8: workload: want a string, got \['reads'\]"),
            ('lead = "1s"', 'workload = "reads"\ncommit = "16KiB"',
             r":9: commit: the reads workload makes no commits"),
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
        e["reps"], e["failed"], e["failed_reps"], e["errors"] = [0, 1, 2, 4, 5], 1, [3], ["checkpoint failed"]
        e["reps_of"] = {k: list(range(6)) for k, v in e.items() if isinstance(v, list) and len(v) == 6}
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
        # the ratios the table shows are those, and the failed repetition
        # makes each inconclusive (5 pairs: no interval)
        self.assertEqual([vs[k]["failed"] for k in ("p50_ms", "p99_ms", "max_ms")], [1, 1, 1])
        md = neighbour.sections(results(stock, e, idle))[0]
        self.assertIn(f"| patched: 64MiB holder, checkpoint-write-bandwidth=16MiB | 5 | 1 | 21.000 | 0.10 | "
                      f"{2 ** 0.2:.2f} n=5: inconclusive (1 failed) | 0.40 | "
                      f"{48 ** 0.2:.2f} n=5: inconclusive (1 failed) | "
                      f"4.0 (40.0) | {1600 ** 0.2:.2f} n=5: inconclusive (1 failed) | 0.30 | 5000 | 300 |", md)
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


def reads_doc():
    """A reads suite's results: the neighbour's p50, p99 and longest are its
    reads', its rate reads_per_s, no commits."""
    es = [idle_entry(), entry("stock", {}, [2.0, 2.1, 1.9, 2.2, 2.0, 2.1], [8.0] * 6),
          entry("patched", {"checkpoint-write-bandwidth": "auto"}, [0.5, 0.52, 0.48, 0.5, 0.51, 0.49], [1.0] * 6)]
    for e in es:
        e["reads_per_s"] = [x + 2000 for x in e.pop("commits_per_s")]
        for ns in e["neighbour_series"]:
            if ns:
                ns["commit_bytes"] = None
    doc = results(*es)
    doc["neighbour"] = {"workload": "reads", "read_file_bytes": 2 << 30}
    return doc


class NeighbourReadsReportTest(unittest.TestCase):
    def test_report_names_the_read_latency(self):
        """With the reads workload every latency the report shows is named a
        read's: the note above the summary, the section's text and columns,
        its rate; the rows are the reads' p50, p99 and longest."""
        doc = reads_doc()
        md, files = render(doc)
        self.assertIn("## Summary\n\nThe summary compares the neighbour's **read latency**, not a commit's: its p99 "
                      "(ms) during each checkpoint, per repetition against stock's; each read: a 4 KiB O_DIRECT read "
                      "at a random offset of a 2 GiB file written before its first run, its only I/O (no writes, no "
                      "fdatasync).\n", md)
        self.assertIn("read latency is a 4 KiB O_DIRECT read at a random offset of a 2 GiB file", md)
        self.assertIn("longest: the median of each repetition's longest read (worst", md)
        self.assertIn("| variant | n | failed | checkpoint s | read p50 ms | p50 / alone | read p99 ms | p99 / alone "
                      "[95% CI] | longest ms (worst) | longest / alone | reads/s | disk MiB/s |\n"
                      "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n", md)
        self.assertIn("| neighbour alone | 6 | 0 | - | 0.10 | 1 | 0.20 | 1 | 1.5 (2.0) | 1 | 10000 | - |", md)
        self.assertIn("| patched: 64MiB holder, checkpoint-write-bandwidth=auto | 6 | 0 | 1.000 | 0.10 | "
                      "1.00 [1.00, 1.00] p=1 | 0.50 | 2.50 [2.43, 2.57] p=6e-09 | 5.0 (5.0) | ", md)
        self.assertNotIn("commit", md.replace("not a commit's", ""))
        self.assertNotIn("commits/s", md)
        rows = neighbour.table_rows(doc)
        self.assertEqual([r["per_s"] for r in rows], [10000.0, 7000.0, 7000.0])
        self.assertEqual([p["op"] for p in neighbour.timeline(doc)], ["read", "read", "read"])
        self.assertTrue(all(p["neighbour_mib_s"] == [] for p in neighbour.timeline(doc)))
        self.assertTrue(files.get("neighbour-timeline.png", 0) > 1000)
        # commits (a results.json without the key ran them): no note, commits named
        del doc["neighbour"]
        self.assertIsNone(neighbour.summary_note(doc))
        self.assertEqual(neighbour.timeline(doc)[0]["op"], "commit")

    def test_fields(self):
        """A reads neighbour's values are its reads': p50, p99, longest and
        the rate; a failed sample has them all None."""
        nb = {"runtime_s": 2.0, "workload": "reads", "commit": neighbour_io.pct([]),
              "read": {"n": 9000, "p50_ms": 0.05, "p99_ms": 0.3, "max_ms": 12.0}, "commit_bytes": None,
              "start_unix": 1000.0, "window_s": 0.1, "windows": [[0.0, 9000, 0.05, 0.3, 12.0]],
              "windows_truncated": False}
        f = neighbour.fields(nb, None, series=True, workload="reads")
        self.assertEqual((f["p50_ms"], f["p99_ms"], f["max_ms"], f["reads_per_s"], f["read_p99_ms"]),
                         (0.05, 0.3, 12.0, 4500.0, 0.3))
        self.assertNotIn("commits_per_s", f)
        self.assertIsNone(f["neighbour_series"]["commit_bytes"])
        self.assertEqual(set(neighbour.fields(None, None, workload="reads")), set(f))
        self.assertIsNone(neighbour.fields(None, None, workload="reads")["p99_ms"])


def io_counters(pid):
    with open(f"/proc/{pid}/io") as f:
        return {k: int(v) for k, v in (line.split(": ") for line in f)}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class NeighbourIOTest(unittest.TestCase):
    """neighbour_io.py itself, briefly, on a directory of the disk (O_DIRECT
    and the kernel's block I/O counters need one: not a tmpfs)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
        self.addCleanup(subprocess.run, ["rm", "-rf", self.dir])
        self.work = os.path.join(self.dir, "work")
        os.mkdir(self.work)
        self.out = os.path.join(self.dir, "out.json")

    def run_io(self, *args, reads=64):
        """Start neighbour_io.py on the work directory; once it is ready,
        wait until the kernel has counted reads 4 KiB reads from the disk
        by it (/proc/PID/io), then stop it. Returns ({"ready", "stopping"}:
        its I/O counters then, its OUT)."""
        p = subprocess.Popen([sys.executable, neighbour_io.__file__, self.work, self.out, *args],
                             stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.stdout.close)
        self.addCleanup(lambda: p.poll() is not None or (p.kill(), p.wait()))
        self.assertEqual(p.stdout.readline(), "ready\n")
        io = {"ready": io_counters(p.pid)}
        self.ready_state = self.files()
        deadline = time.monotonic() + 20
        while io_counters(p.pid)["read_bytes"] - io["ready"]["read_bytes"] < reads * 4096:
            self.assertLess(time.monotonic(), deadline, "the neighbour read nothing from the disk")
            time.sleep(0.002)
        io["stopping"] = io_counters(p.pid)
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=20), 0)
        with open(self.out) as f:
            return io, json.load(f)

    def files(self):
        """The work directory's files: name -> (size, bytes allocated, mtime ns, sha256)."""
        out = {}
        for n in sorted(os.listdir(self.work)):
            st = os.stat(os.path.join(self.work, n))
            out[n] = (st.st_size, st.st_blocks * 512, st.st_mtime_ns, sha256(os.path.join(self.work, n)))
        return out

    def test_reads(self):
        """Workload reads: its file of its own is written before "ready",
        every block of it on the disk and no block of zeros; then it only
        reads: the disk gives it the 4 KiB reads it reports (the kernel's
        count), it makes no write call, its file keeps its bytes and its
        mtime, and no other file appears. Its percentiles and windows are
        the reads'."""
        size = 8 << 20
        io, res = self.run_io("--workload", "reads", "--read-file", str(size))
        self.assertEqual(list(self.ready_state), ["read-file"])
        fsize, allocated, _, _ = self.ready_state["read-file"]
        self.assertEqual(fsize, size)
        self.assertGreaterEqual(allocated, size)
        with open(os.path.join(self.work, "read-file"), "rb") as f:
            data = f.read()
        self.assertNotIn(bytes(4096), [data[i:i + 4096] for i in range(0, size, 4096)])
        self.assertEqual(self.files(), self.ready_state)
        read = io["stopping"]["read_bytes"] - io["ready"]["read_bytes"]
        self.assertEqual((io["stopping"]["syscw"], io["stopping"]["wchar"], io["stopping"]["write_bytes"]),
                         (io["ready"]["syscw"], io["ready"]["wchar"], io["ready"]["write_bytes"]))
        self.assertEqual(res["workload"], "reads")
        self.assertEqual((res["commit"]["n"], res["commit_bytes"], res["read_file_bytes"]), (0, None, size))
        r = res["read"]
        self.assertGreaterEqual(r["n"] * 4096, read)
        self.assertGreater(r["p50_ms"], 0)
        self.assertLessEqual(r["p50_ms"], r["p99_ms"])
        self.assertLessEqual(r["p99_ms"], r["max_ms"])
        self.assertEqual(sum(w[1] for w in res["windows"]), r["n"])
        self.assertEqual(max(w[4] for w in res["windows"] if w[1]), r["max_ms"])

    def test_commits(self):
        """Workload commits (the default) is what it was: commits to its
        commits file, each with a read, and the windows are the commits'."""
        _, res = self.run_io("4096", "--read-file", str(4 << 20))
        self.assertEqual(list(self.files()), ["commits", "reads"])
        self.assertEqual(res["workload"], "commits")
        self.assertGreater(res["commit"]["n"], 0)
        self.assertIn(res["read"]["n"], (res["commit"]["n"], res["commit"]["n"] - 1))
        self.assertEqual(sum(w[1] for w in res["windows"]), res["commit"]["n"])
        self.assertEqual(os.path.getsize(os.path.join(self.work, "commits")) % 4096, 0)
        self.assertGreater(os.path.getsize(os.path.join(self.work, "commits")), 0)

    def test_read_file(self):
        """The read file is rewritten where it is sparse, and removed where
        its write does not end (stopped, or no room)."""
        path = os.path.join(self.work, "f")
        with open(path, "wb") as f:
            f.truncate(1 << 20)
        self.assertFalse(neighbour_io.on_disk(path, 1 << 20))
        neighbour_io.read_file(path, 1 << 20)
        self.assertTrue(neighbour_io.on_disk(path, 1 << 20))
        self.assertGreaterEqual(os.stat(path).st_blocks * 512, 1 << 20)
        os.unlink(path)
        with self.assertRaises(neighbour_io.Stopped):
            neighbour_io.read_file(path, 4 << 20, stop=[1])
        self.assertFalse(os.path.exists(path))
        with self.assertRaises(OSError):
            neighbour_io.read_file(path, 1 << 50)
        self.assertFalse(os.path.exists(path))


class NeighbourRunTest(unittest.TestCase):
    def test_read_file_removed(self):
        """A reads suite's run: the neighbour alone writes its read file in
        the data root's directory (allocated, the only file there), and the
        file goes when the run is cut short beside the first checkpoint."""
        s = load(GOOD.replace('lead = "1s"', 'lead = "1s"\nworkload = "reads"'))
        s.neighbour.idle = 0.2
        var, tmp = tempfile.mkdtemp(dir="/var/tmp" if os.path.isdir("/var/tmp") else None), tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", var, tmp])
        work, seen, added = os.path.join(var, "neighbour"), [], []

        def start_container(d, c, name):
            st = os.stat(os.path.join(work, "read-file"))
            seen.append((sorted(os.listdir(work)), st.st_size, st.st_blocks * 512))
            raise KeyboardInterrupt()

        class Results:
            doc = {}

            def add(self, cell, t, err, rep, **extra):
                added.append((cell.flavor, t, extra))

        r = types.SimpleNamespace(s=s, results=Results(), tmp=tmp, interleave=lambda variants, rep: variants,
                                  daemons={f: types.SimpleNamespace(apply=lambda p: None) for f in s.flavors})
        diskstats = types.SimpleNamespace(disk=lambda path: "vda")
        with mock.patch.object(hosts, "AB_VAR", var), mock.patch.dict(sys.modules, {"diskstats": diskstats}), \
                mock.patch.dict(neighbour_io.READ_FILE, {"reads": 4 << 20}), \
                mock.patch.object(neighbour, "start_container", start_container), \
                mock.patch.object(neighbour, "cleanup", lambda d, names: None), \
                mock.patch.object(neighbour, "Progress", lambda n: types.SimpleNamespace(step=lambda w: None)):
            with self.assertRaises(KeyboardInterrupt):
                neighbour.run(r)
        self.assertEqual(seen, [(["read-file"], 4 << 20, seen[0][2])])
        self.assertGreaterEqual(seen[0][2], 4 << 20)
        self.assertFalse(os.path.exists(work))
        self.assertEqual(r.results.doc["neighbour"], {"workload": "reads", "read_file_bytes": 4 << 20})
        self.assertEqual([(f, x["p99_ms"] is not None, x["reads_per_s"] > 0) for f, _, x in added],
                         [("idle", True, True)])


class NeighbourFailedCheckpointTest(unittest.TestCase):
    """A checkpoint that failed leaves the neighbour undisturbed: its
    repetition is a failure, not a quiet neighbour."""

    def test_failed_checkpoints_are_failures(self):
        from ab import results, stats
        s = load(GOOD.replace("repetitions = 2", "repetitions = 8").replace(
            'daemon = { "checkpoint-write-bandwidth" = ["0", "auto"] }', "daemon = {}"))
        var, tmp = tempfile.mkdtemp(), tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", var, tmp])
        calls = {}

        def docker(f):
            def run(*args, check=True, timeout=None):
                # the patched daemon fails 6 of its 8 checkpoints
                n = calls[f] = calls.get(f, 0) + 1
                if f == "patched" and n <= 6:
                    return subprocess.CompletedProcess(args, 1, "", "criu failed: type NOTIFY errno 0\n")
                return subprocess.CompletedProcess(args, 0, "", "")
            return run

        def neighbour_run(work, out, seconds=None, during=None, commit=4096, workload="commits"):
            res, c0, c1 = None, None, None
            if during is not None:
                c0 = time.time() - 5
                res = during[1]()
                c1 = c0 + 1
            # quiet beside nothing or a failed checkpoint, slow beside one that ran
            busy = res is not None and res[0] is not None
            op = {"n": 1000, "p50_ms": 0.1, "p99_ms": 2.0 if busy else 0.2, "max_ms": 9.0}
            return {"runtime_s": 3.0, "commit": op, "read": {"p99_ms": 0.3}}, res, c0, c1

        with mock.patch.object(results, "provenance", lambda path: {}):
            res = results.Results(s, tmp)
        r = types.SimpleNamespace(s=s, results=res, tmp=tmp, interleave=lambda variants, rep: variants, daemons={
            f: types.SimpleNamespace(flavor=f, apply=lambda p: None, docker=docker(f)) for f in s.flavors})
        with mock.patch.object(hosts, "AB_VAR", var), mock.patch.object(hosts, "sh", lambda *a, **kw: None), \
                mock.patch.object(neighbour, "diskstats", lambda: types.SimpleNamespace(disk=lambda path: "vda")), \
                mock.patch.object(neighbour, "Sampler", lambda dev, path: types.SimpleNamespace(stop=lambda: [])), \
                mock.patch.object(neighbour, "neighbour_run", neighbour_run), \
                mock.patch.object(neighbour, "start_container", lambda d, c, name: None), \
                mock.patch.object(neighbour, "cleanup", lambda d, names: None), \
                mock.patch.object(neighbour, "Progress", lambda n: types.SimpleNamespace(step=lambda w: None)):
            neighbour.run(r)
        doc = res.doc
        pat = next(e for e in doc["results"] if e["flavor"] == "patched")
        self.assertEqual((pat["failed"], pat["reps"]), (6, [6, 7]))
        self.assertEqual(sorted(pat["failed_reps"]), [0, 1, 2, 3, 4, 5])
        # no neighbour values stand for the failed repetitions
        self.assertEqual(report.values(pat, "neighbour")[0], [2.0, 2.0])
        self.assertEqual([r["p99_ms"] for r in neighbour.table_rows(doc) if r["entry"] is pat], [2.0])
        [row] = report.comparisons(doc)
        v = row["vs_default"]
        self.assertEqual((v["n"], v["failed"]), (2, 6))
        self.assertEqual(stats.verdict(v, True), "inconclusive (6 failed)")
        self.assertIn("inconclusive (6 failed)", report.summary_table(doc))
        self.assertNotIn("better", report.summary_table(doc))


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

    def test_stalls(self):
        """Every repetition keeps the windows whose longest operation took
        over STALL_MS, on the checkpoint's axis, and the report lists them
        per variant."""
        nb = {"runtime_s": 3.5, "commit": {"n": 7000, "p50_ms": 0.1, "p99_ms": 0.4, "max_ms": 120.0},
              "read": {"p99_ms": 0.2}, "commit_bytes": 16384, "start_unix": 1000.25, "window_s": 0.1,
              "windows": [[0.0, 10, 0.1, 0.2, 0.3], [0.1, 0, None, None, None], [2.5, 3, 0.1, 50.0, 50.0],
                          [2.6, 2, 0.1, 120.0, 120.0]], "windows_truncated": False}
        f = neighbour.fields(nb, None, 1002.25, 1003.75)
        self.assertEqual(f["stalls"], {"checkpoint_s": [0.0, 1.5], "windows": [[0.6, 120.0]]})
        self.assertIsNone(neighbour.fields(None, None)["stalls"])
        quiet = dict(nb, windows=nb["windows"][:3])
        doc = {"kind": "neighbour", "disk": "vda", "results": [
            {"flavor": "idle", "container": "idle", "params": {}, "times_s": [1.0, 1.0], "stalls": [None, None]},
            {"flavor": "patched", "container": "384MiB", "params": {"checkpoint-write-bandwidth": "auto"},
             "times_s": [1.5, 1.5], "stalls": [neighbour.fields(quiet, None, 1002.25, 1003.75)["stalls"], f["stalls"]]},
            {"flavor": "stock", "container": "384MiB", "params": {}, "times_s": [1.5]}]}
        text = neighbour.stall_section(doc)
        self.assertIn("| patched: 384MiB holder, checkpoint-write-bandwidth=auto | rep 2: 0.6 s @ 120 ms "
                      "(checkpoint 0-1.50 s) |", text)
        self.assertIn("| neighbour alone | none |", text)
        self.assertIn("| stock: 384MiB holder | not recorded |", text)


if __name__ == "__main__":
    unittest.main()
