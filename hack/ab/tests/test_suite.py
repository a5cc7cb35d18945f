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

    def test_good_suite(self):
        s = load(GOOD)
        self.assertEqual(s.kind, "pull")
        self.assertEqual(s.images[0].layers, [1 << 20, 512 << 10])
        self.assertEqual(s.flavours["stock"].variants(),
                         [{"max-concurrent-downloads": 1}, {"max-concurrent-downloads": 3}])
        self.assertEqual(s.flavours["patched"].variants(), [{}])

    def test_unknown_key_names_the_line(self):
        msg = self.error(GOOD.replace('rate = "100mbit"', 'rates = "100mbit"'))
        self.assertRegex(msg, r":9: unknown key 'rates' in \[\[profile\]\]")

    def test_bad_unit_names_the_line(self):
        msg = self.error(GOOD.replace('rtt = "140ms"', 'rtt = "140 ms"'))
        self.assertRegex(msg, r":8: rtt: bad duration '140 ms'")
        msg = self.error(GOOD.replace('"512KiB"', '"512kb"'))
        self.assertIn("bad size '512kb'", msg)

    def test_warmup(self):
        self.assertEqual(load(GOOD.replace("repetitions = 2", "repetitions = 2\nwarmup = 1")).warmup, 1)
        self.assertEqual(load(GOOD).warmup, 0)
        msg = self.error(GOOD.replace("repetitions = 2", "repetitions = 2\nwarmup = -1"))
        self.assertRegex(msg, r":5: warmup: want an integer >= 0")
        ck = GOOD.replace('kind = "pull"', 'kind = "checkpoint"').replace("repetitions = 2", "repetitions = 2\nwarmup = 1")
        self.assertIn("warmup: only pull suites", self.error(ck))

    def test_missing_section(self):
        text = GOOD[:GOOD.index("[[image]]")] + GOOD[GOOD.index("[flavor.stock]"):]
        self.assertIn("needs at least one [[image]]", self.error(text))

    def test_bad_kind_and_flavour(self):
        self.assertIn("kind: 'pul' is not one of", self.error(GOOD.replace('kind = "pull"', 'kind = "pul"')))
        self.assertIn("unknown key 'nightly' in [flavor]", self.error(GOOD.replace("[flavor.patched]", "[flavor.nightly]")))

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

    def test_bad_scenario(self):
        self.assertIn("'sometimes' is not one of alone, together, incremental",
                      self.checkpoint_error('name = "x"\n            memory = "16MiB"', '["sometimes"]'))

    def test_repo_suites_are_valid(self):
        root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "hyperfine-suites")
        from ab.__main__ import expand
        for name in sorted(os.listdir(root)):
            for path in expand(os.path.join(root, name)):
                suite.load(path)
