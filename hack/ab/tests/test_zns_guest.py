import json
import os
import tempfile
import unittest

from ab import zns, zns_guest

MiB = 1 << 20
ZONE = "  start: 0x{start:09x}, len 0x004000, cap 0x003000, wptr 0x{wp:06x} reset:0 non-seq:0, zcond: {c}({cond}) [type: 2(SEQ_WRITE_REQUIRED)]\n"


def run_dir(d, written_sectors, read_sectors, made=2, conds=("fu", "oi", "em")):
    """A finished run's files: two creates of 3 MiB + 1 byte and 2 MiB, one
    delete, one create refused."""
    creates = [zns.Event(0, "create", "a", "cp0", 3 * MiB + 1), zns.Event(5, "create", "b", "cp0", 2 * MiB)]
    zns.write_trace(os.path.join(d, "guest-trace.csv"), creates[:made] + [zns.Event(9, "delete", "a", "cp0")])
    # a and b asked for at once (issued 0.5), finished in the other order
    ops = ["op\tkind\tcontainer\tcheckpoint\tbytes\toutcome\tseconds\tissued\tsize",
           "2\tcreate\tb\tcp0\t2000000\tok\t2.0\t0.5\t2097152",
           "1\tcreate\ta\tcp0\t3000000\tok\t3.1\t0.5\t3145729",
           "3\tcreate\tc\tcp0\t9000000\tfailed: no room left on the zoned device\t1.0\t4.2\t",
           "4\tdelete\ta\tcp0\t\tok\t0.5\t6.25"]
    with open(os.path.join(d, "ops.tsv"), "w") as f:
        f.write("\n".join(ops) + "\n")
    with open(os.path.join(d, "dockerd.log"), "w") as f:
        for n in (2097152, 3145729)[:made]:
            f.write(f'time="2026-11-27T00:00:01Z" level=info msg="Checkpoint created" checkpoint=cp0 container=x '
                    f'dump=1s written={n} zoned=true\n')
    with open(os.path.join(d, "restores.tsv"), "w") as f:
        f.write("container\tcheckpoint\tbefore\tbelow\tfirst_count\tseconds\nb\tcp0\t300\t900\t340\t4.5\n")
    with open(os.path.join(d, "counters.json"), "w") as f:
        json.dump({"sector_bytes": 512, "trace": {"read_sectors": read_sectors, "written_sectors": written_sectors},
                   "restores": {"read_sectors": 4096, "written_sectors": 0}}, f)
    with open(os.path.join(d, "zones-end.txt"), "w") as f:
        for i, cond in enumerate(conds):
            f.write(ZONE.format(start=i * 0x4000, wp=i * 0x4000 + (0x1000 if cond != "em" else 0), c=1, cond=cond))
    with open(os.path.join(d, "replay.json"), "w") as f:
        json.dump({"results": [{"metrics": {"creates": 2, "failed": 0, "host_bytes": 5 * MiB + 4096,
                                            "relocated_bytes": MiB, "write_amplification": 1.2, "gc_runs": 1,
                                            "resets": 3},
                                "series": {"used_zones": [1, 2, 2]}}]}, f)


