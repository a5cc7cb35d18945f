"""The series' daemon options, one list (hack/nodes/deb/series-options) that the
packages (hack/nodes/deb.sh) and moby-ab-switch read: it is the options the
patches add to the daemon's configuration, and nothing else carries a copy."""
import json
import os
import re
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DEB = os.path.join(ROOT, "hack", "nodes", "deb")
CONFIG = "daemon/config/config.go"  # the daemon.json keys: its Config's json tags


def listed(path=os.path.join(DEB, "series-options")):
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def added_options(patches=os.path.join(ROOT, "patches")):
    """The json tags the series adds to daemon/config/config.go (added in
    one patch and not removed by a later one), in series order."""
    with open(os.path.join(patches, "series")) as f:
        series = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    out = []
    for name in series:
        path = None
        with open(os.path.join(patches, name), encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("+++ "):
                    path = line[6:].strip() if line.startswith("+++ b/") else None
                    continue
                if line.startswith("--- ") or path != CONFIG:
                    continue
                m = re.match(r'([+-])\s+[A-Z]\w*\s+[\w.\[\]*]+\s+`json:"([^",]+)', line)
                if not m:
                    continue
                if m.group(1) == "+" and m.group(2) not in out:
                    out.append(m.group(2))
                elif m.group(1) == "-" and m.group(2) in out:
                    out.remove(m.group(2))
    return out


class SeriesOptionsTest(unittest.TestCase):
    def test_the_list_is_the_options_the_patches_add(self):
        want = added_options()
        self.assertIn("checkpoint-max-concurrent", want)  # the parse finds them at all
        self.assertEqual(sorted(listed()), sorted(want),
                         "hack/nodes/deb/series-options must list the daemon options the patches add to " + CONFIG)
        self.assertEqual(len(set(listed())), len(listed()))

    def test_no_other_copy(self):
        # deb.sh and moby-ab-switch read the list; neither names an option itself
        for f in ("hack/nodes/deb.sh", "hack/nodes/deb/moby-ab-switch"):
            with open(os.path.join(ROOT, f)) as fh:
                text = fh.read()
            self.assertIn("series-options", text, f)
            for opt in listed():
                # as a key or a flag, not as a word ("checkpoints" is one)
                for form in (f'"{opt}"', f"'{opt}'", f"--{opt}", f"{opt}:", f"{opt}="):
                    self.assertNotIn(form, text, f"{f} names {opt}: read hack/nodes/deb/series-options instead")

    def test_stock_daemon_json_is_patched_without_them(self):
        with open(os.path.join(DEB, "daemon.json")) as f:
            patched = json.load(f)
        with open(os.path.join(DEB, "daemon.stock.json")) as f:
            stock = json.load(f)
        self.assertEqual({k: v for k, v in patched.items() if k not in listed()}, stock)
        self.assertNotEqual(patched, stock)

    def test_switch_finds_every_listed_option(self):
        """moby-ab-switch's check, run on a daemon.json naming every listed
        option (and one that is not), with the list given as the package
        installs it."""
        with open(os.path.join(DEB, "moby-ab-switch")) as f:
            script = f.read()
        body = re.search(r"^series_options_in_use\(\) \{\n.*?^\}\n", script, re.M | re.S).group(0)
        die = re.search(r"^die\(\) \{\n.*?^\}\n", script, re.M | re.S).group(0)
        with tempfile.TemporaryDirectory() as d:
            conf = os.path.join(d, "daemon.json")
            with open(conf, "w") as f:
                json.dump({**{o: 1 for o in listed()}, "debug": True}, f)
            run = lambda lst: subprocess.run(
                ["bash", "-c", f'set -euo pipefail\n{die}{body}DOCKER_CONFIGS=("{conf}")\nSERIES_OPTIONS="{lst}"\n'
                 "used=$(series_options_in_use)\necho \"$used\""], capture_output=True, text=True)
            r = run(os.path.join(DEB, "series-options"))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split("\n")[:-1], sorted(f"{conf}: {o}" for o in listed()))
            r = run(os.path.join(d, "missing"))  # no list: refused, not "nothing in use"
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("no list of the series' options", r.stderr)


if __name__ == "__main__":
    unittest.main()
