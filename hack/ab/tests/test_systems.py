"""The systems under test (ab.systems): a suite's flavors of another system
than dockerd (containerd's own daemon, podman), their settings, the commands
a pull runs on each, the run on the pretend machine and the report's peers."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from ab import hosts, report, runner, suite, systems
from ab.systems import charliecloud, containerd, dockerd, podman
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
    def test_every_flavor_has_one_system(self):
        self.assertEqual(systems.flavors(), ("stock", "patched", "containerd", "podman", "charliecloud"))
        self.assertEqual([systems.name_of(f) for f in systems.flavors()],
                         ["dockerd", "dockerd", "containerd", "podman", "charliecloud"])
        self.assertIs(systems.of("containerd"), containerd)
        self.assertIs(systems.of("podman"), podman)
        self.assertIs(systems.of("charliecloud"), charliecloud)
        self.assertEqual(report.PEERS, ("containerd", "podman", "charliecloud"))
        with self.assertRaises(KeyError):
            systems.name_of("singularity")
        for m in systems.every():
            for attr in ("FLAVORS", "KINDS", "LABELS", "TABLE_KEYS", "validate", "start", "record"):
                self.assertTrue(hasattr(m, attr), f"{m.__name__} lacks {attr}")
        # what each kind measures has what the kind calls
        from ab import kinds
        calls = {"pull": ("pull_command", "cold_command"), "overhead": ("WORKLOADS", "NETWORKS", "shell", "pingpong"),
                 "checkpoint": ("run_container", "logs", "checkpoint", "restore", "stop", "remove")}
        for kind, attrs in calls.items():
            for name in kinds.get(kind).systems():
                for attr in attrs:
                    self.assertTrue(hasattr(systems.get(name), attr), f"{name} lacks {attr} ({kind})")


class ContainerdSuiteTest(SuiteErrors, unittest.TestCase):
    def test_settings_listed_one_by_one(self):
        s = load(PEER)
        fl = s.flavors["containerd"]
        self.assertEqual(fl.system, "containerd")
        self.assertEqual(fl.variants(), [
            {"max_concurrent_downloads": 3, "concurrent_layer_fetch_buffer": 0},
            {"max_concurrent_downloads": 10, "concurrent_layer_fetch_buffer": 1 << 20}])
        # the dockerd flavors are as they were
        self.assertEqual(s.flavors["stock"].system, "dockerd")
        self.assertEqual(len(s.flavors["stock"].variants()), 2)

    def test_a_list_of_values_is_a_scan(self):
        text = GOOD + '[flavor.containerd]\ndaemon = { max_concurrent_downloads = [3, 10], ' \
                      'concurrent_layer_fetch_buffer = "4MiB" }\n'
        self.assertEqual(load(text).flavors["containerd"].variants(), [
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
                                         r"podman, not containerd")
        # a list of settings is a scan, which checkpoint suites do not run
        ck = ck.replace("[flavor.containerd]\n", "daemon = [{}, {}]\n")
        self.assertIn("a list of settings is a scan", self.error(ck))

    def test_peers_suites(self):
        """The -peers suites are their suites with a containerd scan and
        podman added: the same links, images and dockerd flavors."""
        root = os.path.join(hosts.ROOT, "hyperfine-suites")
        for name in ("pull-capped", "pull-lossy", "pull-lossless", "pull-quick", "pull-capped-holdout",
                     "pull-lossy-holdout"):
            with self.subTest(name):
                base = suite.load(os.path.join(root, name + ".toml"))
                peers = suite.load(os.path.join(root, name + "-peers.toml"))
                self.assertEqual((peers.profiles, peers.images, peers.warmup, peers.arms),
                                 (base.profiles, base.images, base.warmup, base.arms))
                for f in ("stock", "patched"):
                    self.assertEqual(peers.flavors[f], base.flavors[f])
                self.assertEqual(len(peers.flavors["containerd"].variants()), 4)
                self.assertNotIn("containerd", base.flavors)
                # podman as shipped
                self.assertEqual(peers.flavors["podman"].variants(), [{}])
                self.assertNotIn("podman", base.flavors)


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
            # setting: two settings in every repetition, so at least one per repetition
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

    def test_peers_without_stock(self):
        # a suite of patched and a peer only (first contact against the
        # peer's best): no stock table, but patched against the peer, with
        # a verdict
        doc = {"kind": "pull", "results": [
            {"flavor": f, "profile": "p", "image": "i", "params": {}, "scenario": None, "container": None,
             "times_s": [t * (1 + 0.01 * i) for i in range(8)], "reps": list(range(8))}
            for f, t in (("patched", 2.0), ("containerd", 1.0))]}
        rows = report.comparisons(doc)
        self.assertEqual(len(rows), 1)
        self.assertNotIn("stock_default", rows[0])
        pe = rows[0]["peers"]["containerd"]
        self.assertAlmostEqual(pe["vs_best"]["ratio"], 2.0)
        self.assertIn("p_adj", pe["vs_best"])
        md = report.summary_table(doc)
        self.assertNotIn("stock default", md)
        self.assertIn("| containerd | 8 |", md)

    def test_no_peer_no_peer_table(self):
        doc = {"kind": "pull", "results": [
            {"flavor": f, "profile": "p", "image": "i", "params": {}, "scenario": None, "container": None,
             "times_s": [1.0, 1.1, 1.2], "reps": [0, 1, 2]} for f in ("stock", "patched", "runc")]}
        self.assertEqual(report.comparisons(doc)[0]["peers"], {})
        self.assertNotIn("Against the peers", report.summary_table(doc))


@unittest.skipUnless(os.geteuid() == 0, "hack/hosts/containerd-host.sh needs root")
class ContainerdHostScriptTest(unittest.TestCase):
    """hack/hosts/containerd-host.sh refuses a bad transfer config, naming the key,
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
        script = os.path.join(hosts.HOSTS, "containerd-host.sh")
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
        lib = os.path.join(hosts.HOSTS, "containerd-host.sh")
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


