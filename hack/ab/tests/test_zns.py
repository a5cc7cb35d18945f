import contextlib
import io
import itertools
import json
import os
import tempfile
import textwrap
import unittest

from ab import report, runner, suite, units, zns

MiB = 1 << 20
KiB = 1 << 10


def ev(t, op, container, checkpoint, size=0):
    return zns.Event(float(t), op, container, checkpoint, size)


def geometry(**kw):
    kw.setdefault("zone_capacity", kw.get("zone_size", zns.Geometry.zone_capacity))
    g = zns.Geometry(**kw)
    assert not g.problems(), g.problems()
    return g


class TraceTest(unittest.TestCase):
    def parse(self, text):
        return zns.parse_trace(io.StringIO(textwrap.dedent(text).lstrip()), "t.csv")

    def error(self, text):
        with self.assertRaises(zns.TraceError) as cm:
            self.parse(text)
        return str(cm.exception)

    GOOD = """
        time_s,op,container,checkpoint,bytes
        0,create,a,cp0,1000
        0,create,b,cp0,2000
        5.5,delete,a,cp0,
        6,delete,b,cp0,0
        6,create,a,cp0,10
    """

    def test_good_trace(self):
        es = self.parse(self.GOOD)
        self.assertEqual([(e.op, e.key, e.bytes, e.line) for e in es][:3],
                         [("create", ("a", "cp0"), 1000, 2), ("create", ("b", "cp0"), 2000, 3),
                          ("delete", ("a", "cp0"), 0, 4)])
        self.assertEqual(len(es), 5)  # a checkpoint may be created again once deleted

    def test_round_trip(self):
        es = zns.generate(zns.TraceParams(rounds=4))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.csv")
            zns.write_trace(path, es)
            back = zns.read_trace(path)
        self.assertEqual([(e.time_s, e.op, e.key, e.bytes) for e in es], [(e.time_s, e.op, e.key, e.bytes) for e in back])

    def test_hint_column(self):
        es = self.parse("""
            time_s,op,container,checkpoint,bytes,hint_s
            0,create,a,cp0,1000,600
            0,create,b,cp0,2000,
            5.5,delete,a,cp0,,
        """)
        self.assertEqual([e.hint for e in es], [600.0, 0.0, 0.0])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.csv")
            zns.write_trace(path, es)
            with open(path) as f:
                self.assertEqual(f.readline().strip(), "time_s,op,container,checkpoint,bytes,hint_s")
            self.assertEqual([e.hint for e in zns.read_trace(path)], [600.0, 0.0, 0.0])
            zns.write_trace(path, [zns.Event(0, "create", "a", "cp0", 1)])  # no hints: no column
            with open(path) as f:
                self.assertEqual(f.readline().strip(), "time_s,op,container,checkpoint,bytes")
        bad = "time_s,op,container,checkpoint,bytes,hint_s\n0,create,a,cp0,1000,{}\n"
        self.assertRegex(self.error(bad.format("-1")), r"t.csv:2: hint_s: want a lifetime in seconds >= 0")
        self.assertRegex(self.error(bad.format("soon")), r"t.csv:2: hint_s: want a lifetime")
        self.assertRegex(self.error(bad.format("inf")), r"t.csv:2: hint_s: want a lifetime")
        self.assertRegex(self.error(bad.format("600") + "1,delete,a,cp0,,5\n"), r"t.csv:3: hint_s: a delete takes no hint")
        self.assertRegex(self.error("time_s,op,container,checkpoint,bytes\n0,create,a,cp0,1,5\n"),
                         r"t.csv:2: want 5 fields")

    def test_bad_header(self):
        self.assertRegex(self.error("time,op,container,checkpoint,bytes\n0,create,a,x,1\n"), r"^t\.csv:1: bad header")
        self.assertRegex(self.error(""), r"^t\.csv:1: empty trace")

    def test_unknown_op(self):
        self.assertRegex(self.error(self.GOOD.replace("5.5,delete", "5.5,remove")), r"^t\.csv:4: unknown op 'remove'")

    def test_delete_of_unknown_checkpoint(self):
        self.assertRegex(self.error(self.GOOD.replace("5.5,delete,a,cp0", "5.5,delete,a,cp9")),
                         r"^t\.csv:4: delete of unknown checkpoint a/cp9")

    def test_duplicate_create(self):
        self.assertRegex(self.error(self.GOOD.replace("0,create,b,cp0", "0,create,a,cp0")),
                         r"^t\.csv:3: create of a/cp0, which already exists")

    def test_negative_and_bad_sizes(self):
        self.assertRegex(self.error(self.GOOD.replace("2000", "-2000")), r"^t\.csv:3: bytes: negative size")
        self.assertRegex(self.error(self.GOOD.replace("2000", "2MiB")), r"^t\.csv:3: bytes: '2MiB' is not")
        self.assertRegex(self.error(self.GOOD.replace("b,cp0,2000", "b,cp0,0")), r"^t\.csv:3: bytes: a create of 0")
        self.assertRegex(self.error(self.GOOD.replace("6,delete,b,cp0,0", "6,delete,b,cp0,7")),
                         r"^t\.csv:5: bytes: a delete takes no size")

    def test_time_going_backwards(self):
        self.assertRegex(self.error(self.GOOD.replace("6,delete", "5,delete")),
                         r"^t\.csv:5: time goes backwards \(5 after 5\.5\)")
        self.assertRegex(self.error(self.GOOD.replace("5.5,", "x,")), r"^t\.csv:4: time_s: 'x' is not a number")

    def test_wrong_field_count(self):
        self.assertRegex(self.error(self.GOOD.replace("0,create,a,cp0,1000", "0,create,a,1000")),
                         r"^t\.csv:2: want 5 fields")

    def test_missing_file(self):
        with self.assertRaises(zns.TraceError) as cm:
            zns.read_trace("/nonexistent/t.csv")
        self.assertIn("/nonexistent/t.csv", str(cm.exception))


