"""Suite files: what every kind has (the kind, the flavors), and the
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
    def test_bad_kind_and_flavor(self):
        self.assertIn("kind: 'pul' is not one of", self.error(GOOD.replace('kind = "pull"', 'kind = "pul"')))
        self.assertIn("unknown key 'nightly' in [flavor]", self.error(GOOD.replace("[flavor.patched]", "[flavor.nightly]")))

    def test_binary(self):
        s = load(GOOD)
        self.assertEqual((s.flavors["stock"].dockerd, s.flavors["patched"].dockerd), ("stock", "patched"))
        s = load(GOOD.replace("[flavor.patched]\n", '[flavor.patched]\nbinary = "stock"\n'))
        self.assertEqual(s.flavors["patched"].dockerd, "stock")
        self.assertRegex(self.error(GOOD.replace("[flavor.patched]\n", '[flavor.patched]\nbinary = "nightly"\n')),
                         r":20: binary: want one of stock, patched")

    def test_margin(self):
        """margin: the equivalence margin of the suite's verdicts, a fraction
        in (0, 0.5), 5% by default; the results keep it for the report."""
        from ab import stats
        self.assertEqual(load(GOOD).margin, stats.MARGIN)
        self.assertEqual(load('margin = 0.1\n' + GOOD).margin, 0.1)
        for bad in ("0", "0.5", "-0.1", '"5%"', "true"):
            with self.subTest(margin=bad):
                self.assertRegex(self.error(f"margin = {bad}\n" + GOOD), r":1: margin: want the equivalence margin")

    def test_binary_of_a_commit(self):
        """binary = "commit:<rev>": the patched daemon of a commit of this
        project, resolved when the suite loads; a rev that names no commit
        is refused, naming it."""
        import subprocess
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=os.path.dirname(__file__), check=True).stdout.strip()
        s = load(GOOD.replace("[flavor.stock]\n", '[flavor.stock]\nbinary = "commit:HEAD"\n'))
        self.assertEqual(s.flavors["stock"].dockerd, f"commit-{head[:12]}")
        self.assertEqual(s.flavors["patched"].dockerd, "patched")
        for bad in ("commit:no-such-rev", "commit:", "commit:--all"):
            with self.subTest(binary=bad):
                self.assertRegex(self.error(GOOD.replace("[flavor.stock]\n", f'[flavor.stock]\nbinary = "{bad}"\n')),
                                 r"binary: .*no commit")
        self.assertRegex(self.error(GOOD.replace("[flavor.stock]\n", '[flavor.stock]\nbinary = 3\n')),
                         r'binary: want one of stock, patched .*"commit:<rev>" or "series:<hash>"')

    def test_binary_of_a_series(self):
        """binary = "series:<hash>": the patched daemon of a commit whose
        patches/ is that series; its hash is patches.sh's, read from git."""
        import hashlib
        import subprocess
        from ab import hosts
        root = os.path.join(os.path.dirname(__file__), "..", "..", "..")
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=root,
                              check=True).stdout.strip()
        # the series of HEAD, as hack/stack/patches.sh's dir_digest computes it
        # from the files (HEAD's, in a clean checkout of it)
        shown = lambda p: subprocess.run(["git", "show", f"HEAD:{p}"], capture_output=True, cwd=root,
                                         check=True).stdout
        series = shown("patches/series")
        h = hashlib.sha256(series)
        for line in series.decode().splitlines():
            if line.strip() and not line.startswith("#"):
                h.update(shown(f"patches/{line}"))
        want = h.hexdigest()[:10]
        self.assertEqual(hosts.series_of(head), want)
        sha = hosts.commit_of_series(want)
        self.assertEqual(hosts.series_of(sha), want)
        s = load(GOOD.replace("[flavor.stock]\n", f'[flavor.stock]\nbinary = "series:{want}"\n'))
        self.assertEqual(s.flavors["stock"].dockerd, f"commit-{sha[:12]}")
        for bad, msg in (("series:zzz", "6 to 10 hex digits"), ("series:0000000000", "no commit of this project")):
            with self.subTest(binary=bad):
                self.assertIn(msg, self.error(GOOD.replace("[flavor.stock]\n", f'[flavor.stock]\nbinary = "{bad}"\n')))

    def test_a_commit_binary_is_built_before_its_host_starts(self):
        from unittest import mock
        from ab import hosts
        from ab.systems import dockerd
        s = load(GOOD.replace("[flavor.stock]\n", '[flavor.stock]\nbinary = "commit:HEAD"\n'))
        calls = []
        fake = mock.Mock()
        with mock.patch.object(hosts, "build_commit", lambda sha: calls.append(("build", sha))), \
                mock.patch.object(hosts, "Daemon", lambda name: calls.append(("up", name)) or fake):
            dockerd.start("stock", s.flavors["stock"], [])
            dockerd.start("patched", s.flavors["patched"], [])
        self.assertEqual([c[0] for c in calls], ["build", "up", "up"])
        self.assertEqual(calls[0][1], s.flavors["stock"].dockerd.removeprefix("commit-"))
        fake.up.assert_any_call({"max-concurrent-downloads": 1}, binary=s.flavors["stock"].dockerd)

    def test_too_few_repetitions_warn(self):
        """Below stats.MIN_PAIRS repetitions no comparison can give a
        verdict: the suite loads, with a warning naming it and the key."""
        from ab import stats
        s = load(GOOD)
        self.assertEqual(len(s.warnings), 1)
        self.assertRegex(s.warnings[0], r"^\S+\.toml:4: suite 't': repetitions = 2 is below "
                         rf"{stats.MIN_PAIRS}, the pairs a verdict needs")
        self.assertEqual(load(GOOD.replace("repetitions = 2", f"repetitions = {stats.MIN_PAIRS}")).warnings, [])
        # the kind's default (3) is named as the default
        s = load(GOOD.replace("repetitions = 2\n", ""))
        self.assertRegex(s.warnings[0], r"suite 't': repetitions \(the pull kind's default, 3\) is below")
        # one flavor compares nothing
        self.assertEqual(load(GOOD.split("[flavor.stock]")[0] + "[flavor.patched]\ndaemon = {}\n").warnings, [])

    def test_validate_prints_a_warning_once_and_passes(self):
        import contextlib
        import io
        from ab import __main__ as cli
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write(textwrap.dedent(GOOD))
        self.addCleanup(os.unlink, f.name)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = cli.main(["validate", f.name])
        self.assertEqual(rc, 0)
        self.assertEqual(err.getvalue().count("warning:"), 1, err.getvalue())
        self.assertIn("repetitions = 2", err.getvalue())
        self.assertIn(": ok (pull, 2 repetitions)", out.getvalue())

    def test_default_suite_has_no_warning(self):
        """make ab's default suite: valid, and enough repetitions for a verdict."""
        root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "hyperfine-suites")
        from ab.__main__ import expand
        paths = expand(os.path.join(root, "default.toml"))
        self.assertEqual(len(paths), 3)
        for path in paths:
            self.assertEqual(suite.load(path).warnings, [], path)

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
            shipped = {k: v for k, v in json.load(f).items() if k == "checkpoints" or k.startswith("checkpoint-")}
        self.assertIn("checkpoints", shipped)
        s = suite.load(os.path.join(here, "..", "..", "..", "hyperfine-suites", "checkpoint-together-holdout.toml"))
        self.assertEqual(s.flavors["patched"].daemon, shipped)


if __name__ == "__main__":
    unittest.main()
