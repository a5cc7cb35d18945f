"""ab.zns_agree: a rerun's cells against the committed ones."""
import contextlib
import gzip
import io
import json
import os
import tempfile
import unittest

from ab import zns_agree


def cell(seed, policy, wa, cleaner=None, device=None):
    e = {"scenario": "sweep", "seed": seed, "half": "report", "reserve": 0, "fill": 0.9, "policy": policy,
         "zones": 10, "params": {"reserve": 0, "cleaner": cleaner}, "metrics": {"failed": 0, "write_amplification": wa}}
    if device:
        e["device"] = device
    return e


class AgreeTest(unittest.TestCase):
    def run_main(self, a, b, gz=False):
        with tempfile.TemporaryDirectory() as d:
            for name, doc in (("a", a), ("b", b)):
                os.makedirs(os.path.join(d, name))
                path = os.path.join(d, name, "results.json.gz" if gz and name == "a" else "results.json")
                with (gzip.open if path.endswith(".gz") else open)(path, "wt") as f:
                    json.dump(doc, f)
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                rc = zns_agree.main([os.path.join(d, "a"), os.path.join(d, "b")])
            return rc, out.getvalue()

    def test_the_same_cells_agree(self):
        a = {"results": [cell(1, "zone-pack", 1.01), cell(1, "shared-log", 1.02, "greedy"),
                         cell(1, "shared-log", 1.03, "cost-benefit"), cell(1, "zone-pack", 1.0, device="big")]}
        # a zns suite's cells: one policy on two geometries are two cells
        for z in (8, 16):
            e = cell(None, "zone-pack", 1.0)
            e["scenario"], e["geometry"] = "replay", {"zone_size": z << 20, "zones": 128 // z}
            a["results"].append(e)
        b = json.loads(json.dumps(a))
        b["results"].reverse()  # in another order
        rc, out = self.run_main(a, b, gz=True)
        self.assertEqual(rc, 0, out)
        self.assertIn("6 of 6 cells", out)

    def test_a_changed_metric_or_a_missing_cell_disagrees(self):
        a = {"results": [cell(1, "zone-pack", 1.01), cell(2, "zone-pack", 1.02)]}
        rc, out = self.run_main(a, {"results": [cell(1, "zone-pack", 1.011), cell(2, "zone-pack", 1.02)]})
        self.assertEqual(rc, 1)
        self.assertIn("1 of 2 cells", out)
        self.assertIn("write_amplification differ", out)
        rc, out = self.run_main(a, {"results": [cell(1, "zone-pack", 1.01)]})
        self.assertEqual(rc, 1)
        self.assertIn("only in the committed run", out)
        rc, out = self.run_main(a, {"results": a["results"] + [cell(1, "zone-pack", 1.01, device="big")]})
        self.assertEqual(rc, 1)
        self.assertIn("only in the rerun", out)

    def test_a_key_twice_cannot_be_compared(self):
        a = {"results": [cell(1, "zone-pack", 1.01), cell(1, "zone-pack", 1.02)]}
        rc, out = self.run_main(a, a)
        self.assertEqual(rc, 2)
        self.assertIn("two cells with the key", out)


if __name__ == "__main__":
    unittest.main()
