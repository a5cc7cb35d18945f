"""Units are parsed once, in Python (ab.units): hack/hosts/link.sh gets plain
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


def cases():
    """The lines of units-cases.txt: (kind, text, plain or None, Decimal value or None for an error)."""
    from decimal import Decimal
    out = []
    with open(os.path.join(os.path.dirname(units.__file__), "units-cases.txt"), encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            kind, text, plain, value = (c.strip() for c in line.split("|"))
            out.append((kind, "" if text == '""' else text, None if plain == "-" else plain,
                        None if value == "error" else Decimal(value)))
    return out


class CasesTest(unittest.TestCase):
    """units-cases.txt, which hack/hosts/linkemu's parser is tested against too."""

    def test_every_case(self):
        cs = cases()
        self.assertGreater(len(cs), 40)
        self.assertEqual({k for k, *_ in cs}, set(units.UNITS))
        for kind, text, plain, want in cs:
            with self.subTest(kind=kind, text=text, plain=plain):
                if want is None:
                    with self.assertRaises(ValueError):
                        units.parse(kind, text, plain)
                else:
                    self.assertEqual(units.parse(kind, text, plain), want)

    def test_every_unit_has_a_case(self):
        seen = {(k, u) for k, t, p, v in cases() if v is not None
                for u in units.UNITS[k] if t.lower().endswith(u.lower()) or (p == u and t[-1:].isdigit())}
        self.assertEqual(seen, {(k, u) for k, t in units.UNITS.items() for u in t})

    def test_plain_units_of_the_programs(self):
        # what faultreg and mkimage took before as plain numbers, they still take
        self.assertEqual(units.size("1048576", plain=True), 1 << 20)
        self.assertEqual(units.bits_per_second("8000000", plain=True), 8_000_000)
        self.assertEqual(units.duration("3", plain="s"), 3.0)
        self.assertEqual(units.percent("0.5", plain=True), 0.005)
        with self.assertRaisesRegex(ValueError, r"bad size '1048576' \(want e.g. 512KiB, 10MiB\)"):
            units.size("1048576")
        with self.assertRaisesRegex(ValueError, r"bad rate 'x' \(want e.g. 100mbit, 20mbit, or a plain number of bits per second\)"):
            units.rate("x", plain=True)


class ProgramsTest(unittest.TestCase):
    """faultreg.py, mkimage.py and checkpoint-device-rate.sh parse with
    ab.units: the same spellings, and the plain numbers they took before."""

    def load(self, path, name):
        import importlib.util
        spec = importlib.util.spec_from_file_location(name, os.path.join(HACK, path))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    def test_faultreg_sizes_and_rates(self):
        fr = self.load("hosts/faultreg.py", "faultreg")

        class Refused(Exception):
            pass

        class P:
            def error(self, msg):
                raise Refused(msg)
        for text, want in (("1MiB", 1 << 20), ("1048576", 1 << 20), ("3GiB", 3 << 30), ("64KB", 64000), ("64K", None),
                           ("3G", None), ("fast", None)):
            self.assertEqual(fr.parse_size(text), want, text)
        for text, want in (("8mbit", 1e6), ("8Mbit", 1e6), ("8000000", 1e6), ("8000000bit", 1e6), ("", 0)):
            self.assertEqual(fr.parse_rate(P(), text), want, text)
        for text, msg in (("8mbps", "bad rate '8mbps'"), ("0", "above 0")):
            with self.assertRaisesRegex(Refused, msg):
                fr.parse_rate(P(), text)
        self.assertEqual(fr.option("duration", "s")("500ms"), 0.5)
        self.assertEqual(fr.option("duration", "s")("3"), 3.0)
        self.assertEqual(fr.option("size", "B")("1MiB"), 1 << 20)

    def test_faultreg_refuses_naming_the_option(self):
        for args, msg in ((["--min-size", "1M"], "argument --min-size: bad size '1M'"),
                          (["--stall-seconds", "3 s"], "argument --stall-seconds: bad duration '3 s'"),
                          (["--conn-rate", "8mbps"], "--conn-rate: bad rate '8mbps'")):
            p = subprocess.run([sys.executable, os.path.join(HACK, "hosts", "faultreg.py"), "--listen", "127.0.0.1:0",
                                "--upstream", "http://127.0.0.1:1"] + args, capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 2, args)
            self.assertIn(msg, p.stderr)

    def test_mkimage(self):
        mk = self.load("hosts/testimages/mkimage.py", "mkimage")
        self.assertEqual((mk.parse_size("512KiB"), mk.parse_size("1MB"), mk.parse_size("4096")), (512 << 10, 10**6, 4096))
        with self.assertRaisesRegex(ValueError, "bad size"):
            mk.parse_size("10M")
        with self.assertRaisesRegex(ValueError, "bad size"):
            mk.parse_size("10 MiB")  # one spelling everywhere: the number against its unit

    def test_checkpoint_device_rate_uses_the_parser(self):
        with open(os.path.join(HACK, "measure", "checkpoint-device-rate.sh"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("from ab import units", text)
        self.assertNotRegex(text, r"KiB.: 2\*\*10")  # no table of its own


class LinkArgumentsTest(unittest.TestCase):
    """What hack/hosts/link.sh gets for a [[profile]]."""

    def args(self, profile):
        s = load(GOOD.replace('rtt = "140ms"\nrate = "100mbit"\nloss = "0%"', profile))
        args = hosts.link_args("stock", s.profiles[0], "tun")
        self.assertEqual(args[:3], [os.path.join(hosts.HOSTS, "link.sh"), "up", "stock"])
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