class GeneratorTest(unittest.TestCase):
    def test_deterministic_and_seeded(self):
        p = zns.TraceParams(rounds=10)
        self.assertEqual(zns.generate(p), zns.generate(zns.TraceParams(rounds=10)))
        self.assertNotEqual(zns.generate(p), zns.generate(zns.TraceParams(rounds=10, rng_seed=2)))

    def test_together_and_keeps_the_last_k(self):
        p = zns.TraceParams(rounds=12, keep=2, skip=0.3)
        es = zns.generate(p)
        live = {}
        for t, round_ in itertools.groupby(es, key=lambda e: e.time_s):
            round_ = list(round_)
            ops = [e.op for e in round_]
            self.assertEqual(ops, sorted(ops), "a round's creates come first, then its deletes")
            for e in round_:
                kept = live.setdefault(e.container, [])
                if e.op == "create":
                    kept.append(e.checkpoint)
                    mem = units.size(e.container)
                    self.assertTrue(0.95 * mem < e.bytes <= 1.05 * mem + p.overhead)
                else:
                    self.assertEqual(kept.pop(0), e.checkpoint, "the oldest goes first")
            self.assertTrue(all(len(v) <= p.keep for v in live.values()))
        self.assertLess(sum(e.op == "create" for e in es), 12 * len(p.containers))  # some rounds were skipped


class GeometryTest(unittest.TestCase):
    def test_geometry_problems(self):
        bad = dict(zns.Geometry(zone_capacity=65 * MiB, block=1000, max_open=9, max_active=4).problems())
        self.assertIn("exceeds the zone size", bad["zone_capacity"])
        self.assertIn("power of two", bad["block"])
        self.assertIn("exceed 4 active", bad["max_open"])
        self.assertEqual(zns.Geometry().problems(), [])

    def test_heads_must_fit_the_open_limit(self):
        g = zns.Geometry()  # max open 8
        self.assertEqual(zns.placement_problems(g, MiB, 2, heads=7), [])
        (k, msg), = zns.placement_problems(g, MiB, 2, heads=8)
        self.assertEqual(k, "heads")
        self.assertIn("0 (as many as the open limit allows) to 7", msg)
        self.assertEqual(zns.max_heads(geometry(max_open=0, max_active=0)), 16)


# Two containers checkpointed together (1 MiB each, interleaved in 256 KiB
# chunks over 1 MiB zones), then a's deleted: both zones are half live.
HALF_LIVE = [ev(0, "create", "a", "cp0", MiB), ev(0, "create", "b", "cp0", MiB), ev(1, "delete", "a", "cp0"),
             ev(2, "create", "c", "cp0", MiB), ev(3, "create", "d", "cp0", MiB)]
SMALL = dict(zone_size=MiB, zone_capacity=MiB, zones=4, max_open=2, max_active=2)


