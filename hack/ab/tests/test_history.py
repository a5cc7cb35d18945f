"""The history of the committed results: the index, its change points, and
the page drawn from it, rendered by headless Chromium (make deps installs
it): the numbers the page shows are the index's, and it draws."""
import html.parser
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from ab import history
from ab.tests import test_core


def measurements(test, shifts):
    """A measurements tree of one suite run on a series per shift, in that
    order (patched shift times stock)."""
    top = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, top, True)
    for i, shift in enumerate(shifts):
        doc = test_core.FamilyTest.doc(None, shift, "t")
        doc["started"] = f"2026-11-2{i}T00:00:00Z"
        doc["provenance"] = {"series": f"s{i}", "upstream": {}}
        d = os.path.join(top, f"2026-11-2{i}-s{i}-t")
        os.makedirs(d)
        with open(os.path.join(d, "results.json"), "w") as f:
            json.dump(doc, f)
    return top


class Rows(html.parser.HTMLParser):
    """The rendered page's rows of points: data-key -> the ratio shown."""

    def __init__(self):
        super().__init__()
        self.rows, self.key, self.in_ratio = {}, None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr" and a.get("class") == "point":
            self.key = a["data-key"]
        if tag == "td" and a.get("class") == "ratio":
            self.in_ratio = True

    def handle_data(self, data):
        if self.in_ratio:
            self.rows[self.key] = data
            self.in_ratio = False


def chromium(*args):
    exe = shutil.which("chromium")
    if exe is None:
        raise AssertionError("chromium is missing: make deps installs it (the page is tested rendered)")
    return subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120)


class HistoryTest(unittest.TestCase):
    def test_index_and_change_points(self):
        idx = history.index(measurements(self, [0.9, 0.9, 0.6]))
        self.assertEqual(len(idx["entries"]), 3)
        [h] = idx["histories"]
        self.assertEqual((h["suite"], h["cell"], h["against"]), ("t", "far / small", "stock default"))
        self.assertEqual([p["series"] for p in h["points"]], ["s0", "s1", "s2"])
        # the same ratio again is no change; 0.9 -> 0.6 is one, better
        self.assertEqual([p.get("change_point") for p in h["points"]], [None, False, True])
        self.assertEqual(h["points"][2]["step_verdict"], "better")
        self.assertAlmostEqual(h["points"][2]["step_ratio"], h["points"][2]["ratio"] / h["points"][1]["ratio"], 5)
        # one series alone has no history
        self.assertEqual(history.index(measurements(self, [0.9]))["histories"], [])

    def test_the_page_rendered(self):
        top = measurements(self, [0.9, 0.9, 0.6])
        out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, out, True)
        idx = history.write(top, out)
        with open(os.path.join(out, "index.json")) as f:
            self.assertEqual(json.load(f), json.loads(json.dumps(idx)))
        url = "file://" + os.path.join(out, "index.html")
        dom = chromium("--dump-dom", url)
        self.assertEqual(dom.returncode, 0, dom.stderr[-2000:])
        rows = Rows()
        rows.feed(dom.stdout)
        want = {f"{h['suite']}|{h['cell']}|{h['against']}|{p['series']}|{p['dir']}": f"{p['ratio']:.3f}"
                for h in idx["histories"] for p in h["points"]}
        self.assertEqual(len(want), 3)
        self.assertEqual(rows.rows, want)
        # one ring drawn (the script's own text has the pattern without numbers)
        self.assertEqual(len(re.findall(r'class="change-point" cx="[0-9]', dom.stdout)), 1)
        shot = os.path.join(out, "shot.png")
        p = chromium(f"--screenshot={shot}", "--window-size=900,700", url)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import image
        img = image.imread(shot)
        self.assertGreater(img.shape[0] * img.shape[1], 100000)
        # the change point's ring (#cf222e) and the points (#0969da) are drawn
        red = ((abs(img[..., 0] - 0xcf / 255) < 0.06) & (abs(img[..., 1] - 0x22 / 255) < 0.06)
               & (abs(img[..., 2] - 0x2e / 255) < 0.06)).sum()
        blue = ((abs(img[..., 0] - 0x09 / 255) < 0.06) & (abs(img[..., 1] - 0x69 / 255) < 0.06)
                & (abs(img[..., 2] - 0xda / 255) < 0.06)).sum()
        self.assertGreater(red, 30)
        self.assertGreater(blue, 30)



class CommittedTest(unittest.TestCase):
    def test_the_committed_index_is_current(self):
        """docs/history is what the committed results give: regenerate it
        (python3 -m ab.history ../docs/measurements ../docs/history, from
        hack/) when results are committed."""
        root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs")
        with open(os.path.join(root, "history", "index.json")) as f:
            committed = json.load(f)
        self.assertEqual(committed, json.loads(history.dump(history.index(os.path.join(root, "measurements")))))
        with open(os.path.join(root, "history", "index.html")) as f:
            self.assertEqual(f.read(), history.page(committed))


if __name__ == "__main__":
    unittest.main()
