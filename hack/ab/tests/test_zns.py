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


def checked_replay(test, events, g, policy, chunk=MiB, gc_reserve=2, heads=0):
    """replay(), with the placement's invariants checked after every step."""
    p = zns.MultiLog(g, chunk, gc_reserve, heads) if policy == "multi-log" else zns.PLACEMENTS[policy](g, chunk, gc_reserve)
    for grp in zns.groups(events):
        if grp[0].op == "create":
            p.create_group(grp)
        else:
            p.delete(grp[0])
        test.assertEqual(sum(p.live), sum(sum(x.length for x in im.extents) for im in p.images.values()))
        test.assertEqual(sum(p.live), sum(im.padded for im in p.images.values()))
        for z in p.dev.zones:
            test.assertLessEqual(z.wp, g.zone_capacity)
            test.assertLessEqual(p.live[z.index], z.wp)
        if g.max_open:
            test.assertLessEqual(p.dev.count(zns.OPEN), g.max_open)
        if g.max_active:
            test.assertLessEqual(p.dev.count(zns.OPEN, zns.CLOSED), g.max_active)
        if policy == "zone-aware":
            owner = {}
            for im in p.images.values():
                for z in im.zones:
                    test.assertNotIn(z, owner, "a zone owned by two images")
                    owner[z] = im
            for z in p.dev.zones:
                test.assertLessEqual(len(p.owners[z.index]), 1, f"zone {z.index} mixes containers")
                # between steps every zone is either an image's (finished) or empty
                test.assertIn(z.state, (zns.FULL, zns.EMPTY))
                test.assertEqual(z.state == zns.FULL, z.index in owner)
    return p


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


class DeviceTest(unittest.TestCase):
    def test_writes_at_the_write_pointer_within_capacity(self):
        d = zns.Device(geometry(zone_size=64 * KiB, zone_capacity=48 * KiB, zones=2, max_open=2, max_active=2))
        self.assertEqual(d.append(0, 16 * KiB), 0)
        self.assertEqual(d.append(0, 32 * KiB), 16 * KiB)
        self.assertEqual(d.zones[0].state, zns.FULL)  # at capacity, not at the zone size
        with self.assertRaisesRegex(zns.DeviceError, "full zone"):
            d.append(0, 4 * KiB)
        with self.assertRaisesRegex(zns.DeviceError, "crosses the zone capacity"):
            d.append(1, 52 * KiB)
        with self.assertRaisesRegex(zns.DeviceError, "whole blocks"):
            d.append(1, 100)
        d.reset(0)
        self.assertEqual((d.zones[0].state, d.zones[0].wp, d.resets), (zns.EMPTY, 0, 1))

    def test_open_and_active_limits(self):
        d = zns.Device(geometry(zone_size=64 * KiB, zones=4, max_open=2, max_active=2))
        d.append(0, 4096)
        d.append(1, 4096)
        with self.assertRaisesRegex(zns.DeviceError, "2 active zones"):
            d.append(2, 4096)
        d.finish(0)
        d.append(2, 4096)
        d = zns.Device(geometry(zone_size=64 * KiB, zones=4, max_open=2, max_active=3))
        d.append(0, 4096)
        d.append(1, 4096)
        with self.assertRaisesRegex(zns.DeviceError, "2 open zones"):
            d.append(2, 4096)
        d.close(0)  # closed zones stay active
        d.append(2, 4096)
        with self.assertRaisesRegex(zns.DeviceError, "3 active zones"):
            d.append(3, 4096)
        with self.assertRaisesRegex(zns.DeviceError, "2 open zones"):
            d.append(0, 4096)  # reopening a closed zone needs an open resource
        d.finish(1)
        d.append(0, 4096)
        self.assertEqual((d.peak_open, d.peak_active), (2, 3))

    def test_geometry_problems(self):
        bad = dict(zns.Geometry(zone_capacity=65 * MiB, block=1000, max_open=9, max_active=4).problems())
        self.assertIn("exceeds the zone size", bad["zone_capacity"])
        self.assertIn("power of two", bad["block"])
        self.assertIn("exceed 4 active", bad["max_open"])
        self.assertEqual(zns.Geometry().problems(), [])


