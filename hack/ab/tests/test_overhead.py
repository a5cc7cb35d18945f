"""kind = "overhead" (seeds 002 and 004): the http and pingpong tables,
wrk's output, and the report that puts the seeds' numbers beside ours."""
import os
import shutil
import tempfile
import unittest

from ab import suite
from ab.kinds import overhead
from ab.tests.docs import results_doc, write_report
from ab.tests.test_cpuquota import CPUQUOTA
from ab.tests.test_suite import SuiteErrors, load

OVERHEAD = """
name = "o"
kind = "overhead"
repetitions = 2
workloads = ["http", "pingpong"]

[http]
server = "node"
networks = ["native", "bridge", "host"]
endpoints = ["/network", "/cpu"]
duration = "3s"

[pingpong]
round_trips = 1000
size = "64B"

[flavor.stock]
daemon = {}
"""


class OverheadSuiteTest(SuiteErrors, unittest.TestCase):

    def test_http_and_pingpong_tables(self):
        s = load(OVERHEAD)
        self.assertEqual(s.http.networks, ["native", "bridge", "host"])
        self.assertEqual(s.http.duration_s, 3.0)
        self.assertEqual(s.http.port, 3000)
        # the seed's connections: 400, and 4 for /cpu
        self.assertEqual(s.http.connections, {"/network": 400, "/cpu": 4})
        self.assertEqual((s.pingpong.round_trips, s.pingpong.size), (1000, 64))
        self.assertEqual(s.pingpong.networks, ["native", "bridge", "host"])
        self.assertEqual((s.pingpong.pin, s.pingpong.cpus(2), s.pingpong.cpus(1)), ("split", ("0", "1"), ("0", "0")))

    def test_defaults_when_the_tables_are_left_out(self):
        s = load(OVERHEAD[:OVERHEAD.index("[http]")] + OVERHEAD[OVERHEAD.index("[flavor.stock]"):])
        self.assertEqual(s.http.server, "node")
        self.assertEqual(s.http.endpoints, ["/network", "/disk-io", "/cpu"])
        self.assertEqual(s.pingpong.round_trips, 10000)

    def test_connections_one_number_or_per_endpoint(self):
        s = load(OVERHEAD.replace('duration = "3s"', 'duration = "3s"\nconnections = 64'))
        self.assertEqual(s.http.connections, {"/network": 64, "/cpu": 64})
        s = load(OVERHEAD.replace('duration = "3s"', 'duration = "3s"\nconnections = { "/cpu" = 8 }'))
        self.assertEqual(s.http.connections, {"/network": 400, "/cpu": 8})
        msg = self.error(OVERHEAD.replace('duration = "3s"', 'duration = "3s"\nconnections = { "/disk-io" = 8 }'))
        self.assertRegex(msg, r":12: connections: '/disk-io' is not one of the endpoints")
        msg = self.error(OVERHEAD.replace('duration = "3s"', 'duration = "3s"\nthreads = 8\nconnections = 4'))
        self.assertIn("fewer than the 8 threads", msg)

    def test_errors_name_the_line(self):
        self.assertEditsRefused(OVERHEAD, [
            ('networks = ["native", "bridge", "host"]', 'networks = ["native", "vlan"]',
             r":9: networks: 'vlan' is not one of native, bridge, published, host"),
            ('"/cpu"]', '"/cpu", "/metrics"]', r":10: endpoints: the node server has no '/metrics'"),
            ('duration = "3s"', 'duration = "3 s"', r":11: duration: bad duration '3 s'"),
            ('duration = "3s"', 'duration = "0.5s"', r":11: duration: want at least 1s"),
            ("round_trips = 1000", "round_trips = 0", r":14: round_trips: want a positive integer, got 0"),
            ('size = "64B"', 'size = "2MiB"', r":15: size: want 1B to 1MiB"),
            ('round_trips = 1000', 'round_trips = 1000\nnetworks = ["published"]',
             r":15: networks: 'published' is not one of native, bridge, host"),
            ('round_trips = 1000', 'round_trips = 1000\npin = "cores"',
             r":15: pin: 'cores' is not one of split, same, none"),
            ('round_trips = 1000', 'round_trips = 1000\nmessages = 3',
             r":15: unknown key 'messages' in \[pingpong\]"),
        ])

    def test_nginx_has_no_native_run(self):
        msg = self.error(OVERHEAD.replace('server = "node"', 'server = "nginx"').replace('endpoints = ["/network", "/cpu"]',
                                                                                         'endpoints = ["/1k.txt"]'))
        self.assertRegex(msg, r":9: networks: 'native' needs server = \"node\"")
        s = load(OVERHEAD.replace('server = "node"', 'server = "nginx"')
                 .replace('networks = ["native", "bridge", "host"]', 'networks = ["bridge", "host"]')
                 .replace('endpoints = ["/network", "/cpu"]', 'endpoints = ["/1k.txt"]'))
        self.assertEqual((s.http.port, s.http.connections), (80, {"/1k.txt": 32}))

    def test_a_table_without_its_workload(self):
        msg = self.error(OVERHEAD.replace('workloads = ["http", "pingpong"]', 'workloads = ["http"]'))
        self.assertRegex(msg, r":13: \[pingpong\] configures the pingpong workload, which workloads does not list")

    def test_workload_keys_belong_to_their_kind(self):
        msg = self.error(CPUQUOTA.replace('files = 500', 'files = 500\nworkloads = ["run"]'))
        self.assertIn("workloads belongs to overhead suites, not cpuquota", msg)
        msg = self.error(OVERHEAD.replace('repetitions = 2', 'repetitions = 2\ncpus = [0.5]'))
        self.assertRegex(msg, r":5: cpus belongs to cpuquota suites, not overhead")