PODMAN = GOOD + """
[flavor.podman]
daemon = [{}, { image_parallel_copies = 10 }]
"""

# what `podman info --format json` said here (4.3.1 in test host podman),
# trimmed to what parse_info reads and a little around it
PODMAN_INFO = """{
  "host": {"arch": "amd64", "cgroupManager": "cgroupfs", "cgroupVersion": "v1",
           "ociRuntime": {"name": "runc", "package": "Unknown", "path": "/opt/moby-ab/bin/runc",
                          "version": "runc version 1.4.3\\ncommit: v1.4.3\\nspec: 1.3.0\\ngo: go1.26.8\\nlibseccomp: 2.5.4"}},
  "store": {"graphDriverName": "overlay", "graphRoot": "/var/lib/moby-ab/podman/storage",
            "runRoot": "/run/moby-ab/podman/storage", "imageStore": {"number": 0}},
  "registries": {"10.199.0.1:5000": {"Insecure": true}},
  "version": {"APIVersion": "4.3.1", "Version": "4.3.1", "GoVersion": "go1.19.8", "OsArch": "linux/amd64"}
}"""


class PodmanSuiteTest(SuiteErrors, unittest.TestCase):
    def test_settings(self):
        s = load(PODMAN)
        fl = s.flavors["podman"]
        self.assertEqual(fl.system, "podman")
        self.assertEqual(fl.variants(), [{}, {"image_parallel_copies": 10}])
        self.assertEqual(load(GOOD + "[flavor.podman]\n").flavors["podman"].variants(), [{}])
        self.assertEqual(load(GOOD + "[flavor.podman]\ndaemon = { image_parallel_copies = [3, 10] }\n")
                         .flavors["podman"].variants(), [{"image_parallel_copies": 3}, {"image_parallel_copies": 10}])

    def test_bad_settings_refused_naming_the_line(self):
        self.assertEditsRefused(PODMAN, [
            ("image_parallel_copies = 10", "max_parallel_downloads = 10",
             r":\d+: daemon.max_parallel_downloads: not a setting of podman's containers.conf \[engine\]"),
            ("image_parallel_copies = 10", "image_parallel_copies = 0",
             r":\d+: daemon.image_parallel_copies: want an integer >= 1, got 0"),
            ("image_parallel_copies = 10", 'image_parallel_copies = "10"', r"want an integer, got '10'"),
            ("image_parallel_copies = 10", "image_parallel_copies = [3, 10]",
             r"a list of tables gives each setting once"),
            ("daemon = [", 'binary = "stock"\ndaemon = [', r"unknown key 'binary' in \[flavor.podman\]"),
            ("daemon = [{}, { image_parallel_copies = 10 }]", "daemon = []", r"daemon: an empty list scans nothing"),
        ])

    def test_only_pull_and_checkpoint_suites(self):
        ck = GOOD[:GOOD.index("[[profile]]")].replace('kind = "pull"', 'kind = "checkpoint"') + \
            'scenarios = ["alone"]\n[[container]]\nname = "a"\nmemory = "16MiB"\n[flavor.stock]\n[flavor.podman]\n'
        self.assertEqual(load(ck).flavors["podman"].system, "podman")
        # a checkpoint suite does not scan: one setting
        self.assertIn("a list of settings is a scan", self.error(ck + "daemon = [{}, {}]\n"))
        cq = GOOD[:GOOD.index("[[profile]]")].replace('kind = "pull"', 'kind = "cpuquota"') + \
            '[flavor.stock]\n[flavor.podman]\n'
        self.assertRegex(self.error(cq), r":\d+: \[flavor.podman\]: cpuquota suites measure dockerd, not podman")


    def test_checkpoint_peers_suites(self):
        """checkpoint-quick-peers and checkpoint-together-peers are their
        suites with podman added: the same containers, scenarios and dockerd
        flavors, and at least as many repetitions (more where the peer needs
        a verdict)."""
        root = os.path.join(hosts.ROOT, "hyperfine-suites")
        for name in ("checkpoint-quick", "checkpoint-together"):
            with self.subTest(name):
                base = suite.load(os.path.join(root, name + ".toml"))
                peers = suite.load(os.path.join(root, name + "-peers.toml"))
                self.assertEqual((peers.containers, peers.scenarios, peers.restore, peers.floor),
                                 (base.containers, base.scenarios, base.restore, base.floor))
                self.assertGreaterEqual(peers.repetitions, base.repetitions)
                for f in ("stock", "patched"):
                    self.assertEqual(peers.flavors[f], base.flavors[f])
                self.assertEqual(peers.flavors["podman"].variants(), [{}])
                self.assertNotIn("podman", base.flavors)


