"""Units used in suite files: durations, rates, sizes, percentages."""
import re

_SIZE = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 10**3, "MB": 10**6, "GB": 10**9}
_DUR = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}
_RATE = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def size(text):
    """'512KiB' -> 524288"""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(B|KiB|MiB|GiB|KB|MB|GB)", str(text))
    if not m:
        raise ValueError(f"bad size {text!r} (want e.g. 512KiB, 10MiB)")
    return int(float(m.group(1)) * _SIZE[m.group(2)])


def duration(text):
    """'35ms' -> 0.035"""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms|s|m)", str(text))
    if not m:
        raise ValueError(f"bad duration {text!r} (want e.g. 35ms, 1.5s)")
    return float(m.group(1)) * _DUR[m.group(2)]


def rate(text):
    """'100mbit' -> 1e8 bits/s"""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(kbit|mbit|gbit)", str(text).lower())
    if not m:
        raise ValueError(f"bad rate {text!r} (want e.g. 100mbit, 20mbit)")
    return float(m.group(1)) * _RATE[m.group(2)]


def percent(text):
    """'0.5%' -> 0.005"""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)%", str(text))
    if not m or float(m.group(1)) > 100:
        raise ValueError(f"bad percentage {text!r} (want e.g. 0%, 0.5%)")
    return float(m.group(1)) / 100


def human_size(n):
    for unit, f in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f:
            v = n / f
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{n}B"
