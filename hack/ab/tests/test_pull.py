"""kind = "pull": its suite files and its report (Table 1, the plot)."""
import shutil
import unittest

from ab import report
from ab.tests.docs import render
from ab.tests.test_suite import GOOD, SuiteErrors, load


class PullSuiteTest(SuiteErrors, unittest.TestCase):
    def test_good_suite(self):
        s = load(GOOD)
        self.assertEqual(s.kind, "pull")
        self.assertEqual(s.images[0].layers, [1 << 20, 512 << 10])
        self.assertEqual(s.flavors["stock"].variants(),
                         [{"max-concurrent-downloads": 1}, {"max-concurrent-downloads": 3}])
        self.assertEqual(s.flavors["patched"].variants(), [{}])

    def test_unknown_key_names_the_line(self):
        msg = self.error(GOOD.replace('rate = "100mbit"', 'rates = "100mbit"'))
        self.assertRegex(msg, r":9: unknown key 'rates' in \[\[profile\]\]")

    def test_bad_unit_names_the_line(self):
        msg = self.error(GOOD.replace('rtt = "140ms"', 'rtt = "140 ms"'))
        self.assertRegex(msg, r":8: rtt: bad duration '140 ms'")
        msg = self.error(GOOD.replace('"512KiB"', '"512kb"'))
        self.assertIn("bad size '512kb'", msg)

    def test_congestion(self):
        self.assertEqual(load(GOOD).profiles[0].congestion, "cubic")
        s = load(GOOD.replace('rate = "100mbit"', 'rate = "100mbit"\ncongestion = "bbr"'))
        self.assertEqual(s.profiles[0].congestion, "bbr")
        for bad in ('"BBR v2"', '3'):
            msg = self.error(GOOD.replace('rate = "100mbit"', f'rate = "100mbit"\ncongestion = {bad}'))
            self.assertIn("congestion", msg)

    def test_conn_rate(self):
        self.assertIsNone(load(GOOD).profiles[0].conn_rate_bits_per_s)
        s = load(GOOD.replace('rate = "100mbit"', 'rate = "100mbit"\nconn_rate = "8mbit"'))
        self.assertEqual(s.profiles[0].conn_rate_bits_per_s, 8_000_000)
        msg = self.error(GOOD.replace('rate = "100mbit"', 'rate = "100mbit"\nconn_rate = "8 Mbps"'))
        self.assertIn("conn_rate", msg)

    def test_second_registry(self):
        self.assertIsNone(load(GOOD).profiles[0].second)
        two = GOOD.replace('loss = "0%"\n', 'loss = "0%"\n[profile.second]\nrtt = "35ms"\nrate = "20mbit"\n'
                                              'loss = "0.5%"\nconn_rate = "4mbit"\n')
        s = load(two)
        sec = s.profiles[0].second
        self.assertEqual((sec.rtt_ms, sec.rate_bits_per_s, sec.loss_pct, sec.conn_rate_bits_per_s),
                         (35, 20_000_000, 0.5, 4_000_000))
        self.assertEqual(s.profiles[0].rtt_ms, 140)
        # a link's keys only, in units, named by their line
        msg = self.error(two.replace('rtt = "35ms"', 'name = "b"'))
        self.assertRegex(msg, r"unknown key 'name' in \[profile.second\]")
        msg = self.error(two.replace('rtt = "35ms"', 'rtt = "35 ms"'))
        self.assertRegex(msg, r":\d+: rtt: bad duration '35 ms'")

    def test_two_pulls_at_once(self):
        from ab.systems import dockerd
        self.assertEqual(dockerd.pull_command(None, ["a"]), "docker pull -q a")
        cmd = dockerd.pull_command(None, ["a", "b"])
        self.assertIn("docker pull -q a &", cmd)
        self.assertIn("docker pull -q b;", cmd)
        self.assertTrue(cmd.endswith("wait $p && exit $s"))

    def test_warmup(self):
        self.assertEqual(load(GOOD.replace("repetitions = 2", "repetitions = 2\nwarmup = 1")).warmup, 1)
        self.assertEqual(load(GOOD).warmup, 0)
        msg = self.error(GOOD.replace("repetitions = 2", "repetitions = 2\nwarmup = -1"))
        self.assertRegex(msg, r":5: warmup: want an integer >= 0")
        ov = GOOD.replace('kind = "pull"', 'kind = "overhead"').replace("repetitions = 2", "repetitions = 2\nwarmup = 1")
        self.assertIn("warmup: only pull and checkpoint suites have warm-ups", self.error(ov))

    def test_arms(self):
        self.assertEqual(load(GOOD).arms, ["learned"])
        s = load(GOOD.replace("repetitions = 2", 'repetitions = 2\narms = ["learned", "fresh"]'))
        self.assertEqual(s.arms, ["learned", "fresh"])
        for bad in ('["fresh", "fresh"]', '["cold"]', "[]"):
            msg = self.error(GOOD.replace("repetitions = 2", f"repetitions = 2\narms = {bad}"))
            self.assertRegex(msg, r":5: arms: want one or both of learned, fresh")
        ck = GOOD.replace('kind = "pull"', 'kind = "checkpoint"').replace("repetitions = 2", 'repetitions = 2\narms = ["fresh"]')
        self.assertIn("arms: only pull suites", self.error(ck))

    def test_missing_section(self):
        text = GOOD[:GOOD.index("[[image]]")] + GOOD[GOOD.index("[flavor.stock]"):]
        self.assertIn("needs at least one [[image]]", self.error(text))


