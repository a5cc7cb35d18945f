"""Units: durations, rates, sizes, percentages.

This is the one parser of them in hack/: suite files, hack/hosts/link.sh's flags
(converted with `python3 -m ab.units`, below), hack/hosts/faultreg.py's options,
hack/hosts/testimages/mkimage.py's layer sizes and hack/measure/checkpoint-device-rate.sh's
caps all go through parse(). hack/hosts/linkemu, a Go program, parses the same
spellings with the same tables (linkemu/units.go); both are tested against
one list of cases, units-cases.txt beside this file.

    size      B KiB MiB GiB (powers of 1024), KB MB GB (of 1000): 512KiB
    rate      bit kbit mbit gbit, any case (bits per second): 100mbit
    duration  us (or µs) ms s m: 35ms, 1.5s
    percent   %: 0.5%

A number is digits with an optional fraction, right against its unit: no
sign, no exponent, no space. Suite files must give the unit; a program that
took plain numbers before keeps taking them (parse(..., plain=UNIT): a bare
number is in UNIT). What a script takes from the harness is a plain number
(milliseconds, bits per second, percent; see plain()):

    python3 -m ab.units milliseconds|bits_per_second|percentage VALUE
"""
import re
import sys
from decimal import Decimal

# kind -> {unit: its value in the kind's base unit (bytes, bits per second,
# seconds, a fraction)}; linkemu/units.go has the same tables
UNITS = {
    "size": {"B": Decimal(1), "KiB": Decimal(1 << 10), "MiB": Decimal(1 << 20), "GiB": Decimal(1 << 30),
             "KB": Decimal(10**3), "MB": Decimal(10**6), "GB": Decimal(10**9)},
    "rate": {"bit": Decimal(1), "kbit": Decimal(10**3), "mbit": Decimal(10**6), "gbit": Decimal(10**9)},
    "duration": {"us": Decimal("0.000001"), "µs": Decimal("0.000001"), "ms": Decimal("0.001"), "s": Decimal(1),
                 "m": Decimal(60)},
    "percent": {"%": Decimal("0.01")},
}
CASELESS = {"rate"}  # 100Mbit is 100mbit
EXAMPLES = {"size": "512KiB, 10MiB", "rate": "100mbit, 20mbit", "duration": "35ms, 1.5s", "percent": "0%, 0.5%"}
WORDS = {"B": "bytes", "bit": "bits per second", "us": "microseconds", "ms": "milliseconds", "s": "seconds",
         "%": "percent"}
_NUMBER = re.compile(r"(\d+(?:\.\d+)?)(.*)", re.S)


def parse(kind, text, plain=None):
    """text (e.g. '512KiB') -> its value in kind's base unit, exactly (a
    Decimal). plain: the unit a bare number is in (None: a bare number is
    refused). ValueError names what was wrong."""
    table = UNITS[kind]
    m = _NUMBER.fullmatch(str(text))
    unit = m.group(2) if m else None
    if m and unit == "" and plain is not None:
        unit = plain
    if unit is not None and kind in CASELESS:
        unit = next((u for u in table if u.lower() == unit.lower()), None)
    if not m or unit not in table:
        raise ValueError(f"bad {'percentage' if kind == 'percent' else kind} {text!r} (want e.g. {EXAMPLES[kind]}"
                         + (f", or a plain number of {WORDS.get(plain, plain)}" if plain else "") + ")")
    v = Decimal(m.group(1)) * table[unit]
    if kind == "percent" and v > 1:
        raise ValueError(f"bad percentage {text!r} (want e.g. {EXAMPLES[kind]}; at most 100%)")
    return v


def size(text, plain=False):
    """'512KiB' -> 524288 (bytes; plain: a bare number is bytes)"""
    return int(parse("size", text, "B" if plain else None))


def duration(text, plain=None):
    """'35ms' -> 0.035 (seconds; plain: the unit of a bare number, e.g. 's')"""
    return float(parse("duration", text, plain))


def milliseconds(text, plain=None):
    """'500us' -> 0.5: a duration in milliseconds, computed in decimal."""
    return float(parse("duration", text, plain) * 1000)


def rate(text, plain=False):
    """'100mbit' -> 1e8 bits/s (plain: a bare number is bits/s)"""
    return float(parse("rate", text, "bit" if plain else None))


def bits_per_second(text, plain=False):
    """'1.5kbit' -> 1500: a rate in whole bits per second."""
    return int(parse("rate", text, "bit" if plain else None))


def percent(text, plain=False):
    """'0.5%' -> 0.005 (plain: a bare number is percent)"""
    return float(parse("percent", text, "%" if plain else None))


def percentage(text, plain=False):
    """'0.5%' -> 0.5: percent, as written."""
    return float(parse("percent", text, "%" if plain else None) * 100)


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