class ReplayTest(unittest.TestCase):
    """The replay runs hack/zoned/zns-replay (whose own tests, in Go, test the
    placements): what comes back, and how it fails."""

    def test_outcomes_of_every_policy(self):
        g = geometry(**SMALL)
        o = zns.replay(HALF_LIVE, g, "shared-log", chunk=256 * KiB, gc_reserve=1)
        self.assertEqual(o.policy, "shared-log")
        self.assertEqual(o.metrics["write_amplification"], 1.25)
        self.assertEqual(o.metrics["relocated_bytes"], MiB)
        self.assertEqual(o.series["relocated_bytes"], [0, 0, 0, MiB])
        self.assertEqual(list(o.metrics)[:3], ["creates", "deletes", "failed"])
        self.assertEqual(set(zns.SERIES), set(o.series))
        outs = zns.compare(HALF_LIVE, g, chunk=256 * KiB, gc_reserve=1)
        self.assertEqual([x.policy for x in outs], list(zns.POLICIES))
        self.assertEqual(outs[0].metrics, o.metrics)
        pack = outs[zns.POLICIES.index("zone-pack")]
        self.assertEqual((pack.metrics["relocated_bytes"], pack.metrics["failed"]), (0, 0))

    def test_failures_and_occupancy(self):
        g = geometry(**SMALL)
        es = [ev(0, "create", "a", "cp0", 3 * MiB), ev(0, "create", "b", "cp0", 2 * MiB), ev(0, "create", "c", "cp0", MiB)]
        o = zns.replay(es, g, "zone-aware", occupancy=True)
        self.assertEqual([(f.container, f.reason) for f in o.failures], [("b", "device full: needs 2 empty zones, 1 left")])
        self.assertEqual(o.metrics["failed"], 1)
        self.assertEqual(o.series["zone_t_s"], [0])
        self.assertEqual(o.series["zone_live_pct"], [[100, 100, 100, 100]])
        self.assertNotIn("zone_live_pct", zns.replay(es, g, "zone-aware").series)
        entry = o.entry({"chunk": MiB, "gc_reserve": 2, "heads": 0}, g)
        self.assertEqual(entry["errors"], ["0s b/cp0: device full: needs 2 empty zones, 1 left"])
        self.assertEqual(entry["geometry"]["zones"], 4)

    def test_a_replayer_that_fails_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            broken = os.path.join(d, "zns-replay")
            with open(broken, "w") as f:
                f.write("#!/bin/sh\necho 'zns-replay: zone 3: write at 0 is not at its write pointer' >&2\nexit 1\n")
            os.chmod(broken, 0o755)
            saved = zns._replayer
            zns._replayer = broken
            try:
                with self.assertRaises(zns.ReplayError) as cm:
                    zns.replay(HALF_LIVE, geometry(**SMALL), "shared-log")
            finally:
                zns._replayer = saved
        self.assertIn("not at its write pointer", str(cm.exception))


LOG = """\
time="2026-11-24T10:00:00.100Z" level=info msg="Loading containers: done."
time="2026-11-24T10:00:01.000Z" level=info msg="Checkpoint created" checkpoint=c1 commit=4ms container=aaaaaaaaaaaa1111 dump=1s written=16777216
time="2026-11-24T10:00:01.400Z" level=info msg="Checkpoint created" checkpoint=c1 commit=4ms container=bbbbbbbbbbbb2222 dump=1s written=268435456
time="2026-11-24T10:00:11.000Z" level=info msg="Checkpoint created" checkpoint=c2 container=aaaaaaaaaaaa1111 written=16000000
time="2026-11-24T10:00:21.000Z" level=info msg="Checkpoint created" checkpoint=c1 container=aaaaaaaaaaaa1111 memory=17000000
"""


# A patched daemon since 0035: deletes, and the checkpoints removed with
# their container, logged.
LOG_DELETES = """\
time="2026-11-24T10:00:00.100Z" level=info msg="Loading containers: done."
time="2026-11-24T10:00:01.000Z" level=info msg="Checkpoint created" checkpoint=c1 container=aaaaaaaaaaaa1111 written=16777216
time="2026-11-24T10:00:01.400Z" level=info msg="Checkpoint created" checkpoint=c1 container=bbbbbbbbbbbb2222 written=268435456
time="2026-11-24T10:00:11.000Z" level=info msg="Checkpoint created" checkpoint=c2 container=aaaaaaaaaaaa1111 written=16000000
time="2026-11-24T10:00:11.500Z" level=info msg="Checkpoint deleted" bytes=16777216 checkpoint=c1 container=aaaaaaaaaaaa1111
time="2026-11-24T10:00:11.200Z" level=info msg="Checkpoint created" checkpoint=c1 container=aaaaaaaaaaaa1111 written=16500000
time="2026-11-24T10:00:16.000Z" level=info msg="Checkpoint deleted" bytes=268435456 checkpoint=c1 container=bbbbbbbbbbbb2222 container_removed=true
time="2026-11-24T10:00:21.000Z" level=info msg="Checkpoint created" checkpoint=c1 container=aaaaaaaaaaaa1111 memory=17000000
time="2026-11-24T10:00:31.000Z" level=info msg="Checkpoint deleted" checkpoint=c2 container=aaaaaaaaaaaa1111
"""