class PodmanCommandsTest(unittest.TestCase):
    def test_pull(self):
        w, policy = podman.wrapper(), os.path.join(podman.rundir(), "policy.json")
        self.assertEqual(w, os.path.join(hosts.AB_RUN, "podman", "podman"))
        self.assertEqual(podman.pull_command(None, ["r/a:1"]),
                         f"{w} pull -q --signature-policy {policy} r/a:1 >/dev/null")
        two = podman.pull_command(None, ["r/a:1", "r/b:1"])
        self.assertIn(f"{w} pull -q --signature-policy {policy} r/a:1 >/dev/null & p=$!;", two)
        self.assertIn(f"{w} pull -q --signature-policy {policy} r/b:1 >/dev/null; s=$?;", two)
        self.assertTrue(two.endswith("wait $p && exit $s"))

    def test_cold_command_fails_on_leftovers(self):
        """The preparation, run against a podman that lists an image, or with
        a layer left in the storage, fails; with neither, it succeeds, and it
        asked podman to remove every image."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        fake = os.path.join(d, "podman")
        with open(fake, "w") as f:
            f.write(f'#!/bin/sh\necho "$*" >>{d}/calls\ncase "$1" in images) cat "$LEFT" ;; esac\n')
        os.chmod(fake, 0o755)
        overlay = os.path.join(d, "storage", "overlay")
        os.makedirs(os.path.join(overlay, "l"))
        open(os.path.join(overlay, ".has-mount-program"), "w").close()
        left = os.path.join(d, "left")
        cmd = podman.cold_command(None, ["r/a:1"]).replace(podman.wrapper(), fake) \
            .replace(podman.graphroot(), os.path.join(d, "storage"))
        self.assertNotIn(podman.wrapper(), cmd)
        for image, layer, rc in (("", False, 0), ("6c5e928781ae\n", False, 1), ("", True, 1)):
            with self.subTest(image=image, layer=layer):
                with open(left, "w") as f:
                    f.write(image)
                if layer:
                    os.makedirs(os.path.join(overlay, "bcdc7b4e452c"))
                p = subprocess.run(["sh", "-c", cmd], env=dict(os.environ, LEFT=left))
                self.assertEqual(p.returncode, rc)
        with open(os.path.join(d, "calls")) as f:
            self.assertIn("rmi --all --force", f.read())

    def test_parse_info(self):
        self.assertEqual(podman.parse_info(PODMAN_INFO), {
            "version": "4.3.1", "storage_driver": "overlay", "graphroot": "/var/lib/moby-ab/podman/storage",
            "runroot": "/run/moby-ab/podman/storage", "runtime": "/opt/moby-ab/bin/runc",
            "runtime_version": "runc version 1.4.3", "cgroup_manager": "cgroupfs"})
        # what it does not say is None, whatever the shape it has there
        self.assertEqual(podman.parse_info('{"version": {"Version": "4.3.1"}, "store": [1], "host": "x"}'),
                         {"version": "4.3.1", "storage_driver": None, "graphroot": None, "runroot": None,
                          "runtime": None, "runtime_version": None, "cgroup_manager": None})
        for bad in ("", "[]", '{"store": {}}', '{"version": "4.3.1"}', "not json"):
            with self.subTest(bad), self.assertRaises(ValueError):
                podman.parse_info(bad)

    def test_host_writes_config_on_another_setting(self):
        """podman has no daemon: apply rewrites containers.conf through the
        host script, only when the setting differs; up reads podman info."""
        from unittest import mock
        calls = []

        def sh(*args, **kw):
            calls.append(args)
            out = PODMAN_INFO if args[1:3] == ("info", "--format") else f"{podman.rundir()}\n"
            return subprocess.CompletedProcess(args, 0, out, "")
        with mock.patch.object(hosts, "sh", sh):
            p = podman.Podman("podman")
            p.up({})
            self.assertEqual(p.info["storage_driver"], "overlay")
            self.assertEqual(p.env["CONTAINERS_CONF"], os.path.join(podman.rundir(), "containers.conf"))
            p.apply({})
            p.apply({"image_parallel_copies": 10})
            p.apply({"image_parallel_copies": 10})
            p.down()
        self.assertEqual([a[1:] for a in calls if a[0] == podman.SCRIPT], [
            ("up", "podman", "--engine", "{}"),
            ("config", "podman", "--engine", '{"image_parallel_copies": 10}'),
            ("down", "podman")])
        self.assertEqual([a[1:] for a in calls if a[0] == podman.wrapper()], [("info", "--format", "json")])

    def test_failed_start_taken_down(self):
        from unittest import mock
        from types import SimpleNamespace
        calls = []

        def sh(*args, **kw):
            calls.append(args[1:3])
            if args[1] == "up":
                raise hosts.HostError("podman podman: podman info failed")
            return subprocess.CompletedProcess(args, 0, "", "")
        with mock.patch.object(hosts, "sh", sh):
            with self.assertRaises(hosts.HostError):
                podman.start("podman", SimpleNamespace(variants=lambda: [{}]), [])
        self.assertEqual(calls, [("up", "podman"), ("down", "podman")])


class PodmanRunTest(unittest.TestCase):
    """A pull suite with containerd and podman on the pretend machine: both
    peers measured in every repetition, taken down at the end; the report
    puts patched against each one's best, and says what podman ran with."""

    def test_run_and_report(self):
        out = tempfile.mkdtemp(prefix="ab-peers-")
        self.addCleanup(shutil.rmtree, out, True)
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write((PEER + PODMAN[len(GOOD):]).replace("repetitions = 2", "repetitions = 6"))
        self.addCleanup(os.unlink, f.name)
        with fakehosts.pretend() as world:
            s = suite.load(f.name)
            self.assertTrue(runner.Runner(s, out).run())
            self.assertEqual(sorted(world.downs), ["containerd", "podman"])
            # two settings in every repetition: containers.conf rewritten in each
            self.assertGreaterEqual(world.configs["podman"], 6)
        doc = report.load(out)
        rec = doc["daemons"]["podman"]
        self.assertEqual((rec["version"], rec["storage_driver"], rec["runtime"]),
                         ("4.3.1", "overlay", "/opt/moby-ab/bin/runc"))
        self.assertEqual(rec["settings"], [{}, {"image_parallel_copies": 10}])
        self.assertEqual(rec["ulimits"], ["nofile=1024:1024", "nproc=4096:4096"])
        pod = [e for e in doc["results"] if e["flavor"] == "podman"]
        self.assertEqual(len(pod), 2)
        for e in pod:
            self.assertEqual(e["reps"], list(range(6)))
            self.assertTrue(all(b >= 0.98 * doc["images"]["small"]["bytes"] for b in e["served_bytes"]))
        row = report.comparisons(doc)[0]
        self.assertEqual(sorted(row["peers"]), ["containerd", "podman"])
        pe = row["peers"]["podman"]
        self.assertEqual((pe["settings"], pe["vs_best"]["n"], pe["vs_best"]["correction"]), (2, 6, 2))
        self.assertIn("p_adj", pe["vs_best"])
        report.write(out)
        with open(os.path.join(out, "report.md")) as fh:
            md = fh.read()
        self.assertIn("| far / small | containerd | 6 |", md)
        self.assertIn("| far / small | podman | 6 |", md)


