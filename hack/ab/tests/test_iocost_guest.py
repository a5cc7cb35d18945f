import gzip
import os
import shutil
import tempfile
import unittest

from ab import iocost_guest


def write_run(d, variant, rep, start, seconds, lats_ms, sectors=2048):
    end = start + int(seconds * 1e9)
    with open(os.path.join(d, "runs.tsv"), "a") as f:
        f.write(f"{variant}\t{rep}\t{start}\t{end}\t{sectors}\t\n")
    with open(os.path.join(d, f"{variant}-{rep}.commits"), "w") as f:
        # one commit before the window, which must not count
        f.write(f"{start - 10**6} {10**9}\n")
        step = (end - start) // (len(lats_ms) + 1)
        for i, ms in enumerate(lats_ms):
            f.write(f"{start + (i + 1) * step} {int(ms * 1e6)}\n")


class IocostGuestTest(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.d)
        with open(os.path.join(self.d, "runs.tsv"), "w") as f:
            f.write("variant\trep\tstart_ns\tend_ns\tsectors_written\tdaemon_written\n")

    def fill(self):
        t = 10**18
        for rep in range(1, 7):
            write_run(self.d, "alone", rep, t, 4, [1.0] * 99 + [2.0 + rep / 10]); t += 10**11
            write_run(self.d, "cap", rep, t, 8 + rep / 10, [1.0] * 98 + [9.0, 9.0 + rep]); t += 10**11
            write_run(self.d, "iocost", rep, t, 3 + rep / 10, [1.0] * 98 + [3.0, 3.0 + rep]); t += 10**11

    def test_report(self):
        self.fill()
        s = iocost_guest.report(self.d)
        rows = {r["variant"]: r for r in s["variants"]}
        self.assertEqual([r["variant"] for r in s["variants"]], ["alone", "cap", "iocost"])
        self.assertEqual(rows["cap"]["n"], 6)
        self.assertEqual(rows["cap"]["commits"], 100)  # not the one before the window
        self.assertAlmostEqual(rows["iocost"]["seconds"], 3.35)
        self.assertLess(rows["iocost"]["seconds_vs_cap"]["ratio"], 0.5)
        self.assertLess(rows["iocost"]["p99_vs_cap"]["ratio"], 1.0)
        self.assertGreater(rows["cap"]["p99_vs_alone"]["ratio"], 1.0)
        with open(os.path.join(self.d, "README.md")) as f:
            readme = f.read()
        self.assertIn("| iocost / cap |", readme)
        self.assertIn("better", readme)
        self.assertTrue(os.path.getsize(os.path.join(self.d, "iocost.png")) > 0)

    def test_a_run_without_commits_counts(self):
        """A run in which the neighbour completed no commit during the
        checkpoint (stalled throughout) has no p99: it is a failure of its
        repetition, not a pair left out."""
        self.fill()
        write_run(self.d, "iocost", 7, 2 * 10**18, 3.5, [])
        write_run(self.d, "alone", 7, 2 * 10**18 + 10**11, 4, [1.0] * 100)
        rows = {r["variant"]: r for r in iocost_guest.summarize(self.d)["variants"]}
        r = rows["iocost"]["p99_vs_alone"]
        self.assertEqual((r["n"], r["failed"]), (6, 1))
        from ab import stats
        self.assertEqual(stats.verdict(r, True), "inconclusive (1 failed)")

    def test_gzipped_commits(self):
        self.fill()
        want = iocost_guest.summarize(self.d)
        for name in os.listdir(self.d):
            if name.endswith(".commits"):
                path = os.path.join(self.d, name)
                with open(path, "rb") as f, gzip.open(path + ".gz", "wb") as g:
                    g.write(f.read())
                os.remove(path)
        self.assertEqual(iocost_guest.summarize(self.d), want)

    def test_bad_commits_line(self):
        self.fill()
        with open(os.path.join(self.d, "cap-3.commits"), "a") as f:
            f.write("12 x y\n")
        with self.assertRaisesRegex(ValueError, "cap-3.commits:102"):
            iocost_guest.summarize(self.d)
        self.assertEqual(iocost_guest.main(["report", self.d]), 1)


if __name__ == "__main__":
    unittest.main()
