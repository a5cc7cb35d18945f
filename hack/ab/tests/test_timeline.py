"""ab.timeline: a faultreg log's requests, split into pulls per test host,
and where each pull's time went."""
import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

from ab import timeline

T = 1795700000.0


def log(*reqs, conns=None):
    """faultreg log lines for reqs: (conn, start, end, bytes, range[, blob])
    on connections conns {conn: address}; blob "aa" unless given."""
    out = [f"CONN {T - 1:.6f} {c} {a}" for c, a in (conns or {}).items()]
    for c, a, b, n, rng, *blob in reqs:
        path = f"/v2/r/blobs/sha256:{blob[0] if blob else 'aa'}"
        out.append(f"BLOB start {T + a:.6f} {c} 1 {path}")
        out.append(f"SENT {206 if rng else 200} {n} {path} {rng or '-'} {c}")
        out.append(f"BLOB end {T + b:.6f} {c} 0 {path}")
    return out


class TimelineTest(unittest.TestCase):
    def test_hosts_pulls_and_the_time_they_took(self):
        lines = log(
            # patched: its stream, then two ranges beside it
            (1, 0.0, 1.0, 1_000_000, None), (2, 0.5, 1.5, 500_000, "bytes=1-2"), (3, 0.5, 1.5, 500_000, "bytes=3-4"),
            # ctrd, at the same time, one stream
            (4, 0.2, 2.0, 2_000_000, None),
            # patched again, after a quiet 3 s: a second pull
            (5, 4.5, 5.0, 100, None),
            conns={1: "10.199.2.2", 2: "10.199.2.2", 3: "10.199.12.2", 4: "10.199.3.2", 5: "10.199.2.2"})
        reqs = timeline.parse(lines)
        pulls = timeline.pulls(reqs)
        self.assertEqual([(p["host"], len(p["requests"])) for p in pulls],
                         [("patched", 3), ("ctrd", 1), ("patched", 1)])
        r = timeline.summarise(pulls[0], rate=100e6, conn_rate=8e6)
        self.assertEqual((r["duration_s"], r["requests"], r["ranges"], r["bytes"], r["connections"]),
                         (1.5, 3, 2, 2_000_000, 3))
        self.assertEqual((r["most_open"], r["first_range_s"], r["most_open_from_s"], r["most_open_until_s"],
                          r["tail_s"]), (3, 0.5, 0.5, 1.0, 0.5))
        self.assertEqual(r["link_floor_s"], 0.16)
        self.assertEqual(r["cap_floor_s"], round(2_000_000 * 8 / 24e6, 3))
        # the bins hold every byte, and the requests' time open
        b = r["bins"]
        self.assertAlmostEqual(sum(b["goodput_bytes_per_s"]) * b["bin_s"], 2_000_000, delta=10)
        self.assertAlmostEqual(sum(b["open"]) * b["bin_s"], 1.0 + 1.0 + 1.0, places=6)
        self.assertIsNone(timeline.summarise(pulls[1])["first_range_s"])

    def test_a_gap_shorter_than_gap_is_one_pull(self):
        reqs = timeline.parse(log((1, 0.0, 1.0, 10, None), (2, 2.5, 3.0, 10, None, "bb"),
                                  conns={1: "10.199.1.2", 2: "10.199.1.2"}))
        self.assertEqual(len(timeline.pulls(reqs, gap=2.0)), 1)
        self.assertEqual(len(timeline.pulls(reqs, gap=1.0)), 2)

    def test_the_same_image_again_is_the_next_pull(self):
        # stock's two settings pull the image back to back: the config and
        # the layer whole, twice, 0.5 s apart; a range of the layer while
        # nothing is open stays in its pull
        c = {i: "10.199.1.2" for i in range(1, 6)}
        reqs = timeline.parse(log((1, 0.0, 0.1, 10, None, "cf"), (2, 0.1, 5.0, 99, None), (3, 5.2, 5.5, 9, "bytes=1-9"),
                                  (4, 6.0, 6.1, 10, None, "cf"), (5, 6.1, 11.0, 99, None), conns=c))
        self.assertEqual([len(p["requests"]) for p in timeline.pulls(reqs)], [3, 2])

    def test_other_lines_and_unknown_addresses(self):
        lines = ["FAULT short /v2/r/blobs/sha256:aa", "SUMMARY blob_requests=1", "TOKEN 1", ""]
        lines += log((1, 0.0, 1.0, 10, None), conns={1: "192.0.2.7"})
        # a SENT of another path on the connection, and one of a log
        # before connections were named: neither counts
        lines.insert(-1, "SENT 200 99 /v2/r/blobs/sha256:bb - 1")
        lines.append("SENT 200 99 /v2/r/blobs/sha256:aa -")
        [r] = timeline.parse(lines)
        self.assertEqual((r["host"], r["bytes"]), ("192.0.2.7", 10))

    def test_a_malformed_line_is_refused_by_number(self):
        lines = log((1, 0.0, 1.0, 10, None)) + ["BLOB start soon 1 1 /v2/x"]
        with self.assertRaisesRegex(timeline.LogError, rf"line {len(lines)}: not a faultreg log line"):
            timeline.parse(lines)

    def test_cli_writes_json_md_and_png(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "proxy.log")
            with open(path, "w") as f:
                f.write("\n".join(log((1, 0.0, 1.0, 10, None), (2, 5.0, 6.0, 10, None), (3, 9.0, 11.0, 10, None),
                                      conns={1: "10.199.2.2", 2: "10.199.2.2", 3: "10.199.2.2"})) + "\n")
            with redirect_stdout(io.StringIO()):
                self.assertEqual(timeline.main([path, "--out", d, "--rate", "200mbit", "--conn-rate", "12mbit"]), 0)
            with open(os.path.join(d, "timeline.json")) as f:
                doc = json.load(f)
            self.assertEqual(len(doc["pulls"]), 3)
            # bins only for the host's median pull
            self.assertEqual(["bins" in p for p in doc["pulls"]], [False, True, False])
            self.assertTrue(os.path.getsize(os.path.join(d, "timeline.png")) > 1000)
            with open(os.path.join(d, "timeline.md")) as f:
                self.assertIn("| patched | median of 3: #2 | 1.00 s |", f.read())

    def test_cli_refuses_bad_input(self):
        with tempfile.TemporaryDirectory() as d:
            empty = os.path.join(d, "empty.log")
            open(empty, "w").close()
            err = io.StringIO()
            with redirect_stderr(err):
                self.assertEqual(timeline.main([empty]), 2)
            self.assertIn("no blob request in it", err.getvalue())
            with redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as e:
                timeline.main([empty, "--rate", "fast"])
            self.assertEqual(e.exception.code, 2)
            self.assertIn("bad rate 'fast'", err.getvalue())