# Two containers checkpointed together (1 MiB each, interleaved in 256 KiB
# chunks over 1 MiB zones), then a's deleted: both zones are half live.
HALF_LIVE = [ev(0, "create", "a", "cp0", MiB), ev(0, "create", "b", "cp0", MiB), ev(1, "delete", "a", "cp0"),
             ev(2, "create", "c", "cp0", MiB), ev(3, "create", "d", "cp0", MiB)]
SMALL = dict(zone_size=MiB, zone_capacity=MiB, zones=4, max_open=2, max_active=2)


class SharedLogTest(unittest.TestCase):
    def test_relocates_live_data_of_partly_dead_zones(self):
        g = geometry(**SMALL)
        p = checked_replay(self, HALF_LIVE, g, "shared-log", chunk=256 * KiB, gc_reserve=1)
        # d needs a zone when only the reserve is left: the collector moves
        # b's halves out of zones 0 and 1 (into zone 3) and resets both.
        self.assertEqual(p.relocated_bytes, MiB)
        self.assertEqual(p.host_bytes, 4 * MiB)
        self.assertEqual(p.dev.resets, 2)
        self.assertEqual(p.failures, [])
        self.assertEqual(sorted(x.zone for x in p.images[("b", "cp0")].extents), [3])
        o = zns.replay(HALF_LIVE, g, "shared-log", chunk=256 * KiB, gc_reserve=1)
        self.assertEqual(o.metrics["write_amplification"], 1.25)
        self.assertEqual(o.metrics["mixed_zones_max"], 2)
        self.assertEqual(o.series["relocated_bytes"], [0, 0, 0, MiB])

    def test_full_device_fails_the_create_and_goes_on(self):
        g = geometry(**SMALL)
        es = [ev(0, "create", "a", "cp0", 3 * MiB), ev(1, "create", "b", "cp0", MiB),
              ev(2, "delete", "b", "cp0"), ev(3, "delete", "a", "cp0"), ev(4, "create", "b", "cp1", MiB)]
        o = zns.replay(es, g, "shared-log", gc_reserve=1)
        self.assertEqual([(f.container, f.checkpoint) for f in o.failures], [("b", "cp0")])
        self.assertIn("device full", o.failures[0].reason)
        self.assertEqual(o.metrics["failed"], 1)
        self.assertEqual(o.metrics["stored_bytes"], 4 * MiB)

    def test_generated_trace_under_pressure(self):
        es = zns.generate(zns.TraceParams(containers=["16MiB", "64MiB", "128MiB", "256MiB"], keep=3, rounds=24))
        p = checked_replay(self, es, zns.Geometry(), "shared-log")
        self.assertGreater(p.relocated_bytes, 0)
        self.assertGreater(p.mixed_zones(), 0)
        self.assertEqual(p.dev.peak_open, 1)


