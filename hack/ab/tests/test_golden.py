"""What the harness writes, kept: the suites in golden/ run on a pretend
machine (fakehosts) write the results in golden/*.results.json, those
results render golden/*.report.md byte for byte, and a suite of each kind
with a key added is refused (or taken) with the message in
golden/suite-errors.txt.

After a change that is meant to change them:
    PYTHONPATH=hack python3 -m ab.tests.test_golden --update
and read the diff."""
import json
import os
import re
import shutil
import sys
import tempfile
import tomllib
import unittest

from ab import report, runner, suite
from ab.tests import fakehosts

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")

# suite -> the commands that fail on the pretend machine (fakehosts.World)
FIXTURES = {
    "pull": {("hyperfine", "patched", "docker pull -q 10.199.0.1:5000/ab-pull/two:v1", 2),
             ("warm", "stock", "docker pull -q 10.199.0.1:5000/ab-pull/small:v1", 3)},
    "checkpoint": {("checkpoint", "stock", "abcp-nginx", 1), ("restore", "patched", "abcp-16MiB", 0)},
    "checkpoint-freeze": {("runc", "runc", "id-abcp-app-floor", 1)},
    "overhead": {("wrk", "stock", "http://127.0.0.1:3000/cpu", 1), ("pingpong", "patched", "bridge", 0),
                 ("run", "patched", "abov-http-published", 0)},
    "overhead-peers": {("pingpong", "charliecloud", "host", 2)},
    "cpuquota": {("readfiles", "stock", ("0.6", "workers", "2"), 1)},
    "zns": set(),
    "zns-scan": set(),
}


def run(name):
    """Run golden/<name>.toml on the pretend machine: its results document."""
    out = tempfile.mkdtemp(prefix="ab-golden-")
    try:
        with fakehosts.pretend(FIXTURES[name]):
            s = suite.load(os.path.join(GOLDEN, name + ".toml"))
            if not runner.Runner(s, out).run():
                raise AssertionError(f"{name}: the run was interrupted")
        return fakehosts.normalise(report.load(out))
    finally:
        shutil.rmtree(out, ignore_errors=True)


def render(results_text):
    """report.md from the text of a results.json, and the images it shows
    that were not written."""
    d = tempfile.mkdtemp(prefix="ab-golden-")
    try:
        with open(os.path.join(d, "results.json"), "w") as f:
            f.write(results_text)
        report.write(d)
        with open(os.path.join(d, "report.md")) as f:
            md = f.read()
        missing = [p for p in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md) if not os.path.isfile(os.path.join(d, p))]
        return md, missing
    finally:
        shutil.rmtree(d, ignore_errors=True)


def dump(doc):
    """results.json, one result a line (small, and readable in a diff)."""
    items = list(doc.items())
    lines = ["{"]
    for i, (k, v) in enumerate(items):
        if k == "results" and v:
            body = "[\n" + ",\n".join("  " + json.dumps(e, ensure_ascii=False) for e in v) + "\n ]"
        else:
            body = json.dumps(v, ensure_ascii=False)
        lines.append(f" {json.dumps(k)}: {body}" + ("," if i < len(items) - 1 else ""))
    return "\n".join(lines + ["}"]) + "\n"


# --- suite files: a key added to a suite of each kind --------------------

# Top-level keys as a suite would give them: (key, TOML). A table goes at the
# end of the file, anything else after the kind (line 3).
ADDED = [
    ("description", 'description = "x"'),
    ("repetitions", "repetitions = 2"),
    ("profile", '[[profile]]\nname = "x"\nrtt = "1ms"'),
    ("image", '[[image]]\nname = "x"\nlayers = ["1MiB"]'),
    ("flavor", "[flavor.stock]\ndaemon = {}"),
    ("scenarios", 'scenarios = ["alone"]'),
    ("container", '[[container]]\nname = "x"\nmemory = "1MiB"'),
    ("workloads", 'workloads = ["run"]'),
    ("leave_running", "leave_running = true"),
    ("restore", "restore = true"),
    ("settle", 'settle = "3s"'),
    ("settle", 'settle = "-1s"'),
    ("link_backend", 'link_backend = "tun"'),
    ("link_backend", 'link_backend = "pigeon"'),
    ("sample_timeout", 'sample_timeout = "90s"'),
    ("sample_timeout", 'sample_timeout = "500ms"'),
    ("order_seed", "order_seed = 7"),
    ("order_seed", "order_seed = -1"),
    ("seed", "[seed]\nx = 1"),
    ("warmup", "warmup = 1"),
    ("warmup", "warmup = 0"),
    ("warmup", "warmup = -1"),
    ("floor", "floor = true"),
    ("floor", "floor = false"),
    ("trace", "[trace]\nrounds = 2"),
    ("trace", 'trace = "missing.csv"'),
    ("geometry", "[geometry]\nzones = 4"),
    ("policies", 'policies = ["zone-aware"]'),
    ("placement", "[placement]\ngc_reserve = 1"),
    ("http", "[http]\nthreads = 1"),
    ("pingpong", '[pingpong]\nsize = "64B"'),
    ("cpus", "cpus = [1]"),
    ("modes", 'modes = ["async"]'),
    ("workers", "workers = [2]"),
    ("files", "files = 10"),
    ("file_size", 'file_size = "1KiB"'),
    ("colour", 'colour = "blue"'),
]
BASES = ("pull", "checkpoint", "overhead", "cpuquota", "zns")