class TraceFromLogTest(unittest.TestCase):
    def test_creates_groups_and_kept_checkpoints(self):
        es = zns.trace_from_log(LOG.splitlines(), keep=1)
        self.assertEqual([(e.time_s, e.op, e.container, e.checkpoint, e.bytes) for e in es], [
            (0.0, "create", "aaaaaaaaaaaa", "c1", 16777216),
            (0.0, "create", "bbbbbbbbbbbb", "c1", 268435456),  # within a second: together
            (10.0, "create", "aaaaaaaaaaaa", "c2", 16000000),
            (10.0, "delete", "aaaaaaaaaaaa", "c1", 0),
            (20.0, "create", "aaaaaaaaaaaa", "c1+", 17000000),  # the name again: another checkpoint
            (20.0, "delete", "aaaaaaaaaaaa", "c2", 0),
        ])
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.csv")
            zns.write_trace(path, es)
            self.assertEqual(len(zns.read_trace(path)), len(es))  # a valid trace
            log = os.path.join(d, "dockerd.log")
            with open(log, "w") as f:
                f.write(LOG)
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(zns.main(["trace-from-log", log, "--out", path, "--keep", "2"]), 0)
            self.assertEqual(sum(e.op == "delete" for e in zns.read_trace(path)), 1)

    def test_nothing_taken_together_each_create_at_its_own_time(self):
        es = zns.trace_from_log(LOG.splitlines(), keep=1, together_s=0)
        self.assertEqual([(e.time_s, e.op, e.checkpoint) for e in es if e.op == "create"],
                         [(0.0, "create", "c1"), (0.4, "create", "c1"), (10.0, "create", "c2"), (20.0, "create", "c1+")])

    def test_logged_deletes_and_removals_are_the_deletes(self):
        es = zns.trace_from_log(LOG_DELETES.splitlines(), keep=1)
        self.assertEqual([(e.time_s, e.op, e.container, e.checkpoint, e.bytes) for e in es], [
            (0.0, "create", "aaaaaaaaaaaa", "c1", 16777216),
            (0.0, "create", "bbbbbbbbbbbb", "c1", 268435456),
            (10.0, "create", "aaaaaaaaaaaa", "c2", 16000000),
            (10.0, "create", "aaaaaaaaaaaa", "c1+", 16500000),  # c1 lives (another directory): another one
            (10.5, "delete", "aaaaaaaaaaaa", "c1", 0),  # within the group: after its creates
            (15.0, "delete", "bbbbbbbbbbbb", "c1", 0),  # removed with its container
            (20.0, "create", "aaaaaaaaaaaa", "c1", 17000000),  # the name is free again
            (30.0, "delete", "aaaaaaaaaaaa", "c2", 0),
        ])  # nothing made up: c1+ and c1 of aaaa... live on at the end
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.csv")
            zns.write_trace(path, es)
            self.assertEqual(len(zns.read_trace(path)), len(es))  # a valid trace
            log = os.path.join(d, "dockerd.log")
            with open(log, "w") as f:
                f.write(LOG_DELETES)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(zns.main(["trace-from-log", log, "--out", path]), 0)
            self.assertIn("5 creates, 3 deletes", out.getvalue())
            self.assertIn("the log's", out.getvalue())
            self.assertIn("1 of them with their container", out.getvalue())
            with contextlib.redirect_stderr(io.StringIO()), self.assertRaises(SystemExit):
                zns.main(["trace-from-log", log, "--out", path, "--keep", "2"])  # nothing to make up
            with open(log, "w") as f:
                f.write(LOG)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(zns.main(["trace-from-log", log, "--out", path]), 0)
            self.assertIn("made up", out.getvalue())

    def test_a_delete_of_an_unknown_checkpoint_is_an_error_naming_the_line(self):
        lines = LOG.splitlines() + [
            'time="2026-11-24T10:00:30.000Z" level=info msg="Checkpoint deleted" bytes=9 checkpoint=c9 '
            'container=aaaaaaaaaaaa1111']
        with self.assertRaises(zns.TraceError) as cm:
            zns.trace_from_log(lines, keep=1)
        self.assertIn("log line 6: delete of unknown checkpoint aaaaaaaaaaaa/c9", str(cm.exception))
        # Deleted twice: the second is of none.
        lines = LOG_DELETES.splitlines() + LOG_DELETES.splitlines()[-1:]
        with self.assertRaises(zns.TraceError) as cm:
            zns.trace_from_log(lines, keep=1)
        self.assertIn(f"log line {len(lines)}: delete of unknown checkpoint aaaaaaaaaaaa/c2", str(cm.exception))
        with self.assertRaises(zns.TraceError) as cm:
            zns.trace_from_log(LOG.splitlines() + ['time="2026-11-24T10:00:30.000Z" level=info '
                                                   'msg="Checkpoint deleted" checkpoint=c1'], keep=1)
        self.assertIn("log line 6:", str(cm.exception))
        # A time without its zone cannot be ordered with the others.
        lines = LOG_DELETES.splitlines()
        lines[3] = lines[3].replace("11.000Z", "11.000")
        with self.assertRaises(zns.TraceError) as cm:
            zns.trace_from_log(lines, keep=1)
        self.assertIn("log line 4:", str(cm.exception))
        self.assertIn("has no zone", str(cm.exception))

    def test_a_mangled_log_gives_a_valid_trace_or_an_error(self):
        # A log is outside input: lines lost, repeated, reordered or cut
        # give a trace the parser takes, or a TraceError, nothing else.
        import random
        rng = random.Random(7)
        base = LOG_DELETES.splitlines()
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.csv")
            for _ in range(300):
                lines = list(base)
                for _ in range(rng.randint(1, 4)):
                    i = rng.randrange(len(lines))
                    op = rng.choice(("drop", "dup", "swap", "cut", "zone"))
                    if op == "drop" and len(lines) > 1:
                        del lines[i]
                    elif op == "dup":
                        lines.insert(i, lines[i])
                    elif op == "swap":
                        j = rng.randrange(len(lines))
                        lines[i], lines[j] = lines[j], lines[i]
                    elif op == "cut":
                        lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
                    elif op == "zone":
                        lines[i] = lines[i].replace('Z"', '"', 1)
                try:
                    es = zns.trace_from_log(lines, keep=2)
                except zns.TraceError as e:
                    self.assertRegex(str(e), r"^(log line \d+: |no \"Checkpoint created\")")
                    continue
                zns.write_trace(path, es)
                self.assertEqual(len(zns.read_trace(path)), len(es))

    def test_a_log_without_checkpoints_is_an_error(self):
        with self.assertRaises(zns.TraceError):
            zns.trace_from_log(LOG.splitlines()[:1], keep=3)
        with self.assertRaises(zns.TraceError):
            zns.trace_from_log(['time="x" level=info msg="Checkpoint created" checkpoint=c1'], keep=3)