class MultiLogTest(unittest.TestCase):
    def test_heads_of_their_own_never_mix_containers(self):
        g = geometry(zones=64)
        es = zns.generate(zns.TraceParams(rounds=24, keep=1))
        p = checked_replay(self, es, g, "multi-log")
        self.assertEqual(p.nheads, 7)  # the open limit of 8, less the collector's head
        self.assertEqual((p.failures, p.relocated_bytes), ([], 0))
        o = zns.replay(es, g, "multi-log")
        self.assertEqual((o.metrics["mixed_zones_max"], o.metrics["write_amplification"]), (0, 1.0))
        self.assertLessEqual(o.metrics["peak_open"], 8)

    def test_relocates_less_than_the_shared_log_under_pressure(self):
        es = zns.generate(zns.TraceParams(containers=["16MiB", "64MiB", "128MiB", "256MiB"], keep=3, rounds=24))
        g = zns.Geometry()
        shared = checked_replay(self, es, g, "shared-log")
        multi = checked_replay(self, es, g, "multi-log")
        self.assertGreater(multi.gc_runs, 0)
        self.assertLess(multi.relocated_bytes, shared.relocated_bytes)
        self.assertLess(multi.mixed_zones(), shared.mixed_zones())

    def test_one_head_interleaves_like_the_shared_log(self):
        g = geometry(**SMALL)
        p = checked_replay(self, HALF_LIVE[:2], g, "multi-log", chunk=256 * KiB, gc_reserve=1, heads=1)
        self.assertEqual(p.mixed_zones(), 2)  # a and b interleaved in zones 0 and 1
        p = checked_replay(self, HALF_LIVE[:2], geometry(**dict(SMALL, max_open=3, max_active=3)), "multi-log",
                           chunk=256 * KiB, gc_reserve=1, heads=2)
        self.assertEqual(p.mixed_zones(), 0)  # a and b at heads of their own

    def test_heads_must_fit_the_open_limit(self):
        g = zns.Geometry()  # max open 8
        self.assertEqual(zns.placement_problems(g, MiB, 2, heads=7), [])
        (k, msg), = zns.placement_problems(g, MiB, 2, heads=8)
        self.assertEqual(k, "heads")
        self.assertIn("0 (as many as the open limit allows) to 7", msg)
        self.assertEqual(zns.max_heads(geometry(max_open=0, max_active=0)), 16)


