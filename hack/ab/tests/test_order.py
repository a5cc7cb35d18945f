"""The order of the flavors within a repetition: drawn from a seed that
results.json records, balanced so that each flavor takes each position
equally often, each sample's position kept; and the report's diagnostic of
an order effect, absent from results that recorded no positions."""
import collections
import copy
import json
import math
import os
import shutil
import tempfile
import unittest

from ab import measure, report, runner, suite
from ab.tests import fakehosts

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
MEASUREMENTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "measurements")


def positions(orders):
    """{flavor: Counter(position)} over orders."""
    out = collections.defaultdict(collections.Counter)
    for order in orders:
        for i, f in enumerate(order):
            out[f][i] += 1
    return out


class OrdersTest(unittest.TestCase):
    def test_each_flavor_takes_each_position_equally_often(self):
        for flavors in (["stock", "patched"], ["stock", "patched", "podman"],
                         ["stock", "patched", "containerd", "podman"]):
            n = len(flavors)
            for k in (1, 2, 3):
                with self.subTest(flavors=flavors, k=k):
                    orders = measure.orders(flavors, k * n, seed=11)
                    self.assertEqual(len(orders), k * n)
                    for order in orders:
                        self.assertEqual(sorted(order), sorted(flavors))
                    for f, at in positions(orders).items():
                        self.assertEqual(dict(at), {i: k for i in range(n)}, f)

    def test_three_flavors_are_not_stuck_in_the_middle(self):
        # sorted and reversed on odd repetitions, patched was always second
        orders = measure.orders(["stock", "patched", "charliecloud"], 6, seed=3)
        self.assertEqual(set(o.index("patched") for o in orders), {0, 1, 2})

    def test_the_seed_decides(self):
        flavors = ["stock", "patched", "podman"]
        self.assertEqual(measure.orders(flavors, 9, seed=5), measure.orders(list(reversed(flavors)), 9, seed=5))
        drawn = {json.dumps(measure.orders(flavors, 9, seed=s)) for s in range(20)}
        self.assertGreater(len(drawn), 5)

    def test_a_partial_block_is_as_balanced_as_it_can_be(self):
        # 7 repetitions of two: one flavor first 4 times, the other 3
        firsts = collections.Counter(o[0] for o in measure.orders(["stock", "patched"], 7, seed=1))
        self.assertEqual(sorted(firsts.values()), [3, 4])

    def test_default_seed_is_the_start_time(self):
        self.assertEqual(measure.seed_of("2025-01-01T00:00:00Z"), 1735689600)

    def test_a_scan_s_settings_take_turns_too(self):
        """Within a flavor, a scan's settings and the patched daemon's
        arms run in an order drawn per repetition too: each of patched's
        variants runs before and after each of stock's, and each setting
        of stock's runs first equally often."""
        v = [("stock", 1), ("stock", 3), ("stock", 7), ("patched", "learned"), ("patched", "fresh")]
        runs = [measure.arrange(v, order, rep, 12, seed=4)
                for rep, order in enumerate(measure.orders(["stock", "patched"], 12, seed=4))]
        before = collections.defaultdict(set)
        for run in runs:
            self.assertEqual(sorted(run, key=str), sorted(v, key=str))
            self.assertNotEqual(run[0][0], run[1][0])  # the flavors take turns
            for a in v[3:]:
                for b in v[:3]:
                    before[(a, b)].add(run.index(a) < run.index(b))
        self.assertEqual(set(map(frozenset, before.values())), {frozenset({True, False})})
        firsts = collections.Counter(next(x for x in run if x[0] == "stock") for run in runs)
        self.assertEqual(firsts, {("stock", 1): 4, ("stock", 3): 4, ("stock", 7): 4})
        self.assertEqual(runs, [measure.arrange(v, order, rep, 12, seed=4)
                                for rep, order in enumerate(measure.orders(["stock", "patched"], 12, seed=4))])

    def test_interleave_follows_the_order(self):
        v = [("stock", 1), ("stock", 3), ("stock", 7), ("patched", 0)]
        self.assertEqual([f for f, _ in measure.interleave(v, ["patched", "stock"])],
                         ["patched", "stock", "stock", "stock"])
        self.assertEqual(measure.interleave(v, ["stock", "patched"]),
                         [("stock", 1), ("patched", 0), ("stock", 3), ("stock", 7)])


def run(text):
    """The results of suite text on the pretend machine."""
    d = tempfile.mkdtemp(prefix="ab-order-")
    try:
        path = os.path.join(d, "s.toml")
        with open(path, "w") as f:
            f.write(text)
        out = os.path.join(d, "out")
        os.makedirs(out)
        with fakehosts.pretend():
            if not runner.Runner(suite.load(path), out).run():
                raise AssertionError("interrupted")
        return report.load(out)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def placed(doc, cell):
    """{flavor: {repetition: position}} of one cell's entries."""
    return {e["flavor"]: dict(report.keyed(e, "position")) for e in doc["results"]
            if (e["scenario"], e["container"]) == cell}