def suite_errors():
    """Every base suite with every key it does not have: 'base + key: message'."""
    out = []
    with tempfile.TemporaryDirectory() as d:
        for base in BASES:
            with open(os.path.join(GOLDEN, base + ".toml")) as f:
                text = f.read()
            have = tomllib.loads(text)
            for key, toml in ADDED:
                if key in have:
                    continue
                lines = text.splitlines()
                if toml.startswith("["):
                    lines += [""] + toml.splitlines()
                else:
                    lines[2:2] = [toml]
                path = os.path.join(d, "s.toml")
                with open(path, "w") as f:
                    f.write("\n".join(lines) + "\n")
                try:
                    with fakehosts.pretend():
                        suite.load(path)
                    msg = "ok"
                except suite.SuiteError as e:
                    msg = str(e).replace(d + os.sep, "")
                out.append(f"{base} + {toml.splitlines()[0]}: {msg}")
    return "\n".join(out) + "\n"


class GoldenTest(unittest.TestCase):
    maxDiff = None

    def golden(self, name):
        with open(os.path.join(GOLDEN, name)) as f:
            return f.read()

    def test_results(self):
        for name in FIXTURES:
            with self.subTest(suite=name):
                self.assertEqual(run(name), json.loads(self.golden(name + ".results.json")))

    def test_reports(self):
        for name in FIXTURES:
            with self.subTest(suite=name):
                md, missing = render(self.golden(name + ".results.json"))
                self.assertEqual(md, self.golden(name + ".report.md"))
                self.assertEqual(missing, [])

    def test_suite_errors(self):
        self.assertEqual(suite_errors(), self.golden("suite-errors.txt"))


class ExitStatusTest(unittest.TestCase):
    """python3 -m ab run: a run with a failed sample writes its report and
    exits 1, naming the cell; a run without exits 0."""

    def run_main(self, fail):
        import contextlib
        import io
        from unittest import mock
        from ab import __main__ as cli
        out = tempfile.mkdtemp(prefix="ab-golden-")
        self.addCleanup(shutil.rmtree, out, True)
        buf, self.stderr = io.StringIO(), io.StringIO()
        with fakehosts.pretend(fail), mock.patch("os.geteuid", return_value=0), \
                contextlib.redirect_stdout(buf), contextlib.redirect_stderr(self.stderr):
            rc = cli.main(["run", os.path.join(GOLDEN, "pull.toml"), "--results", out])
        return rc, buf.getvalue(), out

    def test_failed_sample_fails_the_run(self):
        rc, printed, out = self.run_main(FIXTURES["pull"])
        self.assertEqual(rc, 1)
        self.assertTrue(os.path.isfile(os.path.join(out, "report.md")))
        self.assertIn("FAILED: golden-pull: patched far / two (defaults): 1 failed sample(s)", printed)

    def test_failures_name_each_cell(self):
        with open(os.path.join(GOLDEN, "checkpoint.results.json")) as f:
            got = report.failures(json.load(f))
        self.assertIn(("patched", "alone: 16MiB", "checkpoint-max-concurrent=2, checkpoint-queue-order=smallest-first",
                       [(1, "failed restore(s)")]), got)
        self.assertIn(("stock", "together: nginx", "defaults", [(1, "failed sample(s)")]), got)

    def test_stock_restores_are_measured_not_failures(self):
        with open(os.path.join(GOLDEN, "checkpoint.results.json")) as f:
            doc = json.load(f)
        for e in doc["results"]:
            if e["flavor"] == "stock" and e.get("restore_s"):
                e["restore_error"] = ["bind-mount /proc/0/ns/net -> ...: no such file or directory"] * len(e["restore_s"])
                e["restore_s"] = [None] * len(e["restore_s"])
        got = report.failures(doc)
        self.assertFalse([x for x in got if x[0] == "stock" and any("restore" in w for _, w in x[3])])
        self.assertIn(("patched", "alone: 16MiB", "checkpoint-max-concurrent=2, checkpoint-queue-order=smallest-first",
                       [(1, "failed restore(s)")]), got)

    def test_failed_creates_of_a_replay_are_results(self):
        with open(os.path.join(GOLDEN, "zns-scan.results.json")) as f:
            doc = json.load(f)
        self.assertTrue([e for e in doc["results"] if e.get("errors")], "the fixture has no failed create")
        self.assertEqual(report.failures(doc), [])

    def test_clean_run_succeeds(self):
        rc, printed, _ = self.run_main(set())
        self.assertEqual(rc, 0)
        self.assertNotIn("FAILED", printed)

    def test_too_few_repetitions_warn_once(self):
        # golden pull.toml has 2 repetitions: a warning, once, and the run goes on
        rc, _, _ = self.run_main(set())
        self.assertEqual(rc, 0)
        warnings = [x for x in self.stderr.getvalue().splitlines() if x.startswith("warning:")]
        self.assertEqual(len(warnings), 1, self.stderr.getvalue())
        self.assertIn("suite 'golden-pull': repetitions = 2", warnings[0])


def update():
    for name in FIXTURES:
        doc, path = run(name), os.path.join(GOLDEN, name + ".results.json")
        with open(path) as f:
            if json.load(f) != doc:  # the same fields and values: the file stays as it is
                with open(path, "w") as f:
                    f.write(dump(doc))
        with open(path) as f:
            text = f.read()
        md, missing = render(text)
        assert not missing, missing
        with open(os.path.join(GOLDEN, name + ".report.md"), "w") as f:
            f.write(md)
    with open(os.path.join(GOLDEN, "suite-errors.txt"), "w") as f:
        f.write(suite_errors())


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        update()
    else:
        unittest.main()