ZNS_SUITE = """
name = "z"
kind = "zns"
repetitions = 1

[trace]
containers = ["16MiB", "64MiB"]
rounds = 6
keep = 2
skip = "20%"

[geometry]
zone_size = "64MiB"
zone_capacity = "48MiB"
zones = 8
max_open = 4
max_active = 4
block = "4KiB"

[placement]
chunk = "1MiB"
gc_reserve = 2
"""

# The same suite scanning three zone sizes on one namespace (line for line:
# zone_size on 13, zone_capacity on 14, namespace on 15).
SCAN_SUITE = ZNS_SUITE.replace('zone_size = "64MiB"\nzone_capacity = "48MiB"\nzones = 8\n',
                               'zone_size = ["16MiB", "32MiB", "64MiB"]\nzone_capacity = "75%"\nnamespace = "512MiB"\n')


class SuiteTest(unittest.TestCase):
    def load(self, text, files=()):
        with tempfile.TemporaryDirectory() as d:
            for name, body in files:
                with open(os.path.join(d, name), "w") as f:
                    f.write(body)
            path = os.path.join(d, "s.toml")
            with open(path, "w") as f:
                f.write(textwrap.dedent(text))
            return suite.load(path)

    def error(self, text, files=()):
        with self.assertRaises(suite.SuiteError) as cm:
            self.load(text, files)
        return str(cm.exception)

    def test_good(self):
        s = self.load(ZNS_SUITE)
        self.assertEqual((s.kind, s.repetitions, s.flavors, s.needs_hosts), ("zns", 1, {}, False))
        self.assertEqual((s.geometry.zone_capacity, s.geometry.zones, s.geometry.block), (48 * MiB, 8, 4096))
        self.assertEqual((s.trace.containers, s.trace.rounds, s.trace.skip), (["16MiB", "64MiB"], 6, 0.2))
        self.assertEqual(s.policies, list(zns.POLICIES))
        self.assertEqual(self.load('name = "z"\nkind = "zns"\n').geometry, zns.Geometry())

    def test_unknown_keys_and_bad_units_name_the_line(self):
        self.assertRegex(self.error(ZNS_SUITE.replace("zones = 8", "zone_count = 8")),
                         r":15: unknown key 'zone_count' in \[geometry\]")
        self.assertRegex(self.error(ZNS_SUITE.replace('zone_capacity = "48MiB"', 'zone_capacity = "48 MiB"')),
                         r":14: zone_capacity: bad size '48 MiB'")
        self.assertRegex(self.error(ZNS_SUITE.replace('zone_capacity = "48MiB"', 'zone_capacity = "96MiB"')),
                         r":14: zone_capacity: capacity 96MiB exceeds the zone size 64MiB")
        self.assertRegex(self.error(ZNS_SUITE.replace("rounds = 6", "round = 6")), r":8: unknown key 'round' in \[trace\]")
        self.assertRegex(self.error(ZNS_SUITE.replace('skip = "20%"', 'skip = "120%"')), r":10: skip: bad percentage")
        self.assertRegex(self.error(ZNS_SUITE.replace("gc_reserve = 2", "gc_reserve = 8")),
                         r":22: gc_reserve: want 0 to 7 zones")
        self.assertRegex(self.error(ZNS_SUITE.replace('chunk = "1MiB"', 'chunk = "1000B"')),
                         r":21: chunk: want a positive multiple of the block size")

    def test_daemon_keys_and_repetitions(self):
        self.assertRegex(self.error(ZNS_SUITE + "\n[flavor.stock]\ndaemon = {}\n"),
                         r":24: flavor belongs to suites that run daemons, not zns")
        self.assertRegex(self.error(ZNS_SUITE.replace("repetitions = 1", "repetitions = 3")),
                         r":4: repetitions: a replay is deterministic, want 1")
        self.assertRegex(self.error(ZNS_SUITE.replace("repetitions = 1", 'policies = ["log"]')),
                         r":4: policies: 'log' is not one of shared-log, zone-aware")

    def test_zns_keys_elsewhere(self):
        pull = 'name = "p"\nkind = "overhead"\n[geometry]\nzones = 4\n[flavor.stock]\ndaemon = {}\n'
        self.assertRegex(self.error(pull), r":3: geometry belongs to zns suites, not overhead")

    def test_trace_file(self):
        text = ZNS_SUITE[:ZNS_SUITE.index("[trace]")] + 'trace = "t.csv"\n' + ZNS_SUITE[ZNS_SUITE.index("[geometry]"):]
        good = "time_s,op,container,checkpoint,bytes\n0,create,a,cp0,100\n"
        s = self.load(text, [("t.csv", good)])
        self.assertTrue(s.trace_file.endswith("t.csv"))
        self.assertIsNone(s.trace)
        msg = self.error(text, [("t.csv", good + "1,delete,a,cp1,\n")])
        self.assertRegex(msg, r"s\.toml:6: trace: .*t\.csv:3: delete of unknown checkpoint a/cp1")
        self.assertRegex(self.error(text), r":6: trace: .*t\.csv: No such file")


    def test_scan_of_zone_sizes(self):
        s = self.load(SCAN_SUITE)
        self.assertEqual([(g.zone_size, g.zone_capacity, g.zones) for g in s.geometries],
                         [(16 * MiB, 12 * MiB, 32), (32 * MiB, 24 * MiB, 16), (64 * MiB, 48 * MiB, 8)])
        self.assertTrue(all((g.max_open, g.max_active, g.block) == (4, 4, 4096) for g in s.geometries))
        self.assertIs(s.geometry, s.geometries[-1])  # the largest zones are the ones plotted over time
        s = self.load(SCAN_SUITE.replace('block = "4KiB"', 'block = "4KiB"\nplot_zone_size = "32MiB"'))
        self.assertIs(s.geometry, s.geometries[1])
        s = self.load(SCAN_SUITE.replace('zone_capacity = "75%"\n', ""))
        self.assertEqual([g.zone_capacity for g in s.geometries], [16 * MiB, 32 * MiB, 64 * MiB])
        s = self.load(SCAN_SUITE.replace('"75%"', '"12MiB"'))  # a size that fits every zone size
        self.assertEqual([g.zone_capacity for g in s.geometries], [12 * MiB] * 3)
        s = self.load(SCAN_SUITE.replace('"75%"', '"33%"'))  # rounded down to whole blocks
        for g in s.geometries:
            self.assertEqual(g.zone_capacity % 4096, 0)
            self.assertTrue(0.33 * g.zone_size - 4096 < g.zone_capacity <= 0.33 * g.zone_size)
        s = self.load(SCAN_SUITE.replace('namespace = "512MiB"', "zones = 8"))  # the zone count held instead
        self.assertEqual([g.zones for g in s.geometries], [8, 8, 8])

    def test_namespace_and_fraction_with_one_zone_size(self):
        s = self.load(ZNS_SUITE.replace("zones = 8", 'namespace = "500MiB"'))  # what does not fill a zone is unused
        self.assertEqual([(g.zone_size, g.zone_capacity, g.zones) for g in s.geometries], [(64 * MiB, 48 * MiB, 7)])
        self.assertIs(s.geometry, s.geometries[0])
        s = self.load(ZNS_SUITE.replace('"48MiB"', '"75%"'))
        self.assertEqual((s.geometry.zone_capacity, s.geometry.zones), (48 * MiB, 8))

    def test_scan_errors_name_the_line(self):
        for text, want in (
            (SCAN_SUITE.replace('"75%"', '"24MiB"'),
             r':14: zone_capacity: 24MiB exceeds the scan\'s zone size 16MiB; .*fraction of it \(e\.g\. "75%"\)'),
            (SCAN_SUITE.replace('"75%"', '"0%"'), r":14: zone_capacity: want a fraction above 0% of the zone size"),
            (SCAN_SUITE.replace('"75%"', '"75"'), r":14: zone_capacity: bad size '75'"),
            (SCAN_SUITE.replace('namespace = "512MiB"', 'namespace = "512MiB"\nzones = 8'),
             r":15: namespace: give zones or namespace, not both"),
            (SCAN_SUITE.replace('namespace = "512MiB"\n', ""), r":13: zone_size: a scan of zone sizes needs namespace"),
            (SCAN_SUITE.replace('"512MiB"', '"32MiB"'), r":15: namespace: 32MiB holds no zone of 64MiB"),
            (SCAN_SUITE.replace('"512MiB"', "512"), r":15: namespace: want a size, got 512"),
            (SCAN_SUITE.replace('["16MiB", "32MiB", "64MiB"]', '["16MiB", "16MiB"]'),
             r":13: zone_size: a size is listed twice"),
            (SCAN_SUITE.replace('["16MiB", "32MiB", "64MiB"]', "[]"), r":13: zone_size: an empty list scans nothing"),
            (SCAN_SUITE.replace('["16MiB", "32MiB", "64MiB"]', '["16MiB", "32 MiB"]'),
             r":13: zone_size: bad size '32 MiB'"),
            (SCAN_SUITE.replace('["16MiB", "32MiB", "64MiB"]', "16"), r":13: zone_size: want a size or a list of sizes"),
            (SCAN_SUITE.replace('"512MiB"', '"192MiB"'),
             r":16: max_open: want 0 \(no limit\) to 3 zones, got 4 \(zone size 64MiB\)"),
            (SCAN_SUITE.replace('"512MiB"', '"128MiB"').replace("max_open = 4", "max_open = 2")
             .replace("max_active = 4", "max_active = 2"), r":22: gc_reserve: want 0 to 1 zones, got 2 \(zone size 64MiB\)"),
            (SCAN_SUITE.replace('block = "4KiB"', 'block = "4KiB"\nplot_zone_size = "8MiB"'),
             r":19: plot_zone_size: 8MiB is not a zone size of the geometry \(16MiB, 32MiB, 64MiB\)"),
            (ZNS_SUITE.replace("zones = 8", 'namespace = "32MiB"'), r":15: namespace: 32MiB holds no zone of 64MiB"),
        ):
            with self.subTest(want=want):
                self.assertRegex(self.error(text), want)