WRK = """Running 3s test @ http://127.0.0.1:3000/network
  2 threads and 400 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    23.62ms   40.91ms 348.26ms   95.98%
    Req/Sec    11.81k     4.88k   32.44k    70.00%
  Latency Distribution
     50%  816.00us
     75%   20.52ms
     90%   27.82ms
     99%    1.20s
  70601 requests in 3.02s, 12.66MB read
  Socket errors: connect 0, read 3, write 0, timeout 0
Requests/sec:  23351.57
Transfer/sec:      4.19MB
"""


class ParseTest(unittest.TestCase):
    def test_wrk(self):
        w = overhead.parse_wrk(WRK)
        self.assertEqual((w["rps"], w["requests"]), (23351.57, 70601))
        self.assertAlmostEqual(w["mean_s"], 0.02362)
        self.assertAlmostEqual(w["p50_s"], 0.000816)
        self.assertAlmostEqual(w["p99_s"], 1.2)
        self.assertEqual(w["errors"], "socket errors: connect 0, read 3, write 0, timeout 0")
        self.assertIsNone(overhead.parse_wrk("unable to connect to 127.0.0.1:3000 Connection refused")["rps"])


class OverheadReportTest(unittest.TestCase):
    def doc(self):
        doc = results_doc("overhead", {"http_rps": {"/network": {"native": 5692.10, "published": 6964.68, "host": 7594.72}},
                                "message_passing": {"note": "MPI", "mpi_communication_time": 1.15}})
        # seven repetitions: enough pairs for a test (stats.MIN_PAIRS)
        seven = lambda xs: xs + xs + xs[:1]
        rps = {"native": seven([100.0, 102.0, 98.0]), "bridge": seven([90.0, 91.0, 89.0]),
               "published": seven([50.0, 51.0, 49.0]), "host": seven([99.0, 100.0, 101.0])}
        rtt = {"native": seven([10.0, 10.2, 9.8]), "bridge": seven([12.0, 12.1, 11.9]), "host": seven([10.0, 10.1, 9.9])}
        for f in ("stock", "patched"):
            for pl, xs in rps.items():
                doc["results"].append({"flavor": f, "profile": None, "image": "ab/node", "params": {},
                                       "scenario": "http", "container": pl, "endpoint": "/network",
                                       "times_s": [0.005] * 7, "rps": xs, "latency_mean_s": [0.006] * 7,
                                       "latency_p99_s": [0.05] * 7, "errors": []})
            for pl, xs in rtt.items():
                doc["results"].append({"flavor": f, "profile": None, "image": "ab/pingpong", "params": {},
                                       "scenario": "pingpong", "container": pl, "times_s": [x / 1e6 for x in xs],
                                       "mean_us": [x + 1 for x in xs], "p50_us": xs, "p99_us": [x * 2 for x in xs], "cpus": ["0,1"] * 7,
                                       "round_trips": [5000] * 7, "errors": []})
        return doc

    def test_http_table_puts_the_seed_beside(self):
        d, md = write_report(self, self.doc())
        self.assertIn("## HTTP: native, bridge, published port, host (seed 004)", md)
        # native row: the seed's requests/s; published: ours 0.50 of native, the seed's 1.22
        self.assertRegex(md, r"\| /network \| native \| 100 \| 100 \| 1.00 \[[\d.]+, [\d.]+\] p=1 uncorrected \| 1 \| 1 \| "
                             r"5692 \| 1.00 \|")
        self.assertRegex(md, r"\| /network \| published \| 50\.00 \| 50\.00 \| .* \| 0\.50 \[0\.50, 0\.50\] p=0 uncorrected \| "
                             r"0\.50 \[0\.50, 0\.50\] p=0 uncorrected \| 6965 \| 1\.22 \|")
        self.assertRegex(md, r"\| /network \| bridge \| .* \| - \| - \|")
        self.assertIn("| /network | native | 6.00 / 5.00 / 50.00 | 6.00 / 5.00 / 50.00 |", md)
        self.assertTrue(os.path.getsize(os.path.join(d, "overhead-placements.png")) > 1000)

    def test_pingpong_table(self):
        _, md = write_report(self, self.doc())
        self.assertIn("## TCP ping-pong: message passing (seed 002)", md)
        self.assertIn("exchange a small message 5000 times", md)
        self.assertIn("In each, the server runs on CPU 0 and the client on CPU 1.", md)
        self.assertRegex(md, r"\| bridge \| 13\.0 / 12\.0 / 24\.0 \| 13\.0 / 12\.0 / 24\.0 \| 1\.00 .* \| "
                             r"1\.20 \[1\.19, 1\.21\] p=4e-09 uncorrected \| 1\.20 \[1\.19, 1\.21\] p=4e-09 uncorrected \| 1\.15 \(MPI communication time\) \|")
        self.assertIn("MPI communication time 1.15x bare metal's", md)
        # the summary's unit for round trips
        self.assertIn("| pingpong: bridge | 7 | 0 patched, 0 stock | 12.0 µs (defaults) | 12.0 µs | 1.00 [1.00, 1.00] p=1 level; MDE 1.00x; sign-flip p=1 |", md)