class PullReportTest(unittest.TestCase):
    def test_congestion_column(self):
        from ab.kinds import pull_report
        got = {"registry": "cubic", "host": "cubic", "default": "bbr"}
        self.assertEqual(pull_report.congestion({"congestion": "cubic"}, {"congestion": got}), "cubic")
        # a route that did not take the setting is shown, not hidden
        self.assertEqual(pull_report.congestion({"congestion": "reno"}, {"congestion": got}), "**cubic** (configured reno)")
        self.assertEqual(pull_report.congestion({"congestion": "cubic"}, {}), "cubic (not read back)")
        # results from before the link set it
        self.assertEqual(pull_report.congestion({}, {"rtt_ms": 120}), "the machine's default")

    def test_report_from_results(self):
        doc = {"suite": "t", "kind": "pull", "repetitions": 3, "started": "x", "finished": "y",
               "machine": {"cpu": "c", "cpus": 2, "memory_gib": 1, "kernel": "k"},
               "daemons": {"stock": {"version": "29.7.1"}, "patched": {"version": "29.7.1+ab.x"}},
               "link": {"backend": "tun"}, "seed": {"best_vs_worst_pct": {"far": {"small": 189.91}}},
               "results": []}
        for mcd, ts in ((1, [4.0, 4.1, 4.2]), (3, [3.0, 3.1, 3.2]), (7, [2.5, 2.6, 2.4])):
            doc["results"].append({"flavor": "stock", "profile": "far", "image": "small",
                                   "params": {"max-concurrent-downloads": mcd}, "scenario": None,
                                   "container": None, "times_s": ts, "errors": []})
        doc["results"].append({"flavor": "patched", "profile": "far", "image": "small", "params": {},
                               "scenario": None, "container": None, "times_s": [2.5, 2.45, 2.55], "errors": []})
        md, files = render(doc)
        self.assertTrue(files.get("pull.png", 0) > 1000)
        row = report.comparisons(doc)[0]
        self.assertEqual(row["stock_default"]["params"], "max-concurrent-downloads=3")
        self.assertEqual(row["stock_best"]["params"], "max-concurrent-downloads=7")
        self.assertAlmostEqual(row["vs_default"]["ratio"], 2.5 / 3.1, places=3)
        self.assertIn("| far / small |", md)
        self.assertIn("2.450, 2.500, 2.550".replace("2.450, 2.500, 2.550", "2.500, 2.450, 2.550"), md)
        # Table 1: best c=7, worst c=1, (4.1 - 2.5) / 2.5 = 64%, the seed's number beside it
        self.assertIn("| far | small | 2.500 s (c=7) | 4.100 s (c=1) | 64% | 189.91% |", md)


class ProvenanceTest(unittest.TestCase):
    def test_aa_and_stale_binary(self):
        prov = {"series": "abc", "upstream": {"version": "29.8.1"}, "commit": "f" * 40, "suite_sha256": "0" * 64}
        doc = {"provenance": prov, "daemons": {"stock": {"version": "29.8.1", "binary": "dockerd-stock"},
                                               "patched": {"version": "29.8.1", "binary": "dockerd-stock"}}}
        lines = "\n".join(report.provenance_lines(doc))
        self.assertIn("A/A run: both test hosts run dockerd-stock", lines)
        self.assertNotIn("stale", lines)
        doc["daemons"]["patched"] = {"version": "29.8.1+ab.old", "binary": "dockerd-patched"}
        lines = "\n".join(report.provenance_lines(doc))
        self.assertIn("its binary is stale", lines)
        doc["daemons"]["patched"]["version"] = "29.8.1+ab.abc"
        self.assertNotIn("warning", "\n".join(report.provenance_lines(doc)))


class FirstContactTest(unittest.TestCase):
    """A first-contact pull runs on a daemon restarted without what it learned
    of registries, and the learned state is back for the next pull."""

    def test_state_aside_and_back(self):
        import os
        import tempfile
        from types import SimpleNamespace
        from ab.kinds import pull
        from ab.tests import fakehosts
        with fakehosts.pretend() as world:
            d = fakehosts.FakeDaemon(world, "patched")
            state = os.path.join(d.vardir(), "data", pull.LEARNED_STATE)
            os.makedirs(os.path.dirname(state))
            with open(state, "w") as f:
                f.write('{"10.199.0.1:5000": {"limit": 7}}')
            tmp = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, tmp, True)
            r = SimpleNamespace(tmp=tmp)
            seen = []
            t, err, _ = pull.first_contact(r, d, lambda: (seen.append(os.path.exists(state)), (1.0, None, 5))[1])
            self.assertEqual((t, err, seen), (1.0, None, [False]))
            with open(state) as f:
                self.assertIn('"limit": 7', f.read())
            self.assertEqual(world.restarts["patched"], 2)
            # a pull that fails still puts the state back
            with self.assertRaises(RuntimeError):
                pull.first_contact(r, d, lambda: (_ for _ in ()).throw(RuntimeError("x")))
            self.assertTrue(os.path.exists(state))
            # what the first-contact pull learned is not kept
            def learn():
                with open(state, "w") as f:
                    f.write("{}")
                return 1.0, None, 5
            pull.first_contact(r, d, learn)
            with open(state) as f:
                self.assertIn('"limit": 7', f.read())


