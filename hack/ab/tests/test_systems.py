"""The systems under test (ab.systems): a suite's flavours of another system
than dockerd (containerd's own daemon), their settings, the commands a pull
runs on each, the run on the pretend machine and the report's peers."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from ab import hosts, report, runner, suite, systems
from ab.systems import containerd, dockerd
from ab.tests import fakehosts
from ab.tests.test_suite import GOOD, SuiteErrors, load

PEER = GOOD + """
[flavor.containerd]
daemon = [
  { max_concurrent_downloads = 3, concurrent_layer_fetch_buffer = 0 },
  { max_concurrent_downloads = 10, concurrent_layer_fetch_buffer = "1MiB" },
]
"""


class SystemsTest(unittest.TestCase):
    def test_every_flavour_has_one_system(self):
        self.assertEqual(systems.flavours(), ("stock", "patched", "containerd"))
        self.assertEqual([systems.name_of(f) for f in systems.flavours()], ["dockerd", "dockerd", "containerd"])
        self.assertIs(systems.of("containerd"), containerd)
        with self.assertRaises(KeyError):
            systems.name_of("podman")
        for m in systems.every():
            for attr in ("FLAVOURS", "TABLE_KEYS", "validate", "start", "record", "pull_command", "cold_command"):
                self.assertTrue(hasattr(m, attr), f"{m.__name__} lacks {attr}")


class ContainerdSuiteTest(SuiteErrors, unittest.TestCase):
    def test_settings_listed_one_by_one(self):
        s = load(PEER)
        fl = s.flavours["containerd"]
        self.assertEqual(fl.system, "containerd")
        self.assertEqual(fl.variants(), [
            {"max_concurrent_downloads": 3, "concurrent_layer_fetch_buffer": 0},
            {"max_concurrent_downloads": 10, "concurrent_layer_fetch_buffer": 1 << 20}])
        # the dockerd flavours are as they were
        self.assertEqual(s.flavours["stock"].system, "dockerd")
        self.assertEqual(len(s.flavours["stock"].variants()), 2)

    def test_a_list_of_values_is_a_scan(self):
        text = GOOD + '[flavor.containerd]\ndaemon = { max_concurrent_downloads = [3, 10], ' \
                      'concurrent_layer_fetch_buffer = "4MiB" }\n'
        self.assertEqual(load(text).flavours["containerd"].variants(), [
            {"concurrent_layer_fetch_buffer": 4 << 20, "max_concurrent_downloads": 3},
            {"concurrent_layer_fetch_buffer": 4 << 20, "max_concurrent_downloads": 10}])

    def test_bad_settings_refused_naming_the_line(self):
        self.assertEditsRefused(PEER, [
            ("max_concurrent_downloads = 3,", "max_downloads = 3,",
             r":\d+: daemon.max_downloads: not a setting of containerd's transfer service"),
            ("max_concurrent_downloads = 3,", "max_concurrent_downloads = 0,",
             r"daemon.max_concurrent_downloads: want an integer >= 1"),
            ('"1MiB"', '"1 MiB"', r"bad size '1 MiB'"),
            ('"1MiB"', "-1", r"daemon.concurrent_layer_fetch_buffer: want a size >= 0"),
            ("max_concurrent_downloads = 3,", "max_concurrent_downloads = [3, 10],",
             r"a list of tables gives each setting once"),
            ("daemon = [", "binary = \"stock\"\ndaemon = [", r"unknown key 'binary' in \[flavor.containerd\]"),
        ])
        self.assertRegex(self.error(PEER.replace("daemon = [\n  {", "daemon = []\nx = [\n  {")),
                         r"unknown key 'x'|empty list")

    def test_only_kinds_that_measure_it(self):
        ck = GOOD[:GOOD.index("[[profile]]")].replace('kind = "pull"', 'kind = "checkpoint"') + \
            'scenarios = ["alone"]\n[[container]]\nname = "a"\nmemory = "16MiB"\n[flavor.stock]\n' \
            '[flavor.containerd]\n'
        self.assertRegex(self.error(ck), r":\d+: \[flavor.containerd\]: checkpoint suites measure dockerd, "
                                         r"not containerd")
        # a list of settings is a scan, which checkpoint suites do not run
        ck = ck.replace("[flavor.containerd]\n", "daemon = [{}, {}]\n")
        self.assertIn("a list of settings is a scan", self.error(ck))

    def test_peers_suites(self):
        """The -peers suites are their suites with a containerd scan added:
        the same links, images and dockerd flavours."""
        root = os.path.join(hosts.ROOT, "hyperfine-suites")
        for name in ("pull-capped", "pull-lossy", "pull-lossless", "pull-quick", "pull-capped-holdout",
                     "pull-lossy-holdout"):
            with self.subTest(name):
                base = suite.load(os.path.join(root, name + ".toml"))
                peers = suite.load(os.path.join(root, name + "-peers.toml"))
                self.assertEqual((peers.profiles, peers.images, peers.warmup, peers.arms),
                                 (base.profiles, base.images, base.warmup, base.arms))
                for f in ("stock", "patched"):
                    self.assertEqual(peers.flavours[f], base.flavours[f])
                self.assertEqual(len(peers.flavours["containerd"].variants()), 4)
                self.assertNotIn("containerd", base.flavours)


class ContainerdCommandsTest(unittest.TestCase):
    def test_pull_and_cold(self):
        ctr = containerd.ctr_path()
        self.assertEqual(containerd.pull_command(None, ["r/a:1"]),
                         f"{ctr} image pull --plain-http r/a:1 >/dev/null")
        two = containerd.pull_command(None, ["r/a:1", "r/b:1"])
        self.assertIn(f"{ctr} image pull --plain-http r/a:1 >/dev/null & p=$!;", two)
        self.assertTrue(two.endswith("wait $p && exit $s"))
        cold = containerd.cold_command(None, ["r/a:1", "r/b:1"])
        self.assertTrue(cold.startswith(f"{ctr} image rm --sync r/a:1 r/b:1"))
        # what is left fails the preparation, and so the sample
        for what in ("image ls -q", "content ls -q", "snapshots ls"):
            self.assertIn(f'test -z "$({ctr} {what}', cold)

    def test_cold_command_fails_on_leftovers(self):
        """The preparation, run against a ctr that reports content left,
        fails; against one that reports nothing, succeeds."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        fake = os.path.join(d, "ctr")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\ncase "$1 $2" in "content ls") cat "$LEFT" ;; '
                    '"snapshots ls") echo "KEY PARENT KIND" ;; esac\n')
        os.chmod(fake, 0o755)
        left = os.path.join(d, "left")
        for content, rc in (("", 0), ("sha256:abc\n", 1)):
            with open(left, "w") as f:
                f.write(content)
            cmd = containerd.cold_command(None, ["r/a:1"]).replace(containerd.ctr_path(), fake)
            p = subprocess.run(["sh", "-c", cmd], env=dict(os.environ, LEFT=left))
            self.assertEqual(p.returncode, rc, content)

    def test_host_restarts_on_another_setting(self):
        """containerd reads its config at start: apply restarts the host
        with the setting given, and only when it differs."""
        from unittest import mock
        calls = []

        def sh(*args, **kw):
            calls.append(args)
            out = "/run/moby-ab/ctrd/containerd.sock\n" if args[1] == "up" else \
                "Client:\n  Version: v2.3.3\nServer:\n  Version: v2.3.3\n"
            return subprocess.CompletedProcess(args, 0, out, "")
        with mock.patch.object(hosts, "sh", sh):
            c = containerd.Containerd("containerd")
            c.up({"max_concurrent_downloads": 3})
            self.assertEqual((c.sock, c.version), ("/run/moby-ab/ctrd/containerd.sock", "v2.3.3"))
            self.assertEqual(c.env["CONTAINERD_ADDRESS"], c.sock)
            c.apply({"max_concurrent_downloads": 3})
            c.apply({"max_concurrent_downloads": 10, "concurrent_layer_fetch_buffer": 1 << 20})
            c.down()
        scripts = [a[1:] for a in calls if a[0] == containerd.SCRIPT]
        self.assertEqual(scripts, [
            ("up", "ctrd", "--transfer", '{"max_concurrent_downloads": 3}'),
            ("restart", "ctrd", "--transfer", '{"concurrent_layer_fetch_buffer": 1048576, "max_concurrent_downloads": 10}'),
            ("down", "ctrd")])

    def test_failed_start_taken_down(self):
        from unittest import mock
        from types import SimpleNamespace
        calls = []

        def sh(*args, **kw):
            calls.append(args[1:3])
            if args[1] == "up":
                raise hosts.HostError("containerd ctrd: exited during start-up")
            return subprocess.CompletedProcess(args, 0, "", "")
        with mock.patch.object(hosts, "sh", sh):
            with self.assertRaises(hosts.HostError):
                containerd.start("containerd", SimpleNamespace(variants=lambda: [{}]), [])
        self.assertEqual(calls, [("up", "ctrd"), ("down", "ctrd")])

    def test_server_version(self):
        out = ("Client:\n  Version:  v2.3.3\n  Revision: x\n  Go version: go1.26\n\n"
               "Server:\n  Version:  v2.3.3-dev\n  Revision: y\n  UUID: z\n")
        self.assertEqual(containerd._server_version(out), "v2.3.3-dev")
        self.assertIsNone(containerd._server_version("Client:\n  Version: v2\n"))

    def test_dockerd_commands_unchanged(self):
        self.assertEqual(dockerd.cold_command(None, ["a"]),
                         "docker rmi -f a >/dev/null 2>&1 ; docker image prune -af >/dev/null && "
                         "! docker image inspect a >/dev/null 2>&1")