CHECKPOINT_PODMAN = """
name = "t"
kind = "checkpoint"
repetitions = 6
scenarios = ["alone", "together"]
restore = true
floor = true

[[container]]
name = "16MiB"
memory = "16MiB"

[[container]]
name = "64MiB"
memory = "64MiB"

[flavor.stock]
daemon = {}

[flavor.patched]
daemon = { "checkpoint-max-concurrent" = 2 }

[flavor.podman]
"""


class PodmanCheckpointRunTest(unittest.TestCase):
    """A checkpoint suite with podman on the pretend machine: its memory
    holders started, checkpointed and restored with podman's commands in
    every repetition; runc's floor measured in the dockerd hosts only; the
    report puts patched against podman, and lists podman's restores."""

    def test_run_and_report(self):
        out = tempfile.mkdtemp(prefix="ab-ckpt-podman-")
        self.addCleanup(shutil.rmtree, out, True)
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write(CHECKPOINT_PODMAN)
        self.addCleanup(os.unlink, f.name)
        with fakehosts.pretend() as world:
            s = suite.load(f.name)
            self.assertTrue(runner.Runner(s, out).run())
            calls = world.podman_calls
        self.assertIn(["load", "-q", "-i", os.path.join(hosts.ROOT, "build", "images", "memholder.tar")], calls)
        runs = [c for c in calls if c[0] == "run"]
        # a warm-up checkpoint of the first container (not timed), then 6
        # repetitions: each container alone, then both together
        self.assertEqual(len(runs), 1 + 6 * 4)
        self.assertEqual(runs[0][:6], ["run", "-d", "--name", "abcp-warm-16MiB", "--network", "none"])
        self.assertEqual(runs[1][:6], ["run", "-d", "--name", "abcp-16MiB", "--network", "none"])
        self.assertEqual(runs[1][6:], ["docker.io/ab/memholder", "memholder", "-r", "200", "16"])
        self.assertEqual(sum(c[:2] == ["container", "checkpoint"] for c in calls), 1 + 6 * 4)
        # restores follow the checkpoints alone, of the container checkpointed
        restores = [c for c in calls if c[:2] == ["container", "restore"]]
        self.assertEqual(len(restores), 6 * 2)
        self.assertEqual(restores[0], ["container", "restore", "abcp-16MiB"])
        self.assertTrue(all(c[0] != "rm" or c[1] == "-f" for c in calls))
        doc = report.load(out)
        pod = {(e["scenario"], e["container"]): e for e in doc["results"] if e["flavor"] == "podman"}
        self.assertEqual(set(pod), {("alone", "16MiB"), ("alone", "64MiB"), ("together", "16MiB"),
                                    ("together", "64MiB"), ("together", "(batch)")})
        self.assertEqual(len([x for x in pod[("alone", "16MiB")]["restore_s"] if x is not None]), 6)
        floors = [e for e in doc["results"] if e["flavor"] == "runc"]
        self.assertTrue(floors)
        self.assertTrue(all(set(e["floor_host"]) <= {"stock", "patched"} for e in floors))
        row = next(r for r in report.comparisons(doc) if r["cell"] == "alone: 16MiB")
        self.assertEqual((row["peers"]["podman"]["settings"], row["peers"]["podman"]["vs_best"]["n"]), (1, 6))
        report.write(out)
        with open(os.path.join(out, "report.md")) as fh:
            md = fh.read()
        self.assertIn("| alone: 16MiB | podman | 6 |", md)
        self.assertRegex(md, r"\| podman \| 16MiB \| 6/6 \|")


