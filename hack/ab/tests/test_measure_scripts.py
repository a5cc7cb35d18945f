"""The Python that hack/measure's shell scripts run inline imports what the
PYTHONPATH they give it holds: those scripts need daemons, so nothing else
runs them before a measurement does."""
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


if __name__ == "__main__":
    unittest.main()