class RunOrderTest(unittest.TestCase):
    """A suite of three flavors on the pretend machine: each in each place
    equally often, every sample's place recorded, the seed recorded and
    reproducing the same order."""

    def setUp(self):
        with open(os.path.join(GOLDEN, "overhead-peers.toml")) as f:
            self.text = f.read()

    def test_positions_are_balanced_recorded_and_reproducible(self):
        doc = run(self.text)
        seed = doc["order_seed"]
        self.assertIsInstance(seed, int)
        got = placed(doc, ("cpu", "native"))
        self.assertEqual(set(got), {"stock", "patched", "charliecloud"})
        for rep in range(6):
            self.assertEqual(sorted(got[f][rep] for f in got), [0, 1, 2], rep)
        for f, by in got.items():
            self.assertEqual(collections.Counter(by.values()), {0: 2, 1: 2, 2: 2}, f)
        # every cell of a flavor has its place in the repetition
        self.assertEqual(placed(doc, ("pingpong", "host"))["patched"], got["patched"])
        again = run(self.text.replace("repetitions = 6", f"repetitions = 6\norder_seed = {seed}"))
        self.assertEqual(again["order_seed"], seed)
        self.assertEqual(placed(again, ("cpu", "native")), got)
        other = run(self.text.replace("repetitions = 6", f"repetitions = 6\norder_seed = {seed + 1}"))
        self.assertEqual(other["order_seed"], seed + 1)

    def test_a_scan_is_placed_per_variant(self):
        with open(os.path.join(GOLDEN, "pull.toml")) as f:
            doc = run(f.read())
        for rep in range(doc["repetitions"]):
            at = sorted(report.keyed(e, "position").get(rep) for e in doc["results"] if e["image"] == "two"
                        and rep in set(e["reps"]) | set(e["failed_reps"]))
            # stock's three settings and patched's two arms: five places
            self.assertEqual(at, [0, 1, 2, 3, 4], rep)


def entry(flavor, times, first):
    """A checkpoint cell of flavor: times by repetition, first: the
    repetitions it ran first in."""
    reps = list(range(len(times)))
    return {"flavor": flavor, "profile": None, "image": "ab/memholder", "params": {}, "scenario": "alone",
            "container": "16MiB", "times_s": times, "reps": reps, "failed": 0, "failed_reps": [], "errors": [],
            "reps_of": {"position": reps}, "position": [0 if r in first else 1 for r in reps]}


class OrderEffectTest(unittest.TestCase):
    def doc(self):
        patched = [0.9, 0.8, 0.9, 0.8, 0.9, 0.8]
        stock = [1.0] * 6
        first = {0, 2, 4}  # patched ran first in these: 0.9x, else 0.8x
        return {"suite": "t", "kind": "checkpoint", "repetitions": 6, "order_seed": 1,
                "results": [entry("stock", stock, set(range(6)) - first), entry("patched", patched, first)]}

    def test_the_line_says_first_and_second(self):
        table = report.summary_table(self.doc())
        [head] = [x for x in table.splitlines() if x.startswith("Order")]
        self.assertIn("a diagnostic and not a verdict", head)
        [line] = [x for x in table.splitlines() if x.startswith("- ")]
        self.assertEqual(line, f"- patched/stock default (s): patched ran first: mean log-ratio {math.log(0.9):.3f} "
                               f"(0.90x), n=3; ran second: mean log-ratio {math.log(0.8):.3f} (0.80x), n=3")

    def test_results_without_positions_have_no_line(self):
        doc = self.doc()
        for e in doc["results"]:
            del e["position"], e["reps_of"]["position"]
        del doc["order_seed"]
        self.assertNotIn("Order", report.summary_table(doc))
        self.assertIn("patched/stock default", report.summary_table(self.doc()))

    def test_committed_results_still_read(self):
        """Committed results read without error: those from before the
        positions were recorded have no order line in their summary, those
        with positions have one."""
        dirs = sorted(os.path.join(r, "") for r, _, files in os.walk(MEASUREMENTS) if "results.json" in files)
        self.assertGreater(len(dirs), 10)
        for d in dirs:
            doc = report.load(d)
            if doc.get("kind") not in ("pull", "checkpoint", "overhead", "cpuquota", "neighbour"):
                continue  # a replay's, or another tool's (checkpoint-stress)
            with self.subTest(d=os.path.relpath(d, MEASUREMENTS)):
                positions = any(e.get("position") for e in doc["results"])
                table = report.summary_table(copy.deepcopy(doc))
                if positions:
                    self.assertIn("\nOrder", table)
                else:
                    self.assertNotIn("\nOrder", table)


if __name__ == "__main__":
    unittest.main()
