"""kind = "checkpoint": its suite files and its report (the floor, together against alone)."""
import unittest

from ab.tests.docs import render
from ab.tests.test_suite import SuiteErrors


class CheckpointSuiteTest(SuiteErrors, unittest.TestCase):
    def checkpoint_error(self, container, scenarios='["alone"]'):
        """The error of a checkpoint suite with one [[container]] table."""
        return self.error(f"""
            name = "c"
            kind = "checkpoint"
            scenarios = {scenarios}
            [[container]]
            {container}
            [flavor.stock]
            daemon = {{}}
        """)

    def test_checkpoint_container_needs_memory_or_image(self):
        self.assertIn("exactly one of 'memory'", self.checkpoint_error('name = "x"'))

    def test_checkpoint_container_name_is_a_container_name(self):
        self.assertIn("'16 MiB' cannot be part of a container name",
                      self.checkpoint_error('name = "16 MiB"\n            memory = "16MiB"'))

    def test_a_scan_is_refused(self):
        # only pull suites scan: a list would silently run its first value
        msg = self.error("""
            name = "c"
            kind = "checkpoint"
            scenarios = ["alone"]
            [[container]]
            name = "x"
            memory = "16MiB"
            [flavor.stock]
            daemon = { "max-concurrent-downloads" = [1, 3] }
        """)
        self.assertRegex(msg, r":9: daemon.max-concurrent-downloads: a list is a scan, and checkpoint suites do not "
                              r"scan \(only pull suites do\)")

    def test_bad_scenario(self):
        self.assertIn("'sometimes' is not one of alone, together, incremental",
                      self.checkpoint_error('name = "x"\n            memory = "16MiB"', '["sometimes"]'))


class CheckpointReportTest(unittest.TestCase):
    def test_floor_table(self):
        doc = {"suite": "t", "kind": "checkpoint", "repetitions": 3, "started": "x", "finished": "y",
               "machine": {}, "daemons": {"stock": {"version": "a"}, "patched": {"version": "b"}},
               "seed": {}, "results": []}
        for f, ts in (("stock", [20.0, 21.0, 22.0]), ("patched", [1.0, 1.1, 1.2]), ("runc", [0.8, 0.9, 1.0])):
            doc["results"].append({"flavor": f, "profile": None, "image": "ab/memholder", "params": None,
                                   "scenario": "alone", "container": "512MiB", "times_s": ts, "errors": []})
        md, _ = render(doc)
        self.assertIn("| 512MiB | 0.900 s | 21.000 s | 1.100 s | 1.22", md)

    def test_together_table(self):
        doc = {"suite": "t", "kind": "checkpoint", "repetitions": 3, "started": "x", "finished": "y",
               "machine": {}, "daemons": {"stock": {"version": "a"}, "patched": {"version": "b"}},
               "seed": {}, "results": []}
        for f, scen, c, ts in (("stock", "alone", "16MiB", [0.8, 0.9, 1.0]),
                               ("stock", "together", "16MiB", [2.6, 2.7, 2.8]),
                               ("patched", "alone", "16MiB", [0.10, 0.12, 0.14]),
                               ("patched", "together", "16MiB", [0.15, 0.18, 0.21]),
                               ("stock", "together", "(batch)", [20.0, 21.0, 22.0]),
                               ("patched", "together", "(batch)", [1.2, 1.3, 1.4])):
            doc["results"].append({"flavor": f, "profile": None, "image": None if c == "(batch)" else "ab/memholder",
                                   "params": {}, "scenario": scen, "container": c, "times_s": ts, "errors": []})
        md, _ = render(doc)
        self.assertIn("| stock | 16MiB | 0.900 | 2.700 | 3.01 n=3: inconclusive (too few pairs) |", md)
        self.assertIn("| patched | 16MiB | 0.120 | 0.180 | 1.50 n=3: inconclusive (too few pairs) |", md)
        self.assertIn("| all together | 21.000 | 1.300 | 0.06 n=3: inconclusive (too few pairs) |", md)
        self.assertNotIn("| patched | (batch) |", md)


if __name__ == "__main__":
    unittest.main()