class PeerRunTest(unittest.TestCase):
    """A pull suite with containerd on the pretend machine: every setting of
    the scan measured in every repetition, the daemon restarted for each,
    taken down at the end; the report puts patched against its best."""

    def test_run_and_report(self):
        out = tempfile.mkdtemp(prefix="ab-peers-")
        self.addCleanup(shutil.rmtree, out, True)
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write(PEER.replace("repetitions = 2", "repetitions = 6"))
        self.addCleanup(os.unlink, f.name)
        with fakehosts.pretend() as world:
            s = suite.load(f.name)
            self.assertTrue(runner.Runner(s, out).run())
            self.assertEqual(world.downs, ["containerd"])
            # the first setting at start, then a restart at each change of
            # setting: two settings, ABAB, so at least one per repetition
            self.assertGreaterEqual(world.restarts["containerd"], 6)
        doc = report.load(out)
        rec = doc["daemons"]["containerd"]
        self.assertEqual(rec["version"], "v2.3.3")
        self.assertEqual(rec["settings"][1], {"max_concurrent_downloads": 10, "concurrent_layer_fetch_buffer": 1 << 20})
        ctd = [e for e in doc["results"] if e["flavor"] == "containerd"]
        self.assertEqual(len(ctd), 2)
        for e in ctd:
            self.assertEqual(e["reps"], list(range(6)))
            self.assertTrue(all(b >= 0.98 * doc["images"]["small"]["bytes"] for b in e["served_bytes"]))
        row = report.comparisons(doc)[0]
        pe = row["peers"]["containerd"]
        self.assertEqual(pe["settings"], 2)
        # the pretend chunked setting pulls faster: it is the best
        self.assertIn("concurrent_layer_fetch_buffer=1048576", pe["best"]["params"])
        self.assertEqual(pe["vs_best"]["n"], 6)
        self.assertIn("p_adj", pe["vs_best"])
        # Bonferroni over the settings before Holm: its p is twice the
        # uncorrected test's
        from ab import stats
        pr = report.by_rep(next(e for e in doc["results"] if e["flavor"] == "patched"), "pull")
        raw = stats.paired(pr, report.by_rep(pe["best"]["entry"], "pull"))
        self.assertEqual(pe["vs_best"]["correction"], 2)
        self.assertAlmostEqual(pe["vs_best"]["p"], min(1.0, 2 * raw["p"]))
        # and it is among the summary's Holm-adjusted tests
        self.assertGreaterEqual(pe["vs_best"]["p_adj"], pe["vs_best"]["p"])
        report.write(out)
        with open(os.path.join(out, "report.md")) as fh:
            md = fh.read()
        self.assertIn("| far / small | containerd | 6 |", md)
        self.assertIn("best of 2", md)

    def test_no_peer_no_peer_table(self):
        doc = {"kind": "pull", "results": [
            {"flavor": f, "profile": "p", "image": "i", "params": {}, "scenario": None, "container": None,
             "times_s": [1.0, 1.1, 1.2], "reps": [0, 1, 2]} for f in ("stock", "patched", "runc")]}
        self.assertEqual(report.comparisons(doc)[0]["peers"], {})
        self.assertNotIn("Against the peers", report.summary_table(doc))


