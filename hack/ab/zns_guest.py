"""The daemon over a checkpoint trace in the zoned guest, beside the replay of
what it did (hack/zoned/zns-trace-vm.sh).

The guest (hack/zoned/zns-vm/docker-trace.sh) leaves, per run: the trace it ran
(trace.csv), each operation and its outcome (ops.tsv), each restore at the
end (restores.tsv), the namespace's kernel counters over the trace and over
the restores (counters.json), zone reports at the start and the end, the
store's index at the end and the daemon's log. `trace` makes what the daemon
did a trace (guest-trace.csv): each checkpoint made, at the time it was
asked for, of the size its images took, and each delete; creates asked for
at once share a time; `trace --at begin|done` moves each create to when the
daemon began or had written its stream. `asked` makes what was asked of it
a trace (asked-trace.csv): the creates it refused too, of the size it
refused, so that a replay of it says whether the model refuses what the
device did. hack/zoned/zns-trace-vm.sh replays them on the same geometry
(replay.json, replay-asked.json, replay-begin.json, replay-done.json), and
`report` sets what the device saw beside what the replays did, and where
the device's reads after each operation (device.tsv) first differ from the
replay's relocation, and writes README.md and summary.json.

What the device saw is the daemon's doing alone: data-root and exec-root
are memory in the guest, so the namespace is written only with checkpoint
images and the live data the placement relocates, and read only by
relocations (and, after the trace, by the restores). The bytes relocated are
therefore measured twice: the bytes read during the trace, and the bytes
written less the images' own (each image's stream padded to the device's
block).

    PYTHONPATH=hack python3 -m ab.zns_guest cut TRACE --until SECONDS --out FILE
    PYTHONPATH=hack python3 -m ab.zns_guest trace DIR [--at asked|begin|done]
    PYTHONPATH=hack python3 -m ab.zns_guest asked DIR
    PYTHONPATH=hack python3 -m ab.zns_guest report DIR
"""
import argparse
import csv
import dataclasses
import json
import math
import os
import re
import sys

from . import zns

MiB = 1 << 20
BLOCK = 4096  # the guest namespace's logical block (hack/zoned/zns-vm.sh's ZNS_VM_LBS)
CREATED = re.compile(r'msg="Checkpoint created" .*\bwritten=(\d+)')
# the placement's refusal names the stream's size (daemon/internal/zoned's
# Placer.squeeze): "no room left on the zoned device: ...: N bytes, N empty
# zones and N bytes in heads left"; the daemon's check before the freeze
# (checkpoint_room.go) the size it expects, to a MiB: "not enough room for
# the checkpoint images on the zoned device D: they need about N MiB"
REFUSED = re.compile(r"no room left on the zoned device: .*?(\d+) bytes, \d+ empty zones and \d+ bytes in heads left")
REFUSED_EARLY = re.compile(r"not enough room for the checkpoint images on the zoned device \S+: they need about (\d+) MiB")
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


GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|h|m|s)")
GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
LOGGED = re.compile(r'msg="Checkpoint created" .*?\bdump="?([0-9.hmnsuµ]+)"? .*?\bqueued="?([0-9.hmnsuµ]+)"? .*?\bwritten=(\d+)')


def go_duration(text):
    """Seconds of a Go duration as time.Duration prints it (1m2.5s, 801.8µs)."""
    parts = GO_DURATION.findall(text)
    if not parts or "".join(v + u for v, u in parts) != text:
        raise ValueError(f"not a Go duration: {text!r}")
    return sum(float(v) * GO_UNITS[u] for v, u in parts)


def begun_trace(d, at):
    """guest_trace with each create moved from when it was asked for to when
    the daemon's store began its stream ("begin": asked for, plus the time
    it queued and dumped, from the daemon's log) or had written it ("done":
    asked for, plus the operation's seconds). The placement's choices depend
    on the time (each container's lifetimes are predicted from its history),
    so at a high fill the replay's relocation moves with when a create is
    placed. Only for a run of one operation at a time (the log's creates in
    the order of ops.tsv's)."""
    if at not in ("begin", "done"):
        raise ValueError(f"at: begin or done, not {at!r}")
    events = guest_trace(d)
    ops = {o["line"]: o for o in table(_path(d, "ops.tsv"))}
    with open(_path(d, "dockerd.log")) as f:
        logged = [(int(m.group(3)), go_duration(m.group(2)) + go_duration(m.group(1)))
                  for m in map(LOGGED.search, f) if m]
    creates = [e for e in events if e.op == "create"]
    if [e.bytes for e in creates] != [w for w, _ in logged]:
        raise GuestError(f"{d}: the daemon's log does not list its checkpoints in the order of ops.tsv "
                         "(a run with creates at once?)")
    shift = {id(e): (b if at == "begin" else float(ops[e.line]["seconds"])) for e, (_, b) in zip(creates, logged)}
    moved = [dataclasses.replace(e, time_s=round(e.time_s + shift.get(id(e), 0.0), 6)) for e in events]
    return zns.check_order(moved, path=f"{d}/ops.tsv")