class RunTest(unittest.TestCase):
    def run_suite(self, d, text):
        """Run the zns suite text in directory d and write its report:
        (the results, their directory, what the run printed)."""
        path = os.path.join(d, "z.toml")
        with open(path, "w") as f:
            f.write(text)
        out = os.path.join(d, "out")
        os.makedirs(out)
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertTrue(runner.Runner(suite.load(path), out).run())
        report.write(out)
        return report.load(out), out, err.getvalue()

    def test_run_writes_results_report_and_plots(self):
        with tempfile.TemporaryDirectory() as d:
            doc, out, _ = self.run_suite(d, ZNS_SUITE)
            self.assertEqual([e["policy"] for e in doc["results"]], list(zns.POLICIES))
            self.assertEqual(doc["trace"]["sha256"], zns.trace_digest(os.path.join(out, "trace.csv")))
            self.assertEqual(len(zns.read_trace(os.path.join(out, "trace.csv"))), doc["trace"]["events"])
            for e in doc["results"]:
                self.assertEqual(len(e["series"]["t_s"]), len(e["series"]["util_used"]))
                self.assertIn("relocated_bytes", e["metrics"])
            with open(os.path.join(out, "report.md")) as f:
                md = f.read()
            self.assertIn("| zone-aware | ", md)
            self.assertIn("| policy | host written | relocated by GC | write amplification |", md)
            for png in ("zns-utilisation.png", "zns-relocation.png"):
                self.assertGreater(os.path.getsize(os.path.join(out, png)), 1000)
            self.assertIn("| shared-log |", report.summary_table(doc))
            self.assertEqual([e["geometry"] for e in doc["results"]], [doc["geometry"]] * len(zns.POLICIES))
            self.assertFalse(os.path.exists(os.path.join(out, "zns-zone-size.png")))  # one geometry: no scan plot

    def test_scan_replays_every_geometry_with_every_policy(self):
        with tempfile.TemporaryDirectory() as d:
            doc, out, printed = self.run_suite(d, SCAN_SUITE)
            sizes = (16 * MiB, 32 * MiB, 64 * MiB)
            self.assertEqual([(e["geometry"]["zone_size"], e["policy"]) for e in doc["results"]],
                             [(z, p) for z in sizes for p in zns.POLICIES])
            self.assertEqual([g["zones"] for g in doc["geometries"]], [32, 16, 8])
            self.assertEqual(doc["geometry"]["zone_size"], 64 * MiB)
            progress = [x for x in printed.splitlines() if x.startswith("[")]
            self.assertEqual(len(progress), 3 * len(zns.POLICIES))
            self.assertRegex(progress[0], rf"^\[1/{3 * len(zns.POLICIES)}\] replay shared-log on 16MiB zones: relocated ")
            # each entry is the replay of the trace on its own geometry
            events = zns.read_trace(os.path.join(out, "trace.csv"))
            for e in doc["results"]:
                o = zns.replay(events, zns.Geometry(**e["geometry"]), e["policy"], **doc["placement"])
                self.assertEqual(o.metrics, e["metrics"])
            table = report.summary_table(doc).splitlines()
            self.assertEqual(table[0], "| zone size | zones | zone capacity | policy | relocated by GC | "
                                       "write amplification | zone resets | mixed zones (max) | "
                                       "used-zone utilisation (mean) | failed creates | not stored | wasted |")
            self.assertEqual(len(table), 2 + 3 * len(zns.POLICIES))
            self.assertTrue(table[2].startswith("| 16MiB | 32 | 12MiB | shared-log | "))
            with open(os.path.join(out, "report.md")) as f:
                md = f.read()
            self.assertIn("![zns-zone-size.png](zns-zone-size.png)", md)
            self.assertIn("## Over time, on 64MiB zones", md)
            self.assertIn("| metric | 16MiB shared-log | 16MiB zone-aware | 16MiB multi-log | 16MiB zone-tail | "
                          "16MiB zone-pack | 16MiB hint-log | 16MiB oracle | 16MiB shared-log-idle | 16MiB multi-log-idle | "
                          "16MiB hint-log-idle | 16MiB oracle-idle | 32MiB shared-log |", md)
            for png in ("zns-zone-size.png", "zns-utilisation.png", "zns-relocation.png", "zns-occupancy.png"):
                self.assertGreater(os.path.getsize(os.path.join(out, png)), 1000)


class CommandLineTest(unittest.TestCase):
    def test_gen_trace_then_replay(self):
        with tempfile.TemporaryDirectory() as d:
            trace, js = os.path.join(d, "t.csv"), os.path.join(d, "o.json")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(zns.main(["gen-trace", "--out", trace, "--rounds", "5", "--containers", "16MiB,64MiB"]), 0)
                self.assertEqual(zns.main(["--trace", trace, "--zone-size", "64MiB", "--zone-capacity", "64MiB",
                                           "--zones", "32", "--max-open", "8", "--max-active", "8", "--json", js]), 0)
            self.assertIn("write amplification", out.getvalue())
            with open(js) as f:
                doc = json.load(f)
            self.assertEqual([e["policy"] for e in doc["results"]], list(zns.POLICIES))
            self.assertEqual(doc["geometry"]["zones"], 32)
            with contextlib.redirect_stderr(io.StringIO()) as err:
                self.assertEqual(zns.main(["--trace", os.path.join(d, "missing.csv")]), 2)
            self.assertIn("missing.csv", err.getvalue())


if __name__ == "__main__":
    unittest.main()
