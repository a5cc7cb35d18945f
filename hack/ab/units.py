"""Units used in suite files: durations, rates, sizes, percentages.

This is the one parser of them: what a script takes from the harness is a
plain number (milliseconds, bits per second, percent; see plain()), and
hack/link.sh converts the flags a person types with units through it:

    python3 -m ab.units milliseconds|bits_per_second|percentage VALUE
"""
import re
import sys
from decimal import Decimal

_SIZE = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 10**3, "MB": 10**6, "GB": 10**9}
_DUR = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}
_DUR_MS = {"us": Decimal("0.001"), "ms": Decimal(1), "s": Decimal(1000), "m": Decimal(60000)}
_RATE = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def size(text):
    """'512KiB' -> 524288"""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(B|KiB|MiB|GiB|KB|MB|GB)", str(text))
    if not m:
        raise ValueError(f"bad size {text!r} (want e.g. 512KiB, 10MiB)")
    return int(float(m.group(1)) * _SIZE[m.group(2)])


def _duration(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms|s|m)", str(text))
    if not m:
        raise ValueError(f"bad duration {text!r} (want e.g. 35ms, 1.5s)")
    return m.group(1), m.group(2)


def duration(text):
    """'35ms' -> 0.035"""
    n, unit = _duration(text)
    return float(n) * _DUR[unit]


def milliseconds(text):
    """'500us' -> 0.5: a duration in milliseconds, computed in decimal."""
    n, unit = _duration(text)
    return float(Decimal(n) * _DUR_MS[unit])


def _rate(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(kbit|mbit|gbit)", str(text).lower())
    if not m:
        raise ValueError(f"bad rate {text!r} (want e.g. 100mbit, 20mbit)")
    return m.group(1), m.group(2)


def rate(text):
    """'100mbit' -> 1e8 bits/s"""
    n, unit = _rate(text)
    return float(n) * _RATE[unit]


def bits_per_second(text):
    """'1.5kbit' -> 1500: a rate in whole bits per second."""
    n, unit = _rate(text)
    return int(Decimal(n) * Decimal(int(_RATE[unit])))


def _percent(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", str(text))
    if not m or float(m.group(1)) > 100:
        raise ValueError(f"bad percentage {text!r} (want e.g. 0%, 0.5%)")
    return m.group(1)


def percent(text):
    """'0.5%' -> 0.005"""
    return float(_percent(text)) / 100


def percentage(text):
    """'0.5%' -> 0.5: percent, as written."""
    return float(_percent(text))


def plain(x):
    """A number as a script takes it: no exponent, no trailing zeros
    (0.5 -> '0.5', 35.0 -> '35', 1e8 -> '100000000')."""
    return format(Decimal(repr(x)).normalize(), "f")


def human_size(n):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            v = n / f
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{n}B"


CONVERSIONS = {"milliseconds": milliseconds, "bits_per_second": bits_per_second, "percentage": percentage}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in CONVERSIONS:
        print(f"usage: python3 -m ab.units {'|'.join(CONVERSIONS)} VALUE", file=sys.stderr)
        return 2
    try:
        print(plain(CONVERSIONS[argv[0]](argv[1])))
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