def asked_trace(d):
    """[zns.Event] of what was asked of the daemon: every create, made or
    refused, of the size the daemon gave it (a made one's marker, a refused
    one's size in the placement's refusal, or the size to a MiB the daemon
    expected where it refused before the freeze), and every delete, also of
    a checkpoint that was refused. Replayed, it says whether the model refuses
    the creates the device refused; a create refused for another reason
    than room (a CRIU error) has no size, and is an error."""
    ops = table(_path(d, "ops.tsv"))
    if ops and not {"issued", "size"} <= set(ops[0]):
        raise GuestError(f"{d}/ops.tsv has no issued and size columns (a run before they were recorded)")
    events = []
    for o in sorted(ops, key=lambda o: (float(o["issued"]), int(o["op"]))):
        size = 0
        if o["kind"] == "create":
            if o["outcome"] == "ok":
                size = int(o["size"])
            else:
                m = REFUSED.search(o["outcome"])
                early = REFUSED_EARLY.search(o["outcome"])
                if m:
                    size = int(m.group(1))
                elif early:
                    size = int(early.group(1)) * MiB  # refused before the freeze: the size expected
                else:
                    raise GuestError(f"{d}/ops.tsv:{o['line']}: create {o['container']}/{o['checkpoint']} "
                                     f"failed for another reason than room: {o['outcome'][:200]!r}")
        elif o["outcome"] not in ("ok", "not made"):
            raise GuestError(f"{d}/ops.tsv:{o['line']}: delete {o['container']}/{o['checkpoint']}: {o['outcome'][:200]!r}")
        events.append(zns.Event(float(o["issued"]), o["kind"], o["container"], o["checkpoint"], size, line=o["line"]))
    return zns.check_order(events, path=f"{d}/ops.tsv")


def refusals(d, ops):
    """The creates the device refused and those the model refused replaying
    what was asked (replay-asked.json), as "container/checkpoint"; None
    where the run has no replay of what was asked."""
    path = os.path.join(d, "replay-asked.json")
    if not os.path.exists(path):
        return None
    device = {f"{o['container']}/{o['checkpoint']}" for o in ops
              if o["kind"] == "create" and o["outcome"].startswith("failed")}
    model = {f"{f['container']}/{f['checkpoint']}" for f in load(path)["results"][0]["failures"]}
    return {"device": sorted(device), "model": sorted(model), "both": sorted(device & model)}


