"""The daemon over a checkpoint trace in the zoned guest, beside the replay of
what it did (hack/zoned/zns-trace-vm.sh).

The guest (hack/zoned/zns-vm/docker-trace.sh) leaves, per run: the trace it ran
(trace.csv), each operation and its outcome (ops.tsv), each restore at the
end (restores.tsv), the namespace's kernel counters over the trace and over
the restores (counters.json), zone reports at the start and the end, the
store's index at the end and the daemon's log. `trace` makes what the daemon
did a trace (guest-trace.csv): each checkpoint made, at the time it was
asked for, of the size its images took, and each delete; creates asked for
at once share a time. hack/zoned/zns-trace-vm.sh replays it on the same
geometry (replay.json), and `report` sets what the device saw beside what
the replay did and writes README.md and summary.json.

What the device saw is the daemon's doing alone: data-root and exec-root
are memory in the guest, so the namespace is written only with checkpoint
images and the live data the placement relocates, and read only by
relocations (and, after the trace, by the restores). The bytes relocated are
therefore measured twice: the bytes read during the trace, and the bytes
written less the images' own (each image's stream padded to the device's
block).

    PYTHONPATH=hack python3 -m ab.zns_guest cut TRACE --until SECONDS --out FILE
    PYTHONPATH=hack python3 -m ab.zns_guest trace DIR
    PYTHONPATH=hack python3 -m ab.zns_guest report DIR
"""
import argparse
import csv
import json
import math
import os
import re
import sys

from . import zns

MiB = 1 << 20
BLOCK = 4096  # the guest namespace's logical block (hack/zoned/zns-vm.sh's ZNS_VM_LBS)
CREATED = re.compile(r'msg="Checkpoint created" .*\bwritten=(\d+)')
ZONE_LINE = re.compile(r"start: 0x([0-9a-f]+), len 0x([0-9a-f]+), cap 0x([0-9a-f]+), wptr 0x([0-9a-f]+) .*zcond: *[0-9]+\(([a-z]+)\)")


class GuestError(Exception):
    pass


def cut(events, until_s):
    """The trace's operations up to until_s (inclusive)."""
    return [e for e in events if e.time_s <= until_s]


def zones(path):
    """[(cond, written bytes)] per zone of a blkzone report (512-byte
    sectors); every line must be a zone's."""
    out = []
    with open(path) as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            m = ZONE_LINE.search(line)
            if not m:
                raise GuestError(f"{path}:{no}: not a zone of a blkzone report: {line.strip()!r}")
            start, _, _, wp, cond = m.groups()
            out.append((cond, (int(wp, 16) - int(start, 16)) * 512 if cond != "fu" else None))
    return out


def table(path):
    """Rows of a TSV with a header, as dicts, each with its line number
    ("line")."""
    with open(path, newline="") as f:
        rows = csv.DictReader(f, delimiter="\t")
        return [dict(r, line=rows.line_num) for r in rows]


def load(path):
    with open(path) as f:
        return json.load(f)


def padded(n, block=BLOCK):
    return math.ceil(n / block) * block


def guest_trace(d):
    """[zns.Event] of what the daemon did, from the run's ops.tsv, checked
    against its log: every checkpoint made is logged as created, with the
    bytes its marker has."""
    ops = table(_path(d, "ops.tsv"))
    if ops and not {"issued", "size"} <= set(ops[0]):
        raise GuestError(f"{d}/ops.tsv has no issued and size columns (a run before they were recorded)")
    done = sorted((o for o in ops if o["outcome"] == "ok"), key=lambda o: (float(o["issued"]), int(o["op"])))
    events = [zns.Event(float(o["issued"]), o["kind"], o["container"], o["checkpoint"],
                        int(o["size"]) if o["kind"] == "create" else 0, line=o["line"]) for o in done]
    with open(_path(d, "dockerd.log")) as f:
        logged = sorted(int(m.group(1)) for m in map(CREATED.search, f) if m)
    made = sorted(e.bytes for e in events if e.op == "create")
    if logged != made:
        raise GuestError(f"{d}: the daemon logged {len(logged)} checkpoints created ({sum(logged)} bytes), "
                         f"ops.tsv has {len(made)} made ({sum(made)} bytes)")
    # the trace's own rules: no delete of what was not made, no time going
    # back
    return zns.check_order(events, path=f"{d}/ops.tsv")


def _path(d, name):
    p = os.path.join(d, name)
    if not os.path.exists(p):
        raise GuestError(f"{p} is missing: not a finished run of hack/zoned/zns-trace-vm.sh")
    return p