@unittest.skipUnless(os.geteuid() == 0, "hack/hosts/podman-host.sh needs root")
class PodmanHostScriptTest(unittest.TestCase):
    """hack/hosts/podman-host.sh refuses a bad [engine] setting, naming the key,
    before it creates anything; the configuration it writes keeps podman
    off the machine's defaults."""

    def env(self, d):
        # ip, nsenter and unshare that only record being called: whatever
        # happens, nothing of the machine's namespaces is touched
        fakebin = os.path.join(d, "bin")
        os.makedirs(fakebin)
        for prog in ("ip", "nsenter", "unshare"):
            with open(os.path.join(fakebin, prog), "w") as f:
                f.write(f'#!/bin/sh\necho {prog} >>"{d}/called"\nexit 1\n')
            os.chmod(os.path.join(fakebin, prog), 0o755)
        return dict(os.environ, AB_RUN=os.path.join(d, "run"), AB_VAR=os.path.join(d, "var"),
                    AB_PODMAN="/bin/true", PATH=fakebin + ":" + os.environ["PATH"])

    def test_bad_engine_refused(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        env = self.env(d)
        self.addCleanup(lambda: self.assertFalse(os.path.exists(os.path.join(d, "called")),
                                                 "the script went on to create the host"))
        script = os.path.join(hosts.HOSTS, "podman-host.sh")
        for engine, msg in (('{"max_parallel_downloads": 3}', "unknown key(s) max_parallel_downloads"),
                            ('{"image_parallel_copies": 0}', "image_parallel_copies: want an integer >= 1"),
                            ('{"image_parallel_copies": "6"}', "image_parallel_copies: want an integer >= 1"),
                            ("[1]", "not a JSON object")):
            with self.subTest(engine):
                p = subprocess.run([script, "up", "podman", "--engine", engine], env=env, text=True,
                                   capture_output=True)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn(msg, p.stderr)
                self.assertFalse(os.path.exists(os.path.join(d, "run", "podman", "containers.conf")))
        p = subprocess.run([script, "up", "ctrd"], env=env, text=True, capture_output=True)
        self.assertIn("'ctrd' is not a podman test host", p.stderr)

    def test_config(self):
        """The files up writes (from the script's functions): the host's own
        paths, the project's runc, the lowered rlimits, file locks, plain
        HTTP to the test registry only, the settings given; and the wrapper
        every command goes through."""
        import tomllib
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d, True)
        env = dict(os.environ, AB_RUN=os.path.join(d, "run"), AB_VAR=os.path.join(d, "var"), AB_PREFIX="/opt/ab")
        lib = os.path.join(hosts.HOSTS, "podman-host.sh")
        sh = (f'set -e; . {hosts.HACK}/lib.sh; '
              f'eval "$(sed -n \'/^PODMAN=/,/^REGISTRIES=/p; /^[a-z_]*() {{/,/^}}/p\' {lib})"; '
              'paths podman; mkdir -p "$RUNDIR"; write_engine \'{"image_parallel_copies": 10}\'; write_configs; '
              'write_wrapper')
        p = subprocess.run(["bash", "-c", sh], env=env, text=True, capture_output=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        run, var = os.path.join(env["AB_RUN"], "podman"), os.path.join(env["AB_VAR"], "podman")

        def toml(name):
            with open(os.path.join(run, name), "rb") as f:
                return tomllib.load(f)
        conf = toml("containers.conf")
        self.assertEqual(conf["containers"]["default_ulimits"], ["nofile=1024:1024", "nproc=4096:4096"])
        eng = conf["engine"]
        self.assertEqual((eng["runtime"], eng["runtimes"]["runc"]), ("runc", ["/opt/ab/bin/runc"]))
        self.assertEqual((eng["lock_type"], eng["image_parallel_copies"]), ("file", 10))
        for k in ("tmp_dir", "events_logfile_path"):
            self.assertTrue(eng[k].startswith(run + "/"), k)
        for k in ("static_dir", "volume_path", "image_copy_tmp_dir"):
            self.assertTrue(eng[k].startswith(var + "/"), k)
        self.assertEqual(toml("storage.conf")["storage"], {"driver": "overlay", "graphroot": f"{var}/storage",
                                                          "runroot": f"{run}/storage"})
        reg = toml("registries.conf")
        self.assertEqual(reg["unqualified-search-registries"], [])
        self.assertEqual({(r["location"], r["insecure"]) for r in reg["registry"]},
                         {(a, True) for a in ("10.199.0.1:5000", "10.199.0.1:5001", "10.199.0.2:5000",
                                              "10.199.0.2:5001")})
        with open(os.path.join(run, "policy.json")) as f:
            self.assertEqual(json.load(f), {"default": [{"type": "insecureAcceptAnything"}]})
        with open(os.path.join(run, "podman")) as f:
            wrapper = f.read()
        self.assertTrue(os.access(os.path.join(run, "podman"), os.X_OK))
        for want in (f"CONTAINERS_CONF={run}/containers.conf", f"CONTAINERS_STORAGE_CONF={run}/storage.conf",
                     f"CONTAINERS_REGISTRIES_CONF={run}/registries.conf",
                     f"nsenter --net=/run/netns/ab-podman --mount={run}/ns/mnt -- /usr/bin/podman"):
            self.assertIn(want, wrapper)


if __name__ == "__main__":
    unittest.main()


class OneModuleTest(unittest.TestCase):
    """A system is added by its own module: the kinds it is measured by, and
    its flavors' names in the reports, are the module's."""

    def test_kinds_come_from_the_systems(self):
        from ab import kinds
        self.assertEqual(kinds.get("pull").systems(), ("dockerd", "containerd", "podman"))
        self.assertEqual(kinds.get("checkpoint").systems(), ("dockerd", "podman"))
        self.assertEqual(kinds.get("overhead").systems(), ("dockerd", "charliecloud"))
        self.assertEqual(kinds.get("neighbour").systems(), ("dockerd",))
        for m in systems.every():
            for k in m.KINDS:
                self.assertIn(k, kinds.NAMES, m.__name__)
            self.assertEqual(set(m.LABELS), set(m.FLAVORS), m.__name__)


class CheckpointWarmupTest(SuiteErrors, unittest.TestCase):
    def test_warmup_key(self):
        self.assertEqual(load(CHECKPOINT_PODMAN).warmup, 1)
        self.assertEqual(load("warmup = 0\n" + CHECKPOINT_PODMAN).warmup, 0)
        self.assertRegex(self.error("warmup = -1\n" + CHECKPOINT_PODMAN), r":1: warmup: want an integer >= 0")