class WrkErrorsTest(unittest.TestCase):
    def test_non_2xx_answers_fail_the_sample(self):
        from ab.tests import test_golden
        fail = set(test_golden.FIXTURES["overhead"]) | {("wrk-non2xx", "patched", "http://127.0.0.1:3000/cpu", 0)}
        saved = test_golden.FIXTURES["overhead"]
        test_golden.FIXTURES["overhead"] = fail
        try:
            doc = test_golden.run("overhead")
        finally:
            test_golden.FIXTURES["overhead"] = saved
        e = next(e for e in doc["results"] if e["flavor"] == "patched" and e["scenario"] == "http"
                 and e["container"] == "native" and e["endpoint"] == "/cpu")
        self.assertEqual(e["failed"], 1)
        self.assertEqual(e["rps"][0], None)  # not in the statistics
        self.assertEqual(e["reps"], [1])
        self.assertIn("wrk: 12 non-2xx answers", e["errors"])


if __name__ == "__main__":
    unittest.main()


class ContainersTest(unittest.TestCase):
    def test_every_container_started_is_removed(self):
        """The golden overhead suite on the pretend machine: every container
        a workload starts detached (cpu's, files', http's servers,
        pingpong's) is removed, also where a sample failed."""
        from ab import runner
        from ab.tests import fakehosts, test_golden
        out = tempfile.mkdtemp(prefix="ab-ov-")
        self.addCleanup(shutil.rmtree, out, True)
        with fakehosts.pretend(test_golden.FIXTURES["overhead"]) as world:
            s = suite.load(os.path.join(test_golden.GOLDEN, "overhead.toml"))
            runner.Runner(s, out).run()
        names = {n for _, n in world.started}
        self.assertEqual(names, {"abov-cpu", "abov-files", "abov-http-bridge", "abov-http-published",
                                 "abov-pp-bridge", "abov-pp-host"})
        self.assertEqual(world.containers, set())
