"""The ZNS study's exact offline bound (ab.zns_bound): the exhaustive search
finds the known optima of hand-made instances, the committed run's solver
answers on them agree with it, and (where OR-Tools is importable) the model
solves them to the same answers."""
import glob
import json
import os
import unittest

from ab import zns, zns_bound
from ab.zns_bound import hand_instances

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

# instance name, zones -> the exact fewest relocated units (None: no
# schedule stores every create), worked out by hand:
# - full: 2 zones of 2 units filled at once, one unit deleted, one created:
#   its zone still holds a live unit and no zone has room to move it to, so
#   2 zones cannot (a host that buffered the unit could: 1), 3 can for free;
# - forced: on 3 zones of 2, i3 and i4 (3 units) must go where i2 left room,
#   so i4 shares a zone with live data when i1 and i4 die, and one unit must
#   move before i5 and i6 fit: 1;
# - grouped: on 3 zones of 3 the images that die together can share zones: 0;
#   on 2 its peak (8 units) does not fit at all.
KNOWN = {("full", 2): None, ("full", 3): 0, ("forced", 3): 1, ("grouped", 3): 0, ("grouped", 2): None}
LEAST = {"full": 3, "forced": 3, "grouped": 3}


class BruteForceTest(unittest.TestCase):
    def test_known_optima(self):
        for inst, z in hand_instances():
            with self.subTest(instance=inst.name, zones=z):
                self.assertEqual(zns_bound.brute(inst, z), KNOWN[(inst.name, z)])

    def test_least_zones(self):
        for inst, _ in hand_instances():
            self.assertEqual(zns_bound.brute_least_zones(inst), LEAST[inst.name], inst.name)

    def test_full_is_not_the_trivial_bound(self):
        full = hand_instances()[0][0]
        self.assertEqual(full.trivial_zones(), 2)
        self.assertEqual(LEAST["full"], 3)

    def test_steps_are_the_replayers(self):
        ev = [zns.Event(0, "create", "a", "1", 5000), zns.Event(0, "create", "b", "1", 4096),
              zns.Event(60, "create", "a", "2", 1), zns.Event(60, "delete", "a", "1")]
        inst = zns_bound.from_events(ev, 4096, 4 * 4096)
        self.assertEqual(inst.cap, 4)
        self.assertEqual(inst.steps, [("create", [("a/1", 2), ("b/1", 1)]), ("create", [("a/2", 1)]),
                                      ("delete", "a/1")])
        self.assertEqual(inst.peak(), 4)


class CommittedRunTest(unittest.TestCase):
    """The solver's answers kept in the committed run, checked against the
    exhaustive search with the standard library alone."""

    def runs(self):
        return sorted(glob.glob(os.path.join(ROOT, "docs", "measurements", "*-zns-bound", "results.json")))

    def test_solver_answers_match_the_search(self):
        runs = self.runs()
        self.assertTrue(runs, "no committed zns-bound run under docs/measurements")
        for path in runs:
            with open(path) as f:
                doc = json.load(f)
            self.assertEqual(len(doc["hand"]), len(KNOWN))
            for h in doc["hand"]:
                inst = zns_bound.Instance.from_json(h["instance"])
                exact = zns_bound.brute(inst, h["zones"])
                with self.subTest(run=os.path.basename(os.path.dirname(path)), instance=inst.name, zones=h["zones"]):
                    if exact is None:
                        self.assertEqual(h["strict"]["status"], "infeasible")
                    else:  # the strict model is at or above it, the buffered one at or below
                        self.assertEqual(h["strict"]["status"], "optimal")
                        self.assertGreaterEqual(h["strict"]["relocated"], exact)
                        self.assertLessEqual(h["buffered"]["relocated"], exact)
                        self.assertEqual(h["strict"]["relocated"], exact)
                    self.assertEqual(h["least_zones"], zns_bound.brute_least_zones(inst))

    def test_every_exact_optimum_is_at_most_every_policys(self):
        for path in self.runs():
            with open(path) as f:
                doc = json.load(f)
            for s in doc["seeds"]:
                opt = s["model"]["optimum"]
                lo, hi = s["least_zones"]
                for p, v in s["policies"].items():
                    if v["least_zones"] is not None:
                        self.assertGreaterEqual(v["least_zones"], lo, (s["seed"], p))
                        self.assertGreaterEqual(v["least_zones"], hi, (s["seed"], p))
                    if opt["status"] == "exact" and not v["failed"]:
                        self.assertGreaterEqual(v["relocated_bytes"] // doc["block"], opt["relocated"], (s["seed"], p))


try:
    import ortools  # noqa: F401
    HAVE_SOLVER = True
except ImportError:
    HAVE_SOLVER = False


@unittest.skipUnless(HAVE_SOLVER, "OR-Tools is not importable: the model's own test needs "
                                  "hack/ab/zns_bound-requirements.txt (CommittedRunTest checks its committed answers)")
class ModelTest(unittest.TestCase):
    def test_model_finds_the_known_optima(self):
        for inst, z in hand_instances():
            with self.subTest(instance=inst.name, zones=z):
                s = zns_bound.solve(inst, z, time_limit=10)
                want = KNOWN[(inst.name, z)]
                self.assertEqual(s.status, "infeasible" if want is None else "optimal")
                self.assertEqual(s.relocated, want)
                self.assertEqual(zns_bound.optimum(inst, z, time_limit=10)["relocated"], want)

    def test_buffered_is_below(self):
        full = hand_instances()[0][0]
        self.assertEqual(zns_bound.solve(full, 2, buffered=True, time_limit=10).relocated, 1)

    def test_least_zones(self):
        for inst, _ in hand_instances():
            self.assertEqual(zns_bound.least_zones(inst, 6, time_limit=10)[0], LEAST[inst.name], inst.name)


if __name__ == "__main__":
    unittest.main()