def summarize(d):
    """What the device saw and what the replay did, from the run's files in d."""
    def path(name):
        return _path(d, name)

    counters = load(path("counters.json"))
    ops = table(path("ops.tsv"))
    restores = table(path("restores.tsv"))
    guest = zns.read_trace(path("guest-trace.csv"))
    replay = load(path("replay.json"))["results"][0]
    m = replay["metrics"]
    sector = counters["sector_bytes"]
    creates = [e for e in guest if e.op == "create"]
    images = sum(padded(e.bytes) for e in creates)
    written = counters["trace"]["written_sectors"] * sector
    read = counters["trace"]["read_sectors"] * sector
    end = zones(path("zones-end.txt"))
    made = [o for o in ops if o["kind"] == "create" and o["outcome"] == "ok"]
    refused = [o for o in ops if o["kind"] == "create" and o["outcome"].startswith("failed")]
    if len(made) != len(creates):
        raise GuestError(f"{d}: {len(made)} checkpoints made (ops.tsv) but {len(creates)} in guest-trace.csv")
    return {
        "operations": len(ops),
        "creates_made": len(made),
        "creates_refused": len(refused),
        "refusals": [o["outcome"] for o in refused],
        "deletes": sum(1 for o in ops if o["kind"] == "delete" and o["outcome"] == "ok"),
        "restored": len(restores),
        "restore_seconds_max": max((float(r["seconds"]) for r in restores), default=0.0),
        "device": {
            "image_bytes": images,
            "written_bytes": written,
            "read_bytes": read,
            "relocated_bytes_by_writes": written - images,
            "relocated_bytes_by_reads": read,
            "write_amplification": round(written / images, 4) if images else None,
            "zones_used_end": sum(1 for c, _ in end if c != "em"),
            "zones": len(end),
            "restore_read_bytes": counters["restores"]["read_sectors"] * sector,
        },
        "replay": {
            "creates": m["creates"],
            "failed": m["failed"],
            "host_bytes": m["host_bytes"],
            "relocated_bytes": m["relocated_bytes"],
            "write_amplification": m["write_amplification"],
            "gc_runs": m["gc_runs"],
            "resets": m["resets"],
            "zones_used_end": replay["series"]["used_zones"][-1] if replay["series"]["used_zones"] else 0,
        },
    }


def report(d):
    s = summarize(d)
    with open(os.path.join(d, "summary.json"), "w") as f:
        json.dump(s, f, indent=1)
        f.write("\n")
    dev, rep = s["device"], s["replay"]

    def mib(n):
        return f"{n / MiB:.2f} MiB"

    rows = [
        ("checkpoint images written", mib(dev["image_bytes"]), mib(rep["host_bytes"])),
        ("relocated", f"{mib(dev['relocated_bytes_by_writes'])} (written less images); "
         f"{mib(dev['relocated_bytes_by_reads'])} (read)", mib(rep["relocated_bytes"])),
        ("bytes written in all", mib(dev["written_bytes"]), mib(rep["host_bytes"] + rep["relocated_bytes"])),
        ("write amplification", f"{dev['write_amplification']}", f"{rep['write_amplification']}"),
        ("zones holding data at the end", f"{dev['zones_used_end']} of {dev['zones']}", f"{rep['zones_used_end']}"),
        ("creates refused", f"{s['creates_refused']}", f"{rep['failed']}"),
    ]
    lines = [
        "# The daemon over a trace on an emulated zoned device",
        "",
        f"{s['operations']} operations: {s['creates_made']} checkpoints made, {s['creates_refused']} refused by "
        f"the daemon, {s['deletes']} deleted; at the end every one of the {s['restored']} checkpoints docker "
        f"listed was restored with its memory verified (the longest restore {s['restore_seconds_max']:.1f} s "
        "under TCG), and no zone was leaked at any check.",
        "",
        "The replay is hack/zoned/zns-replay's zone-pack (the daemon's Placer on the daemon's model) on what "
        "the daemon did as a trace (`guest-trace.csv`: each checkpoint it made, at the time it was asked for, "
        "of its images' size, and each delete), same geometry, no reserve.",
        "",
        "| | the daemon, on the device | the replay of its log |",
        "| --- | --- | --- |",
    ] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    if s["refusals"]:
        lines += ["", "Creates the daemon refused:", ""] + [f"- {r}" for r in s["refusals"]]
    lines += [
        "",
        "Files: `trace.csv` (what ran), `ops.tsv`, `restores.tsv`, `counters.json` (the namespace's "
        "/sys/block stat over the trace and over the restores), `zones-start.txt`, `zones-end.txt`, "
        "`index-end.json`, `dockerd.log`, `console.log`, `guest-trace.csv`, `replay.json`, `summary.json`.",
        "",
    ]
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write("\n".join(lines))
    return s


def main(argv=None):
    p = argparse.ArgumentParser(prog="ab.zns_guest", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cut", help="a trace's operations up to a time")
    c.add_argument("trace")
    c.add_argument("--until", type=float, default=math.inf, help="seconds (inclusive)")
    c.add_argument("--out", required=True)
    t = sub.add_parser("trace", help="guest-trace.csv of a run's directory: what the daemon did")
    t.add_argument("dir")
    r = sub.add_parser("report", help="README.md and summary.json of a run's directory")
    r.add_argument("dir")
    a = p.parse_args(argv)
    try:
        if a.cmd == "cut":
            events = cut(zns.read_trace(a.trace), a.until)
            if not any(e.op == "create" for e in events):
                raise GuestError(f"{a.trace}: no create up to {a.until:g} s")
            zns.write_trace(a.out, events)
        elif a.cmd == "trace":
            zns.write_trace(os.path.join(a.dir, "guest-trace.csv"), guest_trace(a.dir))
        else:
            report(a.dir)
    except (GuestError, zns.TraceError, OSError, KeyError, ValueError) as e:
        print(f"error: ab.zns_guest: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