class PullTimeoutTest(unittest.TestCase):
    """A pull that hangs is ended at the suite's sample_timeout and is a
    failed sample of its repetition; the run goes on."""

    # the patched daemon's sixth pull of image two: its learned arm's in
    # repetition 1 (two warm-ups, two pulls in repetition 0, and in 1 the
    # arms' order drawn from the pretend start time puts fresh first)
    HANG = ("hang", "patched", "docker pull -q 10.199.0.1:5000/ab-pull/two:v1", 5)

    def run_suite(self, text):
        """Run text on the pretend machine, the pull HANG hanging: its results."""
        import os
        import shutil
        import tempfile
        from ab import runner
        from ab.tests import fakehosts
        out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, out, True)
        with fakehosts.pretend({self.HANG}):
            self.assertTrue(runner.Runner(load(text), out).run())
        return report.load(out)

    def golden(self):
        import os
        from ab.tests.test_golden import GOLDEN
        with open(os.path.join(GOLDEN, "pull.toml")) as f:
            return f.read()

    def test_default_timeout(self):
        doc = self.run_suite(self.golden())
        e = next(e for e in doc["results"] if e["flavor"] == "patched" and e["image"] == "two" and not e.get("arm"))
        self.assertEqual((e["reps"], e["failed_reps"], e["errors"]), ([0], [1], ["timeout after 600 s"]))
        # every other sample was measured
        self.assertEqual(sum(len(x["times_s"]) + x["failed"] for x in doc["results"]), 2 * 2 * 5)

    def test_suite_timeout(self):
        self.assertEqual(load(GOOD).sample_timeout, 600)
        text = self.golden().replace("repetitions = 2", 'repetitions = 2\nsample_timeout = "45s"')
        self.assertEqual(load(text).sample_timeout, 45)
        doc = self.run_suite(text)
        e = next(e for e in doc["results"] if e["flavor"] == "patched" and e["image"] == "two" and not e.get("arm"))
        self.assertEqual(e["errors"], ["timeout after 45 s"])
        from ab import suite
        for bad, msg in (('"0s"', "sample_timeout: want at least 1s"), ("45", "sample_timeout: want a duration")):
            with self.assertRaisesRegex(suite.SuiteError, msg):
                load(GOOD.replace("repetitions = 2", f"repetitions = 2\nsample_timeout = {bad}"))


if __name__ == "__main__":
    unittest.main()


class PullTimelineTest(unittest.TestCase):
    """A capped link's proxy log becomes the results' timeline directory and
    the report's table of each host's median pull."""

    def test_capped_link_timeline_in_results_and_report(self):
        import os
        import tempfile
        import types
        from ab.kinds import pull
        from ab.kinds import pull_report
        from ab.tests.test_timeline import log
        with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as out:
            with open(os.path.join(tmp, "proxy-capped.log"), "w") as f:
                f.write("\n".join(log((1, 0.0, 4.0, 4_000_000, None), (2, 1.0, 3.0, 2_000_000, "bytes=9-"),
                                      conns={1: "10.199.2.2", 2: "10.199.2.2"})) + "\n")
            r = types.SimpleNamespace(tmp=tmp, out=out)
            prof = pull.Profile(name="capped", rate_bits_per_s=100_000_000, conn_rate_bits_per_s=8_000_000)
            rec = {}
            pull.timeline(r, rec, prof, "", prof)
            self.assertEqual(rec["timeline"]["dir"], "timeline-capped")
            [m] = rec["timeline"]["medians"]
            self.assertEqual((m["host"], m["pulls"], m["duration_s"], m["ranges"], m["most_open"]),
                             ("patched", 1, 4.0, 1, 2))
            for name in ("timeline.json", "timeline.md", "timeline.png"):
                self.assertTrue(os.path.exists(os.path.join(out, "timeline-capped", name)), name)
            md = pull_report.timeline_table({"link": {"profiles": {"capped": rec}}})
            self.assertIn("| capped ([timeline](timeline-capped/timeline.md)) | patched | 1 | 4.00 s | 2 | 1 |", md)
            # no proxy in front of the registry: nothing
            rec2 = {}
            pull.timeline(r, rec2, pull.Profile(name="clean"), "", pull.Profile(name="clean"))
            self.assertEqual(rec2, {})
            self.assertEqual(pull_report.timeline_table({"link": {"profiles": {"clean": rec2}}}), "")