class GuestReportTest(unittest.TestCase):
    def test_relocated_bytes_are_what_the_device_wrote_beyond_the_images(self):
        with tempfile.TemporaryDirectory() as d:
            images = 3 * MiB + 4096 + 2 * MiB  # the first padded to the block
            run_dir(d, written_sectors=(images + MiB) // 512, read_sectors=MiB // 512)
            s = zns_guest.report(d)
            self.assertEqual(s["device"]["image_bytes"], images)
            self.assertEqual(s["device"]["relocated_bytes_by_writes"], MiB)
            self.assertEqual(s["device"]["relocated_bytes_by_reads"], MiB)
            self.assertEqual(s["device"]["zones_used_end"], 2)
            self.assertEqual(s["device"]["zones"], 3)
            self.assertEqual((s["creates_made"], s["creates_refused"], s["deletes"], s["restored"]), (2, 1, 1, 1))
            self.assertEqual(s["replay"]["zones_used_end"], 2)
            with open(os.path.join(d, "README.md")) as f:
                readme = f.read()
            self.assertIn("| relocated | 1.00 MiB (written less images); 1.00 MiB (read) | 1.00 MiB |", readme)
            self.assertIn("no room left on the zoned device", readme)
            self.assertEqual(zns_guest.load(os.path.join(d, "summary.json")), s)

    def test_the_trace_of_what_the_daemon_did(self):
        with tempfile.TemporaryDirectory() as d:
            run_dir(d, written_sectors=0, read_sectors=0)
            es = zns_guest.guest_trace(d)
            self.assertEqual([(e.time_s, e.op, e.container, e.bytes) for e in es], [
                (0.5, "create", "a", 3145729),  # asked for together: one time, the trace's order
                (0.5, "create", "b", 2097152),
                (6.25, "delete", "a", 0),
            ])

    def test_a_delete_of_what_was_not_made_is_refused_naming_its_line(self):
        with tempfile.TemporaryDirectory() as d:
            run_dir(d, written_sectors=0, read_sectors=0)
            with open(os.path.join(d, "ops.tsv"), "a") as f:
                f.write("5\tdelete\tc\tcp0\t\tok\t0.5\t7.0\n")
            with self.assertRaisesRegex(zns.TraceError, r"ops.tsv:6: delete of unknown checkpoint c/cp0"):
                zns_guest.guest_trace(d)

    def test_a_log_that_does_not_match_the_operations_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            run_dir(d, written_sectors=0, read_sectors=0, made=1)
            with self.assertRaisesRegex(zns_guest.GuestError, "2 checkpoints made .* but 1"):
                zns_guest.summarize(d)
            with self.assertRaisesRegex(zns_guest.GuestError, "logged 1 checkpoints created .* ops.tsv has 2"):
                zns_guest.guest_trace(d)

    def test_a_zone_report_line_not_understood_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            run_dir(d, written_sectors=0, read_sectors=0)
            with open(os.path.join(d, "zones-end.txt"), "a") as f:
                f.write("blkzone: something else\n")
            with self.assertRaisesRegex(zns_guest.GuestError, "zones-end.txt:4: not a zone"):
                zns_guest.summarize(d)

    def test_a_missing_file_names_the_run(self):
        with tempfile.TemporaryDirectory() as d:
            run_dir(d, written_sectors=0, read_sectors=0)
            os.remove(os.path.join(d, "counters.json"))
            with self.assertRaisesRegex(zns_guest.GuestError, "counters.json is missing"):
                zns_guest.summarize(d)

    def refused_run(self, d, outcome):
        """run_dir with c/cp0 refused by outcome, and its later delete."""
        run_dir(d, written_sectors=0, read_sectors=0)
        with open(os.path.join(d, "ops.tsv")) as f:
            ops = f.read().replace("failed: no room left on the zoned device", outcome)
        with open(os.path.join(d, "ops.tsv"), "w") as f:
            f.write(ops + "5\tdelete\tc\tcp0\t\tnot made\t0\t7.5\n")

    ROOM = ("failed: Error response from daemon: no room left on the zoned device: no space left on device: "
            "9437184 bytes, 0 empty zones and 65536 bytes in heads left")

    def test_the_trace_of_what_was_asked(self):
        with tempfile.TemporaryDirectory() as d:
            self.refused_run(d, self.ROOM)
            self.assertEqual(zns_guest.main(["asked", d]), 0)
            es = zns.read_trace(os.path.join(d, "asked-trace.csv"))
            self.assertEqual([(e.time_s, e.op, e.container, e.bytes) for e in es], [
                (0.5, "create", "a", 3145729),
                (0.5, "create", "b", 2097152),
                (4.2, "create", "c", 9437184),  # refused: the size its refusal names
                (6.25, "delete", "a", 0),
                (7.5, "delete", "c", 0),  # of a checkpoint not made
            ])

    def test_a_create_refused_before_the_freeze_has_the_size_expected(self):
        with tempfile.TemporaryDirectory() as d:
            self.refused_run(d, "failed: Error response from daemon: cannot checkpoint container t-c: not enough "
                                "room for the checkpoint images on the zoned device /dev/nvme0n1: they need about "
                                "9 MiB (the container's anonymous and shared memory), 4 MiB is left with every "
                                "deleted checkpoint's zones reclaimed")
            self.assertEqual([e.bytes for e in zns_guest.asked_trace(d) if e.container == "c"], [9 * MiB, 0])

    def test_a_create_refused_for_another_reason_has_no_size(self):
        with tempfile.TemporaryDirectory() as d:
            self.refused_run(d, "failed: Error response from daemon: criu failed: type NOTIFY errno 0")
            with self.assertRaisesRegex(zns_guest.GuestError, r"ops.tsv:4: create c/cp0 failed for another reason"):
                zns_guest.asked_trace(d)

    def test_the_refusals_of_the_device_beside_the_models(self):
        with tempfile.TemporaryDirectory() as d:
            self.refused_run(d, self.ROOM)
            s = zns_guest.report(d)
            self.assertNotIn("asked", s)  # no replay of what was asked
            with open(os.path.join(d, "replay-asked.json"), "w") as f:
                json.dump({"results": [{"failures": []}]}, f)
            self.assertEqual(zns_guest.report(d)["asked"], {"device": ["c/cp0"], "model": [], "both": []})
            with open(os.path.join(d, "README.md")) as f:
                self.assertIn("1 refused by the device alone (c/cp0).", " ".join(f.read().split()))
            with open(os.path.join(d, "replay-asked.json"), "w") as f:
                json.dump({"results": [{"failures": [{"container": "c", "checkpoint": "cp0"},
                                                     {"container": "b", "checkpoint": "cp0"}]}]}, f)
            s = zns_guest.report(d)
            self.assertEqual(s["asked"], {"device": ["c/cp0"], "model": ["b/cp0", "c/cp0"], "both": ["c/cp0"]})
            with open(os.path.join(d, "README.md")) as f:
                readme = " ".join(f.read().split())
            self.assertIn("the model refuses 2 creates where the device refused 1: 1 the same, "
                          "1 by the model alone (b/cp0).", readme)

    def test_go_durations(self):
        self.assertEqual(zns_guest.go_duration("1.5s"), 1.5)
        self.assertAlmostEqual(zns_guest.go_duration("801.8µs"), 801.8e-6)
        self.assertEqual(zns_guest.go_duration("1m2.5s"), 62.5)
        for bad in ("", "1.5", "s", "1.5sx", "2 s"):
            with self.assertRaises(ValueError, msg=bad):
                zns_guest.go_duration(bad)

    def one_at_a_time(self, d):
        """run_dir with a asked for at 0.5 s and b at 4.0 s, each logged
        with the time it queued and dumped."""
        run_dir(d, written_sectors=0, read_sectors=0)
        with open(os.path.join(d, "ops.tsv")) as f:
            ops = f.read().replace("2\tcreate\tb\tcp0\t2000000\tok\t2.0\t0.5\t", "2\tcreate\tb\tcp0\t2000000\tok\t2.0\t4.0\t")
        with open(os.path.join(d, "ops.tsv"), "w") as f:
            f.write(ops)
        with open(os.path.join(d, "dockerd.log"), "w") as f:
            for dump, queued, n in (("1.25s", '"500ms"', 3145729), ("2s", '"250µs"', 2097152)):
                f.write(f'time="2026-11-27T00:00:01Z" level=info msg="Checkpoint created" checkpoint=cp0 container=x '
                        f'dump={dump} queued={queued} write=1s written={n} zoned=true\n')

    def test_the_trace_of_when_the_daemon_began_and_ended_each_stream(self):
        with tempfile.TemporaryDirectory() as d:
            self.one_at_a_time(d)
            self.assertEqual([(e.time_s, e.op, e.container) for e in zns_guest.begun_trace(d, "begin")], [
                (0.5 + 0.5 + 1.25, "create", "a"), (4.0 + 0.00025 + 2, "create", "b"), (6.25, "delete", "a")])
            # done: the operations' seconds (3.1 and 2.0)
            self.assertEqual(zns_guest.main(["trace", d, "--at", "done"]), 0)
            es = zns.read_trace(os.path.join(d, "guest-trace-done.csv"))
            self.assertEqual([(e.time_s, e.container) for e in es], [(3.6, "a"), (6.0, "b"), (6.25, "a")])

    def test_creates_at_once_have_no_begin_of_their_own(self):
        with tempfile.TemporaryDirectory() as d:
            run_dir(d, written_sectors=0, read_sectors=0)  # a and b asked for at once, logged b first
            with open(os.path.join(d, "dockerd.log")) as f:
                log = f.read().replace("dump=1s", 'dump=1s queued="1ms"')
            with open(os.path.join(d, "dockerd.log"), "w") as f:
                f.write(log)
            with self.assertRaisesRegex(zns_guest.GuestError, "not list its checkpoints in the order of ops.tsv"):
                zns_guest.begun_trace(d, "begin")

    def test_the_replays_by_time_in_the_report(self):
        with tempfile.TemporaryDirectory() as d:
            self.one_at_a_time(d)
            for at, n in (("begin", 2 * MiB), ("done", 3 * MiB)):
                with open(os.path.join(d, f"replay-{at}.json"), "w") as f:
                    json.dump({"results": [{"metrics": {"relocated_bytes": n}, "failures": []}]}, f)
            s = zns_guest.report(d)
            self.assertEqual(s["replay_relocated_by_time"], {"begin": 2 * MiB, "done": 3 * MiB})
            with open(os.path.join(d, "README.md")) as f:
                readme = " ".join(f.read().split())
            self.assertIn("`guest-trace-begin.csv`) the replay relocates 2.00 MiB;", readme)
            self.assertIn("`guest-trace-done.csv`) the replay relocates 3.00 MiB; placed when each was asked for "
                          "1.00 MiB;", readme)

    def test_where_the_device_and_the_replay_part(self):
        with tempfile.TemporaryDirectory() as d:
            self.one_at_a_time(d)  # a (op 1), b (op 2), delete a (op 4); c refused (op 3)
            with open(os.path.join(d, "replay.json")) as f:
                doc = json.load(f)
            doc["results"][0]["series"].update(events=[1, 2, 3], relocated_bytes=[0, MiB, MiB])
            with open(os.path.join(d, "replay.json"), "w") as f:
                json.dump(doc, f)
            rows = ["op\tread_sectors\twritten_sectors", "1\t0\t10", "2\t2048\t20", "3\t2048\t20", "4\t2048\t20"]
            with open(os.path.join(d, "device.tsv"), "w") as f:
                f.write("\n".join(rows) + "\n")
            self.assertEqual(zns_guest.report(d)["parting"], {"op": None, "before": {"device": MiB, "replay": MiB}})
            rows[2] = "2\t4096\t20"  # the device read 2 MiB at b's create
            with open(os.path.join(d, "device.tsv"), "w") as f:
                f.write("\n".join(rows) + "\n")
            s = zns_guest.report(d)
            self.assertEqual(s["parting"], {"op": 2, "kind": "create", "checkpoint": "b/cp0",
                                            "before": {"device": 0, "replay": 0},
                                            "after": {"device": 2 * MiB, "replay": MiB}})
            with open(os.path.join(d, "README.md")) as f:
                self.assertIn("at operation 2 (create b/cp0), before which both had relocated 0.00 MiB; after it "
                              "the device had relocated 2.00 MiB, the replay 1.00 MiB.", " ".join(f.read().split()))

    def test_cut(self):
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "t.csv"), os.path.join(d, "cut.csv")
            zns.write_trace(src, [zns.Event(0, "create", "a", "cp0", MiB), zns.Event(10, "create", "a", "cp1", MiB),
                                  zns.Event(20, "delete", "a", "cp0")])
            self.assertEqual(zns_guest.main(["cut", src, "--until", "10", "--out", out]), 0)
            self.assertEqual([(e.time_s, e.checkpoint) for e in zns.read_trace(out)], [(0, "cp0"), (10, "cp1")])
            self.assertEqual(zns_guest.main(["cut", src, "--until", "-1", "--out", out]), 1)


if __name__ == "__main__":
    unittest.main()
