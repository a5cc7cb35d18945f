"""Units are parsed once, in Python (ab.units): hack/link.sh gets plain
numbers, from the harness and from a person's flags alike."""
import contextlib
import io
import os
import subprocess
import sys
import unittest

from ab import hosts, units
from ab.tests.test_suite import GOOD, load

HACK = os.path.join(os.path.dirname(__file__), "..", "..")


class UnitsTest(unittest.TestCase):
    def test_plain_numbers(self):
        self.assertEqual(units.milliseconds("500us"), 0.5)
        self.assertEqual(units.milliseconds("35ms"), 35)
        self.assertEqual(units.milliseconds("1.5s"), 1500)
        self.assertEqual(units.milliseconds("2m"), 120000)
        self.assertEqual(units.milliseconds("300us"), 0.3)  # not 0.30000000000000004
        self.assertEqual(units.bits_per_second("100mbit"), 100_000_000)
        self.assertEqual(units.bits_per_second("1.5Kbit"), 1500)
        self.assertEqual(units.percentage("0.5%"), 0.5)
        self.assertEqual(units.percentage("7%"), 7)
        for fn, text, msg in ((units.milliseconds, "500 us", "bad duration '500 us'"),
                              (units.bits_per_second, "fast", "bad rate 'fast'"),
                              (units.percentage, "120%", "bad percentage '120%'")):
            with self.assertRaisesRegex(ValueError, msg):
                fn(text)

    def test_plain_text(self):
        self.assertEqual([units.plain(x) for x in (0.5, 35.0, 0, 0.0, 1e8, 100_000_000, 1e-05, 0.3)],
                         ["0.5", "35", "0", "0", "100000000", "100000000", "0.00001", "0.3"])

    def test_the_old_forms_are_unchanged(self):
        self.assertEqual((units.duration("35ms"), units.rate("100mbit"), units.percent("0.5%")), (0.035, 1e8, 0.005))


class LinkArgumentsTest(unittest.TestCase):
    """What hack/link.sh gets for a [[profile]]."""

    def args(self, profile):
        s = load(GOOD.replace('rtt = "140ms"\nrate = "100mbit"\nloss = "0%"', profile))
        args = hosts.link_args("stock", s.profiles[0], "tun")
        self.assertEqual(args[:3], [os.path.join(hosts.HACK, "link.sh"), "up", "stock"])
        return dict(zip(args[3::2], args[4::2]))

    def test_500us_reaches_the_link_as_half_a_millisecond(self):
        # The bug this fixes: link.sh took "500us" for 500 seconds (500000 ms).
        a = self.args('rtt = "500us"\nrate = "100mbit"\nloss = "0.5%"\njitter = "1.5ms"\nqueue = 50')
        self.assertEqual(a, {"--rtt-ms": "0.5", "--rate-bits-per-s": "100000000", "--loss-pct": "0.5",
                             "--jitter-ms": "1.5", "--queue": "50", "--congestion": "cubic", "--backend": "tun"})

    def test_defaults(self):
        # no rate: the link is as fast as the veth goes, as before
        a = self.args('rtt = "140ms"')
        # and cubic, whatever the machine's default: what loss costs a
        # stream must not depend on the machine
        self.assertEqual(a, {"--rtt-ms": "140", "--loss-pct": "0", "--jitter-ms": "0", "--queue": "1000",
                             "--congestion": "cubic", "--backend": "tun"})

    def test_congestion(self):
        self.assertEqual(self.args('rtt = "140ms"\ncongestion = "bbr"')["--congestion"], "bbr")

    def test_every_value_is_a_plain_number(self):
        a = self.args('rtt = "0.2s"\nrate = "2gbit"\nloss = "10%"\njitter = "250us"')
        for flag in ("--rtt-ms", "--rate-bits-per-s", "--loss-pct", "--jitter-ms", "--queue"):
            self.assertRegex(a[flag], r"^[0-9]+(\.[0-9]+)?$", flag)  # what link.sh's number() takes
        self.assertEqual((a["--rtt-ms"], a["--rate-bits-per-s"], a["--jitter-ms"]), ("200", "2000000000", "0.25"))


class CommandLineTest(unittest.TestCase):
    """link.sh converts --rtt 500us and the like with `python3 -m ab.units`."""

    def test_converts(self):
        for argv, want in ((["milliseconds", "500us"], "0.5"), (["bits_per_second", "100mbit"], "100000000"),
                           (["percentage", "0.5%"], "0.5")):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(units.main(argv), 0)
            self.assertEqual(out.getvalue(), want + "\n")

    def test_refuses_with_the_suites_message(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(units.main(["bits_per_second", "fast"]), 2)
            self.assertEqual(units.main(["furlongs", "1"]), 2)
        self.assertIn("bad rate 'fast' (want e.g. 100mbit, 20mbit)", err.getvalue())

    def test_as_link_sh_runs_it(self):
        p = subprocess.run([sys.executable, "-m", "ab.units", "milliseconds", "500us"], capture_output=True,
                           text=True, env=dict(os.environ, PYTHONPATH=os.path.abspath(HACK)))
        self.assertEqual((p.returncode, p.stdout), (0, "0.5\n"))


if __name__ == "__main__":
    unittest.main()
