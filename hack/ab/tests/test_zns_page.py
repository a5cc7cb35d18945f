"""ab.zns_page: the numbers docs/zns-study.md computes itself."""
import contextlib
import io
import os
import tempfile
import unittest

from ab import zns_page

PAGE = os.path.join(zns_page.ROOT, "docs", "zns-study.md")


def check(page_text):
    """zns_page's exit status and output with --check on page_text."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "page.md")
        with open(path, "w") as f:
            f.write(page_text)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            rc = zns_page.main(["--check", path])
        return rc, out.getvalue()


class PageTest(unittest.TestCase):
    def test_the_page_quotes_every_number(self):
        with open(PAGE) as f:
            rc, out = check(f.read())
        self.assertEqual(rc, 0, out)
        self.assertNotIn("NOT", out)

    def test_a_number_the_page_misquotes_fails(self):
        with open(PAGE) as f:
            text = f.read()
        for right, wrong in (("peak live data 158 MiB", "peak live data 159 MiB"),
                             ("zone-pack's in 61", "zone-pack's in 62"),
                             ("100.3% of the 14 zones", "100.2% of the 14 zones")):
            self.assertIn(right, " ".join(text.split()))
            rc, out = check(" ".join(text.split()).replace(right, wrong))
            self.assertEqual(rc, 1, right)
            self.assertIn("NOT IN THE PAGE: ", out)

    def recorded(self, rows):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.csv")
            with open(path, "w") as f:
                f.write("\n".join(["time_s,op,container,checkpoint,bytes"] + rows) + "\n")
            return [w for w, _ in zns_page.recorded(path)]

    def test_recorded_trace_sizes(self):
        # two containers; sizes padded to 4 KiB; one checkpoint never deleted
        got = self.recorded(["0,create,a,cp0,2044625",  # 1.9499 MiB: 500 blocks, 1.953 MiB
                             "1,create,b,cp0,3145728",
                             "11,delete,a,cp0,",
                             "12,create,a,cp1,3145728",
                             "31,delete,b,cp0,"])
        self.assertEqual(got[0], "3 creates (0.01 GiB, 2.0-3.0 MiB each)")
        self.assertEqual(got[1], "2 deletes")
        # at most two of them live at once: 3 + 3 MiB
        self.assertEqual(got[2], "2 containers, peak live data 6 MiB")

    def test_recorded_trace_lifetimes(self):
        # lifetimes of 1, 2, ... 11 s: the 10th percentile (the exclusive
        # method, statistics.quantiles' default) 1.2 s, the median 6 s
        rows = [f"0,create,a,cp{i},4096" for i in range(11)]
        rows += [f"{i + 1},delete,a,cp{i}," for i in range(11)]
        got = self.recorded(rows)
        self.assertEqual(got[3], "lifetimes from 1.2 s (10th percentile) over 6.0 s (median) to 11 s")

    def test_an_unknown_op_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.csv")
            with open(path, "w") as f:
                f.write("time_s,op,container,checkpoint,bytes\n0,resize,a,cp0,1\n")
            with self.assertRaises(ValueError):
                zns_page.recorded(path)

    def test_a_missing_source_is_status_2(self):
        saved = zns_page.SWEEP
        zns_page.SWEEP = "no-such-run"
        try:
            rc, out = check("")
        finally:
            zns_page.SWEEP = saved
        self.assertEqual(rc, 2)
        self.assertIn("no-such-run", out)


if __name__ == "__main__":
    unittest.main()
