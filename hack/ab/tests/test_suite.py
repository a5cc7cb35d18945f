"""Suite files: what every kind has (the kind, the flavours), and the
suites in hyperfine-suites/. Each kind's own keys are tested in its test
file; load() and SuiteErrors are for them."""
import os
import tempfile
import textwrap
import unittest

from ab import suite

GOOD = """
name = "t"
kind = "pull"
repetitions = 2

[[profile]]
name = "far"
rtt = "140ms"
rate = "100mbit"
loss = "0%"

[[image]]
name = "small"
layers = ["1MiB", "512KiB"]

[flavor.stock]
daemon = { "max-concurrent-downloads" = [1, 3] }

[flavor.patched]
daemon = {}
"""


def load(text):
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
        f.write(textwrap.dedent(text))
    try:
        return suite.load(f.name)
    finally:
        os.unlink(f.name)


class SuiteErrors:
    """For test cases of suite files: error(text) is the message a bad one
    is refused with."""

    def error(self, text):
        with self.assertRaises(suite.SuiteError) as cm:
            load(text)
        return str(cm.exception)

    def assertEditsRefused(self, text, cases):
        """cases: (old, new, regex): text with old replaced by new is refused
        with a message matching regex."""
        for old, new, regex in cases:
            with self.subTest(new=new):
                self.assertIn(old, text)
                self.assertRegex(self.error(text.replace(old, new)), regex)


class SuiteTest(SuiteErrors, unittest.TestCase):
    def test_bad_kind_and_flavour(self):
        self.assertIn("kind: 'pul' is not one of", self.error(GOOD.replace('kind = "pull"', 'kind = "pul"')))
        self.assertIn("unknown key 'nightly' in [flavor]", self.error(GOOD.replace("[flavor.patched]", "[flavor.nightly]")))

    def test_binary(self):
        s = load(GOOD)
        self.assertEqual((s.flavours["stock"].dockerd, s.flavours["patched"].dockerd), ("stock", "patched"))
        s = load(GOOD.replace("[flavor.patched]\n", '[flavor.patched]\nbinary = "stock"\n'))
        self.assertEqual(s.flavours["patched"].dockerd, "stock")
        self.assertRegex(self.error(GOOD.replace("[flavor.patched]\n", '[flavor.patched]\nbinary = "nightly"\n')),
                         r":20: binary: want one of stock, patched")

    def test_repo_suites_are_valid(self):
        root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "hyperfine-suites")
        from ab.__main__ import expand
        for name in sorted(n for n in os.listdir(root) if n.endswith(".toml")):
            for path in expand(os.path.join(root, name)):
                suite.load(path)

    def test_shipped_configuration_suites_follow_the_package(self):
        """Suites that measure "the configuration the package ships" set the
        checkpoint options of hack/nodes/deb/daemon.json, no more and no less."""
        import json
        here = os.path.dirname(__file__)
        with open(os.path.join(here, "..", "..", "nodes", "deb", "daemon.json")) as f:
            shipped = {k: v for k, v in json.load(f).items() if k.startswith("checkpoint-")}
        s = suite.load(os.path.join(here, "..", "..", "..", "hyperfine-suites", "checkpoint-together-holdout.toml"))
        self.assertEqual(s.flavours["patched"].daemon, shipped)


if __name__ == "__main__":
    unittest.main()