def parting(d, events, series):
    """Where the device and the replay of the daemon's log first relocated
    different bytes: the device's reads after each operation (device.tsv,
    cumulative; during the trace only relocations read) against the
    replay's relocated bytes after each of its steps (a step per event of
    guest-trace.csv, for a run of one operation at a time). None where the
    run has no device.tsv; {"op": None, ...} where they never part."""
    path = os.path.join(d, "device.tsv")
    if not os.path.exists(path):
        return None
    read = {int(r["op"]): int(r["read_sectors"]) * 512 for r in table(path)}
    ops = {o["line"]: o for o in table(_path(d, "ops.tsv"))}
    before = (0, 0)
    for n, reloc in zip(series["events"], series["relocated_bytes"]):
        o = ops[events[n - 1].line]
        dev = read.get(int(o["op"]))
        if dev is None:
            raise GuestError(f"{path}: no row for operation {o['op']}")
        if dev != reloc:
            return {"op": int(o["op"]), "kind": o["kind"], "checkpoint": f"{o['container']}/{o['checkpoint']}",
                    "before": {"device": before[0], "replay": before[1]}, "after": {"device": dev, "replay": reloc}}
        before = (dev, reloc)
    return {"op": None, "before": {"device": before[0], "replay": before[1]}}


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
    out = {
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
    part = parting(d, guest_trace(d), replay["series"]) if os.path.exists(os.path.join(d, "device.tsv")) else None
    if part is not None:
        out["parting"] = part
    asked = refusals(d, ops)
    if asked is not None:
        out["asked"] = asked
    # the replay with each create placed when the daemon began or had
    # written its stream (guest-trace-begin.csv, -done.csv), where run
    timing = {}
    for at in ("begin", "done"):
        path = os.path.join(d, f"replay-{at}.json")
        if os.path.exists(path):
            timing[at] = load(path)["results"][0]["metrics"]["relocated_bytes"]
    if timing:
        out["replay_relocated_by_time"] = timing
    return out


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
    if "asked" in s:
        a = s["asked"]
        only_device = sorted(set(a["device"]) - set(a["model"]))
        only_model = sorted(set(a["model"]) - set(a["device"]))
        if a["device"] or a["model"]:
            n = lambda k: f"{k} create{'' if k == 1 else 's'}"
            verdict = (f"the model refuses {n(len(a['model']))} where the device refused {len(a['device'])}: "
                       f"{len(a['both'])} the same"
                       + (f", {len(only_device)} refused by the device alone ({', '.join(only_device)})"
                          if only_device else "")
                       + (f", {len(only_model)} by the model alone ({', '.join(only_model)})" if only_model else ""))
        else:
            verdict = "the model refuses none, as the device refused none"
        lines += [
            "",
            "The replay of its log places only the checkpoints the daemon made, so it refuses none. Replayed "
            "as asked (`asked-trace.csv`: every create, of the size the daemon gave it, a refused one's from its "
            f"refusal, and every delete; `replay-asked.json`), {verdict}.",
        ]
    if "parting" in s:
        p = s["parting"]
        if p["op"] is None:
            lines += ["", "After every operation the device had read (relocated) the bytes the replay had relocated "
                      "(`device.tsv`)."]
        else:
            lines += ["", f"Where they part (`device.tsv`, the device's reads after each operation): at operation "
                      f"{p['op']} ({p['kind']} {p['checkpoint']}), before which both had relocated "
                      f"{mib(p['before']['device'])}; after it the device had relocated {mib(p['after']['device'])}, "
                      f"the replay {mib(p['after']['replay'])}."]
    if "replay_relocated_by_time" in s:
        t = s["replay_relocated_by_time"]
        when = {"begin": "when the daemon began each stream (asked for, plus its time queued and dumping; "
                         "`guest-trace-begin.csv`)",
                "done": "when the daemon had written each (asked for, plus the operation's time; "
                        "`guest-trace-done.csv`)"}
        lines += ["", "The placement's choices depend on the time (lifetimes are predicted from each container's "
                  "history). Placed " + "; placed ".join(f"{when[at]} the replay relocates {mib(v)}"
                                                          for at, v in t.items())
                  + f"; placed when each was asked for {mib(rep['relocated_bytes'])}; the device relocated "
                  f"{mib(dev['relocated_bytes_by_reads'])}."]
    if s["refusals"]:
        lines += ["", "Creates the daemon refused:", ""] + [f"- {r}" for r in s["refusals"]]
    lines += [
        "",
        "Files: `trace.csv` (what ran), `ops.tsv`, `restores.tsv`, `counters.json` (the namespace's "
        "/sys/block stat over the trace and over the restores), `zones-start.txt`, `zones-end.txt`, "
        "`index-end.json`, `dockerd.log`, `console.log`, `guest-trace.csv`, `replay.json`, `summary.json`"
        + (" and the other traces and replays named above" if ("asked" in s or "replay_relocated_by_time" in s) else "")
        + ".",
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
    t.add_argument("--at", choices=("asked", "begin", "done"), default="asked",
                   help="each create at when it was asked for (guest-trace.csv), or when the daemon began or "
                        "had written its stream (guest-trace-begin.csv, guest-trace-done.csv)")
    k = sub.add_parser("asked", help="asked-trace.csv of a run's directory: what was asked of the daemon")
    k.add_argument("dir")
    r = sub.add_parser("report", help="README.md and summary.json of a run's directory")
    r.add_argument("dir")
    a = p.parse_args(argv)
    try:
        if a.cmd == "cut":
            events = cut(zns.read_trace(a.trace), a.until)
            if not any(e.op == "create" for e in events):
                raise GuestError(f"{a.trace}: no create up to {a.until:g} s")
            zns.write_trace(a.out, events)
        elif a.cmd == "trace" and a.at == "asked":
            zns.write_trace(os.path.join(a.dir, "guest-trace.csv"), guest_trace(a.dir))
        elif a.cmd == "trace":
            zns.write_trace(os.path.join(a.dir, f"guest-trace-{a.at}.csv"), begun_trace(a.dir, a.at))
        elif a.cmd == "asked":
            zns.write_trace(os.path.join(a.dir, "asked-trace.csv"), asked_trace(a.dir))
        else:
            report(a.dir)
    except (GuestError, zns.TraceError, OSError, KeyError, ValueError) as e:
        print(f"error: ab.zns_guest: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
