"""Whether a rerun of a deterministic zns suite gives the committed results:
every cell of the committed results.json, by its key (device, seed, half,
reserve, fill, policy, scenario, zones, the cleaner it ran with, and the
geometry a zns suite's cell names), with the same metrics in the rerun,
and no cell in either that the other lacks.

    python3 -m ab.zns_agree COMMITTED RERUN

COMMITTED and RERUN are results directories (results.json, or the
committed results.json.gz). Prints one line, the cells that agree of those
compared and the first few that do not; exits 0 when every cell agrees, 1
when any differs or is missing, 2 on a file it cannot read."""
import gzip
import json
import os
import sys

KEY = ("device", "seed", "half", "reserve", "fill", "policy", "scenario", "zones", "cleaner", "geometry")


def key(e):
    """A cell's key, in KEY's order: its fields, the cleaner of its params,
    and its geometry (a zns suite's cells differ only in it) as text."""
    fields = {f: e.get(f) for f in KEY}
    fields["device"] = e.get("device", "main")
    fields["cleaner"] = (e.get("params") or {}).get("cleaner")
    fields["geometry"] = json.dumps(e.get("geometry"), sort_keys=True)
    return tuple(fields[f] for f in KEY)


def load(d):
    """A results directory's results.json (or .json.gz): its document."""
    for name, opener in (("results.json", open), ("results.json.gz", gzip.open)):
        path = os.path.join(d, name)
        if os.path.exists(path):
            with opener(path, "rt") as f:
                return json.load(f)
    raise FileNotFoundError(f"{d}: no results.json or results.json.gz")


def cells(doc):
    """{key: metrics}; a key given twice is an error (it could not be compared)."""
    out = {}
    for e in doc["results"]:
        k = key(e)
        if k in out:
            raise ValueError(f"two cells with the key {dict(zip(KEY, k))}")
        out[k] = e.get("metrics")
    return out


def compare(a, b):
    """(agreeing, compared, [first differences as text]) of documents a, b."""
    ca, cb = cells(a), cells(b)
    diffs = []
    same = 0
    every = ca.keys() | cb.keys()
    for k in every:
        if k not in cb:
            diffs.append(f"only in the committed run: {dict(zip(KEY, k))}")
        elif k not in ca:
            diffs.append(f"only in the rerun: {dict(zip(KEY, k))}")
        elif ca[k] != cb[k]:
            which = sorted(m for m in ca[k].keys() | cb[k].keys() if ca[k].get(m) != cb[k].get(m))
            diffs.append(f"{dict(zip(KEY, k))}: {', '.join(which)} differ")
        else:
            same += 1
    return same, len(every), sorted(diffs)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print("usage: python3 -m ab.zns_agree COMMITTED RERUN", file=sys.stderr)
        return 2
    try:
        a, b = load(argv[0]), load(argv[1])
        same, n, diffs = compare(a, b)
    except (OSError, ValueError, KeyError) as e:
        print(f"zns_agree: {e}", file=sys.stderr)
        return 2
    print(f"{argv[1]}: {same} of {n} cells as in {argv[0]}")
    for d in diffs[:5]:
        print(f"  {d}")
    if len(diffs) > 5:
        print(f"  ... and {len(diffs) - 5} more")
    return 0 if same == n else 1


if __name__ == "__main__":
    sys.exit(main())