@unittest.skipUnless(os.geteuid() == 0, "hack/containerd-host.sh needs root")
class ContainerdHostScriptTest(unittest.TestCase):
    """hack/containerd-host.sh refuses a bad transfer config, naming the key,
    before it starts anything (no namespace, no daemon)."""

    def test_bad_transfer_refused(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        # ip, nsenter and setsid that only record being called: whatever
        # happens, nothing of the machine's namespaces is touched
        fakebin = os.path.join(d, "bin")
        os.makedirs(fakebin)
        for prog in ("ip", "nsenter", "setsid"):
            with open(os.path.join(fakebin, prog), "w") as f:
                f.write(f'#!/bin/sh\necho {prog} >>"{d}/called"\nexit 1\n')
            os.chmod(os.path.join(fakebin, prog), 0o755)
        env = dict(os.environ, AB_RUN=os.path.join(d, "run"), AB_VAR=os.path.join(d, "var"),
                   AB_CONTAINERD="/bin/true", AB_CTR="/bin/true", PATH=fakebin + ":" + os.environ["PATH"])
        self.addCleanup(lambda: self.assertFalse(os.path.exists(os.path.join(d, "called")),
                                                 "the script went on to create the host"))
        script = os.path.join(hosts.HACK, "containerd-host.sh")
        for transfer, msg in (('{"max_downloads": 3}', "unknown key(s) max_downloads"),
                              ('{"max_concurrent_downloads": -1}', "max_concurrent_downloads: want a non-negative"),
                              ('{"concurrent_layer_fetch_buffer": "1MiB"}', "concurrent_layer_fetch_buffer: want"),
                              ("[1]", "not a JSON object")):
            with self.subTest(transfer):
                p = subprocess.run([script, "up", "ctrd", "--transfer", transfer], env=env, text=True,
                                   capture_output=True)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(msg, p.stderr)
                self.assertFalse(os.path.exists(os.path.join(d, "run", "ctrd", "config.toml")))
        p = subprocess.run([script, "up", "stock"], env=env, text=True, capture_output=True)
        self.assertIn("'stock' is not a containerd test host", p.stderr)

    def test_config(self):
        """The config it writes: the host's own paths, the settings given."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        env = dict(os.environ, AB_RUN=os.path.join(d, "run"), AB_VAR=os.path.join(d, "var"))
        lib = os.path.join(hosts.HACK, "containerd-host.sh")
        # write_config alone, from the script's functions
        sh = (f'set -e; eval "$(sed -n \'/^paths()/,/^}}/p; /^write_config()/,/^}}/p\' {lib})"; '
              f'. {hosts.HACK}/lib.sh; TRANSFER_KEYS=\'["max_concurrent_downloads","concurrent_layer_fetch_buffer"]\'; '
              'paths ctrd; mkdir -p "$RUNDIR"; write_config \'{"max_concurrent_downloads": 10, '
              '"concurrent_layer_fetch_buffer": 1048576}\'; cat "$CONFIG"')
        p = subprocess.run(["bash", "-c", sh], env=env, text=True, capture_output=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        run, var = env["AB_RUN"], env["AB_VAR"]
        for want in (f"root = '{var}/ctrd/root'", f"state = '{run}/ctrd/state'",
                     f"address = '{run}/ctrd/containerd.sock'", "'io.containerd.nri.v1.nri'",
                     "[plugins.'io.containerd.transfer.v1.local']", "max_concurrent_downloads = 10",
                     "concurrent_layer_fetch_buffer = 1048576"):
            self.assertIn(want, p.stdout)
        import tomllib
        cfg = tomllib.loads(p.stdout)
        self.assertEqual(cfg["plugins"]["io.containerd.transfer.v1.local"],
                         {"max_concurrent_downloads": 10, "concurrent_layer_fetch_buffer": 1048576})


if __name__ == "__main__":
    unittest.main()
