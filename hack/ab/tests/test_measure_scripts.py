"""hack/measure: the Python its shell scripts run inline imports what the
PYTHONPATH they give it holds: those scripts need daemons, so nothing else
runs them before a measurement does; and diskstats' worst one-second window,
which they report."""
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MEASURE = os.path.join(ROOT, "hack", "measure")
INLINE = re.compile(r"^(?:PYTHONPATH=(\S+) )?python3 - .*<<'(\w+)'\n(.*?)^\2$", re.M | re.S)
IMPORT = re.compile(r"^(?:import ([\w., ]+)|from ([\w.]+) import)", re.M)


def inline_blocks(text):
    """[(PYTHONPATH as written or None, imported module names)] of each
    inline `python3 -` block of a shell script."""
    blocks = []
    for m in INLINE.finditer(text):
        mods = []
        for imp in IMPORT.finditer(m.group(3)):
            if imp.group(1):
                mods += [n.strip().split(" as ")[0] for n in imp.group(1).split(",")]
            else:
                mods.append(imp.group(2))
        blocks.append((m.group(1), mods))
    return blocks


class InlinePythonImports(unittest.TestCase):
    def test_parser(self):
        text = "x\nPYTHONPATH=$AB_ROOT/hack python3 - a b <<'EOF'\nimport json, os\nimport diskstats\nfrom ab import units\nEOF\n"
        self.assertEqual(inline_blocks(text), [("$AB_ROOT/hack", ["json", "os", "diskstats", "ab"])])

    def test_measure_scripts_import(self):
        scripts = sorted(f for f in os.listdir(MEASURE) if f.endswith(".sh"))
        seen = 0
        for name in scripts:
            with open(os.path.join(MEASURE, name)) as f:
                blocks = inline_blocks(f.read())
            for path, mods in blocks:
                seen += 1
                env = dict(os.environ)
                env.pop("PYTHONPATH", None)
                if path:
                    env["PYTHONPATH"] = path.replace("$AB_ROOT", ROOT)
                code = "".join(f"import {m}\n" for m in mods)
                r = subprocess.run([sys.executable, "-c", code], env=env, cwd="/", capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, f"{name}: {r.stderr.strip().splitlines()[-1:]}")
        self.assertGreaterEqual(seen, 2, "no inline Python found in hack/measure")


class WorstWindow(unittest.TestCase):
    def setUp(self):
        sys.path.insert(0, MEASURE)
        self.addCleanup(sys.path.remove, MEASURE)
        import diskstats
        self.ds = diskstats

    def rows(self, rate_at):
        """Samples every 100 ms from 0 to 5 s, sectors written by rate_at(t)
        bytes per second."""
        rows, sectors = [], 0.0
        for i in range(51):
            t = i / 10
            rows.append((t, sectors))
            sectors += rate_at(t) * 0.1 / 512
        return rows

    def test_a_checkpoint_under_a_second(self):
        # 300 MiB/s for 0.5 s from t=2: the second from 2 s saw 150 MiB
        rows = self.rows(lambda t: 300 * 2**20 if 2 <= t < 2.5 else 0)
        self.assertAlmostEqual(self.ds.worst_window(rows, 2.0, 2.5) / 2**20, 150, delta=1)

    def test_the_worst_second_of_a_longer_span(self):
        rows = self.rows(lambda t: (64 if t < 3 else 16) * 2**20)
        self.assertAlmostEqual(self.ds.worst_window(rows, 0.5, 4.5) / 2**20, 64, delta=1)

    def test_no_samples(self):
        self.assertEqual(self.ds.worst_window([], 0, 1), 0.0)


if __name__ == "__main__":
    unittest.main()