class ZoneTailTest(unittest.TestCase):
    def test_relocates_nothing_and_rounds_nothing_up(self):
        g = geometry(zones=64)
        es = zns.generate(zns.TraceParams(rounds=24, keep=1))
        p = checked_replay(self, es, g, "zone-tail")
        self.assertEqual((p.failures, p.relocated_bytes, p.gc_runs), ([], 0, 0))
        # every byte written is an image's block-padded byte: no image takes whole zones it does not fill
        self.assertEqual(p.host_bytes, sum(g.padded(e.bytes) for e in es if e.op == "create"))
        self.assertLessEqual(p.dev.peak_open, g.max_open)

    def test_tails_share_a_head_and_go_with_their_images(self):
        g = geometry(zone_size=MiB, zone_capacity=MiB, zones=6, max_open=4, max_active=4)
        es = [ev(0, "create", "a", "cp0", 3 * MiB // 2), ev(1, "create", "a", "cp1", 5 * MiB // 4),
              ev(2, "delete", "a", "cp0")]
        p = checked_replay(self, es[:2], g, "zone-tail", chunk=256 * KiB)
        head = p.heads[0]
        self.assertEqual(p.live[head], 3 * MiB // 4)  # both tails in one head zone
        self.assertEqual(p.dev.count(zns.EMPTY), 3)
        p.delete(es[2])
        self.assertEqual(p.live[head], MiB // 4)  # cp1's tail keeps the head
        self.assertEqual(p.dev.count(zns.EMPTY), 4)  # cp0's own zone reset at once
        self.assertEqual(p.dev.resets, 1)
        p.delete(ev(3, "delete", "a", "cp1"))
        self.assertEqual(p.dev.count(zns.EMPTY), 6)
        self.assertEqual(p.heads, {})

    def test_a_tail_fills_its_head_then_goes_on(self):
        g = geometry(zone_size=MiB, zone_capacity=MiB, zones=6, max_open=4, max_active=4)
        es = [ev(0, "create", "a", "cp0", 3 * MiB // 4), ev(1, "create", "a", "cp1", MiB // 2)]
        p = checked_replay(self, es, g, "zone-tail", chunk=256 * KiB)
        self.assertEqual(sorted(x.length for x in p.images[("a", "cp1")].extents), [MiB // 4, MiB // 4])
        self.assertEqual(p.dev.finished_unwritten, 0)

    def test_scan_geometry_under_pressure(self):
        es = zns.generate(zns.TraceParams(containers=["16MiB", "64MiB", "128MiB", "256MiB"], keep=3, rounds=24))
        p = checked_replay(self, es, zns.Geometry(), "zone-tail")
        self.assertEqual(p.relocated_bytes, 0)
        self.assertLessEqual(p.dev.peak_open, 8)


LOG = """\
time="2026-11-24T10:00:00.100Z" level=info msg="Loading containers: done."
time="2026-11-24T10:00:01.000Z" level=info msg="Checkpoint created" checkpoint=c1 commit=4ms container=aaaaaaaaaaaa1111 dump=1s written=16777216
time="2026-11-24T10:00:01.400Z" level=info msg="Checkpoint created" checkpoint=c1 commit=4ms container=bbbbbbbbbbbb2222 dump=1s written=268435456
time="2026-11-24T10:00:11.000Z" level=info msg="Checkpoint created" checkpoint=c2 container=aaaaaaaaaaaa1111 written=16000000
time="2026-11-24T10:00:21.000Z" level=info msg="Checkpoint created" checkpoint=c1 container=aaaaaaaaaaaa1111 memory=17000000
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

    def test_a_log_without_checkpoints_is_an_error(self):
        with self.assertRaises(zns.TraceError):
            zns.trace_from_log(LOG.splitlines()[:1], keep=3)
        with self.assertRaises(zns.TraceError):
            zns.trace_from_log(['time="x" level=info msg="Checkpoint created" checkpoint=c1'], keep=3)


class OccupancyTest(unittest.TestCase):
    def test_every_zone_at_spread_steps(self):
        es = zns.generate(zns.TraceParams(containers=["16MiB", "64MiB", "128MiB", "256MiB"], keep=3, rounds=48))
        g = zns.Geometry()
        o = zns.replay(es, g, "zone-tail", occupancy=True)
        steps = len(o.series["t_s"])
        self.assertGreater(steps, zns.OCCUPANCY_SAMPLES)
        self.assertEqual(len(o.series["zone_t_s"]), zns.OCCUPANCY_SAMPLES)
        self.assertEqual((o.series["zone_t_s"][0], o.series["zone_t_s"][-1]), (o.series["t_s"][0], o.series["t_s"][-1]))
        for row in o.series["zone_live_pct"]:
            self.assertEqual(len(row), g.zones)
            self.assertTrue(all(-1 <= v <= 100 for v in row))
        # the last state: empty zones are -1, the live bytes add up
        last = o.series["zone_live_pct"][-1]
        self.assertEqual(sum(v == -1 for v in last), g.zones - o.series["used_zones"][-1])
        self.assertAlmostEqual(sum(max(v, 0) for v in last) / 100 * g.zone_capacity, o.series["live_bytes"][-1],
                               delta=g.zones * g.zone_capacity / 200)
        self.assertNotIn("zone_live_pct", zns.replay(es, g, "zone-tail").series)


class ZoneAwareTest(unittest.TestCase):
    def test_whole_deletes_relocate_nothing_and_never_mix(self):
        g = geometry(zones=64)
        es = zns.generate(zns.TraceParams(rounds=24, keep=1))
        p = checked_replay(self, es, g, "zone-aware")
        self.assertEqual(p.failures, [])
        self.assertEqual(p.relocated_bytes, 0)
        o = zns.replay(es, g, "zone-aware")
        self.assertEqual(o.metrics["write_amplification"], 1.0)
        self.assertEqual((o.metrics["mixed_zones_max"], o.metrics["mixed_zones_end"]), (0, 0))
        self.assertEqual(o.metrics["gc_runs"], 0)
        # every deleted image gave back exactly the zones it took
        deleted = [e for e in es if e.op == "delete"]
        zones_of = lambda e: -(-g.padded(e.bytes) // g.zone_capacity)
        created = {e.key: zones_of(e) for e in es if e.op == "create"}
        self.assertEqual(o.metrics["resets"], sum(created[e.key] for e in deleted))

    def test_same_trace_as_the_shared_log(self):
        p = checked_replay(self, HALF_LIVE, geometry(**SMALL), "zone-aware", chunk=256 * KiB)
        self.assertEqual((p.relocated_bytes, p.dev.resets, p.failures), (0, 1, []))
        self.assertEqual([im.zones for im in p.images.values()], [[1], [0], [2]])

    def test_open_limit_holds_concurrent_images_back(self):
        g = geometry(zone_size=MiB, zones=16, max_open=2, max_active=2)
        es = [ev(0, "create", f"c{i}", "cp0", 3 * MiB - 4096) for i in range(5)]
        p = checked_replay(self, es, g, "zone-aware", chunk=256 * KiB)
        self.assertEqual(p.failures, [])
        self.assertEqual((p.dev.peak_open, p.dev.peak_active), (2, 2))
        self.assertEqual(p.dev.finishes, 5)  # each image's last zone, 4 KiB short
        for im in p.images.values():
            self.assertEqual(len(im.zones), 3)
            self.assertEqual([x.zone for x in im.extents], im.zones)  # in order, contiguous

    def test_capacity_below_zone_size(self):
        g = geometry(zone_size=64 * MiB, zone_capacity=48 * MiB, zones=8)
        es = [ev(0, "create", "a", "cp0", 100 * MiB), ev(0, "create", "b", "cp0", 96 * MiB)]
        p = checked_replay(self, es, g, "zone-aware")
        self.assertEqual(len(p.images[("a", "cp0")].zones), 3)  # not the 2 that 64 MiB zones would need
        self.assertEqual(len(p.images[("b", "cp0")].zones), 2)
        self.assertTrue(all(z.wp <= 48 * MiB for z in p.dev.zones))
        o = zns.replay(es, g, "zone-aware")
        self.assertAlmostEqual(o.series["util_used"][-1], 196 / (5 * 48), places=3)
        s = checked_replay(self, es, g, "shared-log")
        self.assertEqual(sorted({x.zone for im in s.images.values() for x in im.extents}), [0, 1, 2, 3, 4])

    def test_not_enough_empty_zones_fails(self):
        g = geometry(**SMALL)
        es = [ev(0, "create", "a", "cp0", 3 * MiB), ev(0, "create", "b", "cp0", 2 * MiB),
              ev(0, "create", "c", "cp0", MiB)]
        o = zns.replay(es, g, "zone-aware")
        self.assertEqual([(f.container, f.reason) for f in o.failures],
                         [("b", "device full: needs 2 empty zones, 1 left")])
        self.assertEqual(o.metrics["failed"], 1)


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
        self.assertEqual((s.kind, s.repetitions, s.flavours, s.needs_hosts), ("zns", 1, {}, False))
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
                         r":22: gc_reserve: want 1 to 7 zones")
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
             .replace("max_active = 4", "max_active = 2"), r":22: gc_reserve: want 1 to 1 zones, got 2 \(zone size 64MiB\)"),
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
            self.assertRegex(progress[0], r"^\[1/12\] replay shared-log on 16MiB zones: relocated ")
            # each entry is the replay of the trace on its own geometry
            events = zns.read_trace(os.path.join(out, "trace.csv"))
            for e in doc["results"]:
                o = zns.replay(events, zns.Geometry(**e["geometry"]), e["policy"], **doc["placement"])
                self.assertEqual(o.metrics, e["metrics"])
            table = report.summary_table(doc).splitlines()
            self.assertEqual(table[0], "| zone size | zones | zone capacity | policy | relocated by GC | "
                                       "write amplification | zone resets | mixed zones (max) | "
                                       "used-zone utilisation (mean) | failed creates | not stored |")
            self.assertEqual(len(table), 2 + 3 * len(zns.POLICIES))
            self.assertTrue(table[2].startswith("| 16MiB | 32 | 12MiB | shared-log | "))
            with open(os.path.join(out, "report.md")) as f:
                md = f.read()
            self.assertIn("![zns-zone-size.png](zns-zone-size.png)", md)
            self.assertIn("## Over time, on 64MiB zones", md)
            self.assertIn("| metric | 16MiB shared-log | 16MiB zone-aware | 16MiB multi-log | 16MiB zone-tail | 32MiB shared-log |", md)
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
