"""python3 -m ab report --nodes: one report over several nodes (ab/nodes.py)."""
import contextlib
import io
import json
import math
import os
import shutil
import tempfile
import unittest

from ab import nodes


def doc(host, ratios, stock=2.0):
    """A checkpoint suite's results on one node: per repetition, stock takes
    stock seconds and patched stock * ratio."""
    res = []
    for cont in ("16MiB",):
        base = {"profile": None, "image": "ab/memholder", "params": {}, "scenario": "alone", "container": cont}
        res.append(dict(base, flavor="stock", times_s=[stock] * len(ratios), reps=list(range(len(ratios))),
                        failed=0, errors=[]))
        res.append(dict(base, flavor="patched", times_s=[round(stock * r, 6) for r in ratios],
                        reps=list(range(len(ratios))), failed=0, errors=[]))
    return {"suite": "ck", "kind": "checkpoint", "repetitions": len(ratios), "machine": {"hostname": host},
            "daemons": {"stock": {"version": "29.8.1"}, "patched": {"version": "29.8.1+ab.x"}}, "results": res}


class NodesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ab-nodes-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def write(self, name, d):
        path = os.path.join(self.dir, name)
        os.makedirs(path)
        with open(os.path.join(path, "results.json"), "w") as f:
            json.dump(d, f)
        return path

    def rows(self, *docs):
        return nodes.pooled({d["machine"]["hostname"]: {d["suite"]: d} for d in docs})

    def test_agreeing_nodes_pool_to_a_verdict(self):
        a = doc("a", [0.5, 0.52, 0.48, 0.51, 0.49, 0.5])
        b = doc("b", [0.6, 0.62, 0.58, 0.61, 0.59, 0.6])
        [r] = self.rows(a, b)
        self.assertFalse(r["disagree"])
        self.assertAlmostEqual(r["pooled"]["ratio"], math.exp((math.log(0.5) + math.log(0.6)) / 2), places=2)
        self.assertEqual(r["pooled"]["n"], 12)
        self.assertLess(r["pooled"]["p_adj"], 0.001)
        self.assertEqual(nodes.pooled_verdict(r), "better")

    def test_each_node_weighs_the_same(self):
        a = doc("a", [0.5] * 12)
        b = doc("b", [1.0, 1.01, 0.99, 1.0, 1.02, 0.98])
        [r] = self.rows(a, b)
        # mean of the nodes' means, not of the 18 pairs (which would be 0.63)
        self.assertAlmostEqual(r["pooled"]["ratio"], math.sqrt(0.5), places=2)

    def test_disagreeing_nodes_say_so(self):
        a = doc("a", [0.5, 0.52, 0.48, 0.51, 0.49, 0.5])
        b = doc("b", [2.0, 2.1, 1.9, 2.05, 1.95, 2.0])
        [r] = self.rows(a, b)
        self.assertTrue(r["disagree"])
        self.assertEqual(nodes.pooled_verdict(r), "inconclusive (nodes disagree)")

    def test_no_difference_is_not_significant(self):
        a = doc("a", [1.02, 0.98, 1.01, 0.99, 1.03, 0.97])
        b = doc("b", [0.99, 1.01, 0.98, 1.02, 1.0, 1.0])
        [r] = self.rows(a, b)
        self.assertEqual(nodes.pooled_verdict(r), "inconclusive (no difference found)")

    def test_exact_p_flips_pairs_within_nodes(self):
        # 3 + 3 pairs, all in one direction: 2 of the 2^6 patterns are as extreme
        r = nodes.blocked([[-0.1, -0.2, -0.3], [-0.1, -0.1, -0.1]])
        self.assertAlmostEqual(r["p"], 2 / 64)
        self.assertTrue(r["too_few"])

    def test_too_few_pairs_on_a_node(self):
        a = doc("a", [0.5] * 8)
        b = doc("b", [0.5] * 3)
        [r] = self.rows(a, b)
        self.assertIn("fewest pairs on a node below", nodes.pooled_verdict(r))

    def test_failures_on_a_node_leave_it_inconclusive(self):
        """Node b's patched daemon failed its two slowest repetitions: the
        pairs left agree with a's, but the pooled row gives no verdict."""
        a = doc("a", [0.5, 0.52, 0.48, 0.51, 0.49, 0.5, 0.5, 0.5])
        b = doc("b", [0.6, 0.62, 0.58, 0.61, 0.59, 0.6, 0.6, 0.6])
        pat = b["results"][1]
        pat["times_s"], pat["reps"], pat["failed"], pat["failed_reps"] = pat["times_s"][:6], list(range(6)), 2, [6, 7]
        [r] = self.rows(a, b)
        self.assertEqual(r["nodes"]["b"]["failed"], 2)
        self.assertEqual(nodes.pooled_verdict(r), "inconclusive (2 failed)")

    def test_cli(self):
        from ab import __main__ as cli
        d1 = self.write("n1", doc("host-1", [0.5, 0.52, 0.48, 0.51, 0.49, 0.5]))
        d2 = self.write("n2", doc("host-2", [0.6, 0.62, 0.58, 0.61, 0.59, 0.6]))
        out = os.path.join(self.dir, "out")
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(cli.main(["report", "--nodes", d1, d2, "--out", out]), 0)
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        self.assertIn("| ck | alone: 16MiB |", md)
        self.assertIn("host-1", md)
        self.assertIn("| better |", md)
        with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
            cli.main(["report", "--nodes", d1, "--out", out])
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(cli.main(["report", "--nodes", d1, self.dir + "/none", "--out", out]), 2)


if __name__ == "__main__":
    unittest.main()
