"""kind = "neighbour": what a checkpoint costs a neighbour on the disk.

A neighbour process (hack/ab/neighbour_io.py) runs on the data-root's disk
from `lead` before a memory holder of `size` is checkpointed with
--leave-running to the checkpoint's end, while the disk's write counters
are sampled (hack/measure/diskstats.py). Its `workload`: "commits", a database's
4 KiB commits, each followed by fdatasync, alternating with 4 KiB O_DIRECT
reads at random offsets; or "reads", 4 KiB O_DIRECT reads at random
offsets of a 2 GiB file of its own and nothing else. Each repetition
first runs the neighbour alone for `idle` (flavor "idle"), then every
variant, the flavors taking turns in the repetition's order. A daemon
option given as a list is a scan: patched at several
checkpoint-write-bandwidth settings in one run.

A cell is one variant: scenario "neighbour", container the holder's size.
Its times are the checkpoint's; what the summary compares is the
neighbour's p99 latency of its workload's operation (WORKLOADS: a commit,
or a read) during it (p99_ms, lower is better), per repetition against
stock's; the section puts every variant's checkpoint time and the
neighbour's p50, p99 and longest operation against the neighbour alone
(table_rows), and the plots show, for the first repetition, the disk's
write rate over time (neighbour-disk.png) and per variant the neighbour's
latency in 100 ms windows beside it, the checkpoint's start and end marked
(neighbour-timeline.png, timeline). The results document's `neighbour`
says which workload ran (without it: "commits")."""
import functools
import json
import os
import runpy
import subprocess
import sys
import time
import types
from dataclasses import dataclass

from .. import hosts, neighbour_io, stats, suite, units
from ..measure import Progress
from ..report import failed, fmt_ratio, keyed, label
from ..results import Cell
from . import Kind
from .checkpoint import Container, cleanup, start_container

KEYS = ("neighbour",)
KEY_FIELDS = ()
SWITCHES = ()
SCANS = True
REPETITIONS = 3
DISKSTATS = os.path.join(hosts.MEASURE, "diskstats.py")
NEIGHBOUR = os.path.join(hosts.HACK, "ab", "neighbour_io.py")

# per workload: the operation whose latency the neighbour's p50, p99 and
# longest are ("op"), the field of its rate per second ("per_s") and the
# report's words for it: the rate's heading ("rate"), what one operation is
# ("what"; {commit}: the bytes each commit writes, {file}: the read file),
# what else the neighbour does ("besides") and the columns its table's rows
# end with ("columns": table_rows' keys)
WORKLOADS = {
    "commits": {"op": "commit", "per_s": "commits_per_s", "rate": "commits/s",
                "what": "a {commit}write and its fdatasync", "besides": "; read latency a 4 KiB O_DIRECT read", "columns": ("read_p99_ms", "per_s")},
    "reads": {"op": "read", "per_s": "reads_per_s", "rate": "reads/s",
              "what": "a 4 KiB O_DIRECT read at a random offset of {file} file written before its first run, its only "
                      "I/O (no writes, no fdatasync)", "besides": "", "columns": ("per_s",)},
}


@dataclass
class Neighbour:
    size: int = 384 << 20  # the memory holder checkpointed
    lead: float = 2.0  # seconds the neighbour runs before the checkpoint
    idle: float = 5.0  # seconds it runs alone, each repetition
    commit: int = 4096  # bytes written by each of its commits
    workload: str = "commits"  # what the neighbour does: WORKLOADS


@dataclass
class Suite(suite.Suite):
    neighbour: Neighbour = None


def validate(v, d, s):
    t = v.typed(d.get("neighbour", {}), dict, ("neighbour",), "a [neighbour] table")
    w = ("neighbour",)
    v.keys(t, w, ("size", "lead", "idle", "commit", "workload"), (), "[neighbour]")
    n = Neighbour()
    if "size" in t:
        n.size = units.size(v.unit(units.size, t["size"], w + ("size",)))
        if n.size < 1 << 20:
            v.fail(w + ("size",), "size: want at least 1MiB")
    if "commit" in t:
        n.commit = units.size(v.unit(units.size, t["commit"], w + ("commit",)))
        if not 512 <= n.commit <= 16 << 20:
            v.fail(w + ("commit",), "commit: want 512B to 16MiB")
    if "workload" in t:
        n.workload = v.typed(t["workload"], str, w + ("workload",), "a string")
        if n.workload not in WORKLOADS:
            v.fail(w + ("workload",), f"workload: '{n.workload}' is not one of {', '.join(WORKLOADS)}")
        if n.workload != "commits" and "commit" in t:
            v.fail(w + ("commit",), f"commit: the {n.workload} workload makes no commits")
    n.lead = v.seconds(t, w, "lead", n.lead, 0.5)
    n.idle = v.seconds(t, w, "idle", n.idle, 1.0)
    s.neighbour = n


def refuse(v, d, kind):
    if "neighbour" in d:
        v.fail(("neighbour",), f"[neighbour] belongs to neighbour suites, not {kind}")


# --- the run ----------------------------------------------------------------

@functools.cache
def diskstats():
    """DISKSTATS's functions (read, disk, worst_window): the disk counters'
    script, which is not in the ab package (the shell measurements run it
    too), run as a script whose main is not called."""
    return types.SimpleNamespace(**runpy.run_path(DISKSTATS, run_name="diskstats"))


class Sampler:
    """The disk's write counters, sampled into a file until stopped."""

    def __init__(self, dev, path):
        self.path = path
        self.p = subprocess.Popen([sys.executable, DISKSTATS, "sample", dev, path])

    def stop(self):
        hosts.stop_process(self.p)
        return diskstats().read(self.path)


def neighbour_run(workdir, out, seconds=None, during=None, commit=4096, workload="commits"):
    """Run the neighbour (workload; commits of commit bytes): for seconds,
    or around during() (lead first). Returns (its results, what during
    returned, when during started and ended) or raises HostError. Its
    first run in workdir writes its read file there."""
    p = subprocess.Popen([sys.executable, NEIGHBOUR, workdir, out, str(commit), "--workload", workload,
                          "--read-file", str(neighbour_io.READ_FILE[workload])], stdout=subprocess.PIPE, text=True)
    try:
        if p.stdout.readline().strip() != "ready":
            raise hosts.HostError("the neighbour did not start")
        res, c0, c1 = None, None, None
        if during is None:
            time.sleep(seconds)
        else:
            time.sleep(during[0])
            c0 = time.time()
            res = during[1]()
            c1 = time.time()
    finally:
        hosts.stop_process(p, timeout=30)
        p.stdout.close()
    with open(out) as f:
        return json.load(f), res, c0, c1


def run(r):
    s, n = r.s, r.s.neighbour
    variants = [(f, p) for f in s.flavors for p in s.flavors[f].variants()]
    prog = Progress(s.repetitions * (len(variants) + 1))
    dev = diskstats().disk(hosts.AB_VAR)
    r.results.doc["disk"] = dev
    r.results.doc["neighbour"] = {"workload": n.workload, "read_file_bytes": neighbour_io.READ_FILE[n.workload]}
    op = WORKLOADS[n.workload]["op"]
    work = os.path.join(hosts.AB_VAR, "neighbour")
    holder = Container(name=f"{n.size >> 20}MiB", memory=n.size)
    try:
        # in the finally's reach: the neighbour's files, its read file
        # among them (2 GiB for reads), go whatever ends the run
        os.makedirs(work, exist_ok=True)
        for rep in range(s.repetitions):
            out = os.path.join(r.tmp, "neighbour.json")
            nb, _, _, _ = neighbour_run(work, out, seconds=n.idle, commit=n.commit, workload=n.workload)
            r.results.add(Cell("idle", scenario="neighbour", container="idle"), nb["runtime_s"], None, rep=rep,
                          position=0, **fields(nb, None, series=rep == 0, workload=n.workload))
            prog.step(f"neighbour idle rep {rep + 1}: {op} p99 {nb[op]['p99_ms']:.2f} ms")
            # after the neighbour alone, the variants in the repetition's order
            for pos, (f, params) in enumerate(r.interleave(variants, rep), 1):
                d = r.daemons[f]
                d.apply(params)
                cell = Cell(f, image="ab/memholder", params=params, scenario="neighbour", container=holder.name)
                name = f"abnb-{holder.name}"
                try:
                    start_container(d, holder, name)
                    hosts.sh("sync")
                    sampler = Sampler(dev, os.path.join(r.tmp, "disk.txt"))
                    try:
                        nb, (t, err), c0, c1 = neighbour_run(
                            work, out, during=(n.lead, lambda: checkpoint(d, name, f"cp{rep}", s.sample_timeout)),
                            commit=n.commit, workload=n.workload)
                        # the disk's worst second needs a second of samples
                        # from the checkpoint's start, however short it was
                        time.sleep(max(0.0, c0 + 1.3 - time.time()))
                    finally:
                        rows = sampler.stop()
                    # A checkpoint that failed wrote little or nothing: the
                    # neighbour beside it is not a neighbour beside a
                    # checkpoint, and its values would read as a quiet one.
                    # The repetition is a failure, with no values.
                    extra = fields(nb if t is not None else None, rows if t is not None else None, c0, c1,
                                   series=rep == 0, workload=n.workload)
                except hosts.HostError as e:
                    t, err, extra = None, str(e)[:300], fields(None, None, workload=n.workload)
                finally:
                    cleanup(d, [name])
                r.results.add(cell, t, err, rep=rep, position=pos, **extra)
                prog.step(f"neighbour {f} {label(params)} rep {rep + 1}: "
                          + (f"checkpoint {t:.2f}s, {op} p99 {extra['p99_ms']:.2f} ms" if t is not None
                             else f"FAILED {err}"))
    finally:
        hosts.sh("rm", "-rf", work, check=False)


def checkpoint(d, name, cp, timeout):
    t0 = time.monotonic()
    p = d.docker("checkpoint", "create", "--leave-running", name, cp, check=False, timeout=timeout)
    t = time.monotonic() - t0
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1][:300]
    return t, None


def fields(nb, rows, c0=None, c1=None, series=False, workload="commits"):
    """The values kept per sample: the latencies of the workload's operation
    (p50_ms, p99_ms, max_ms: commits, or reads for "reads") and the reads'
    p99, the operations per second (commits_per_s or reads_per_s), the
    disk's worst one-second write rate during the checkpoint, and (series)
    the disk's write rate and the neighbour's windows of its operations
    over time (neighbour_series)."""
    w = WORKLOADS[workload]
    c, rd = (nb or {}).get(w["op"]) or {}, (nb or {}).get("read") or {}
    out = {"p50_ms": c.get("p50_ms"), "p99_ms": c.get("p99_ms"), "max_ms": c.get("max_ms"),
           w["per_s"]: round(c["n"] / nb["runtime_s"], 1) if c.get("n") and nb.get("runtime_s") else None,
           "read_p99_ms": rd.get("p99_ms"), "disk_worst_1s_bytes_per_s": None, "disk_series": None,
           "neighbour_series": None}
    ns = neighbour_series(nb, c0, c1) if nb and nb.get("windows") is not None else None
    if series:
        out["neighbour_series"] = ns
    out["stalls"] = stalls(ns)
    if rows and c0 is not None:
        # worst_window takes a checkpoint under a second as the second from
        # its start
        out["disk_worst_1s_bytes_per_s"] = round(diskstats().worst_window(rows, c0, c1))
        if series:
            out["disk_series"] = [[round(t1 - c0, 2), round((w1 - w0) * 512 / (t1 - t0) / 2**20, 1)]
                                  for (t0, w0), (t1, w1) in zip(rows, rows[1:]) if t1 > t0]
    return out


# an operation longer than this is a stall (the checkpoint-neighbour target:
# none over 50 ms beside "auto")
STALL_MS = 50.0


def stalls(series):
    """Where a repetition's stalls fell, from its neighbour_series: {"checkpoint_s":
    [0, end] or None, "windows": [[start s, longest ms], ...]}, the windows
    whose longest operation took over STALL_MS, on the checkpoint's time
    axis (0 s its start); None without the neighbour's windows."""
    if series is None:
        return None
    return {"checkpoint_s": series["checkpoint_s"],
            "windows": [[w[0], w[4]] for w in series["windows"] if w[4] is not None and w[4] > STALL_MS]}


def neighbour_series(nb, c0=None, c1=None):
    """The neighbour's windows of its operations (neighbour_io.Windows) on
    the checkpoint's time axis, 0 s its start (without a checkpoint, the
    neighbour's own start): {"window_s", "commit_bytes" (None for reads),
    "checkpoint_s": [start, end] or None, "truncated", "windows": [[start
    s, n, p50 ms, p99 ms, longest ms], ...]}."""
    off = nb["start_unix"] - (c0 if c0 is not None else nb["start_unix"])
    return {"window_s": nb["window_s"], "commit_bytes": nb.get("commit_bytes"),
            "checkpoint_s": [0.0, round(c1 - c0, 3)] if c0 is not None and c1 is not None else None,
            "truncated": bool(nb.get("windows_truncated")),
            "windows": [[round(w[0] + off, 3)] + list(w[1:]) for w in nb["windows"]]}


# --- the report -------------------------------------------------------------

def workload(doc):
    """The workload that ran (results from before it was recorded ran
    "commits") and its WORKLOADS entry."""
    name = (doc.get("neighbour") or {}).get("workload") or "commits"
    return name, WORKLOADS[name]


def what(doc):
    """What the neighbour's operation is, in words (WORKLOADS' "what")."""
    _, w = workload(doc)
    commit = next((s.get("commit_bytes") for e in doc["results"] for s in e.get("neighbour_series") or [] if s), None)
    size = (f"{commit >> 10} KiB " if commit % 1024 == 0 else f"{commit} B ") if commit else ""
    fb = (doc.get("neighbour") or {}).get("read_file_bytes")
    file = "a file of its own" if not fb else (f"a {fb / 2**30:g} GiB" if fb >= 1 << 30 else f"a {fb / 2**20:g} MiB")
    return w["what"].format(commit=size, file=file)


def summary_note(doc):
    """What the summary compares, said above it where the neighbour's
    operation is not a commit (the commits' reports stay as they were)."""
    name, w = workload(doc)
    if name == "commits":
        return None
    return (f"The summary compares the neighbour's **{w['op']} latency**, not a commit's: its p99 (ms) during each "
            f"checkpoint, per repetition against stock's; each {w['op']}: {what(doc)}.")


def cell_name(e):
    if e["flavor"] == "idle":
        return "neighbour alone"
    return f"{e['container']} holder" + (f", {label(e['params'])}" if e.get("params") else "")


def compared(e):
    return "p99_ms", "ms", True


def _values(e, k):
    """e's k of the repetitions that succeeded (report.keyed), in order."""
    v = keyed(e, k)
    return [v[r] for r in sorted(v)]


def _median(xs):
    return (stats.summary([x for x in xs or [] if x is not None]) or {}).get("median")


# the neighbour's values put against the neighbour alone: (field, its name in the table)
AGAINST_ALONE = (("p50_ms", "p50"), ("p99_ms", "p99"), ("max_ms", "longest"))


def table_rows(doc):
    """Per entry (the neighbour alone first where it ran): its name, n (the
    samples measured), failed, the checkpoint's median time (s, None for
    the neighbour alone), the medians of the neighbour's p50, p99 and
    longest operation (ms; a commit, or a read for "reads"), the longest of
    all its repetitions (worst_ms), read p99, the operations per second
    (per_s), the disk's worst second (MiB/s), and vs_alone:
    for p50_ms, p99_ms and max_ms the paired comparison (stats.paired, by
    repetition) against the neighbour alone (None for the neighbour alone
    or without it)."""
    idle = next((e for e in doc["results"] if e["flavor"] == "idle"), None)
    per_s = workload(doc)[1]["per_s"]
    out = []
    for e in sorted(doc["results"], key=lambda e: e is not idle):
        dw = _median(_values(e, "disk_worst_1s_bytes_per_s"))
        longest = _values(e, "max_ms")
        out.append({
            "entry": e, "name": cell_name(e) if e is idle else f"{e['flavor']}: {cell_name(e)}",
            "n": len(e.get("times_s") or []), "failed": failed(e),
            "checkpoint_s": None if e is idle else _median(e.get("times_s")),
            "p50_ms": _median(_values(e, "p50_ms")), "p99_ms": _median(_values(e, "p99_ms")),
            "max_ms": _median(longest), "worst_ms": max(longest) if longest else None,
            "read_p99_ms": _median(_values(e, "read_p99_ms")), "per_s": _median(_values(e, per_s)),
            "disk_mib_s": None if dw is None else dw / 2**20,
            "vs_alone": None if idle is None or e is idle else
            {k: stats.paired(keyed(e, k), keyed(idle, k)) for k, _ in AGAINST_ALONE}})
    return out


def sections(doc):
    _, w = workload(doc)
    op = w["op"]
    # the columns the rows end with: (heading, format)
    tail = [{"read_p99_ms": ("read p99 ms", "{:.2f}"), "per_s": (w["rate"], "{:.0f}")}[k] for k in w["columns"]]
    lines = ["## The neighbour during each checkpoint, against the neighbour alone", "",
             f"Disk {doc.get('disk', '?')}. n: the samples measured, failed: those whose checkpoint failed (the "
             f"neighbour's values beside them are not kept, and a ratio with any reads inconclusive). Medians of "
             f"the repetitions; {op} latency is {what(doc)}, over the neighbour's whole run "
             f"(its lead before the checkpoint included); longest: the median of each repetition's longest {op} "
             f"(worst: the longest of all){w['besides']}. / alone: the value against the "
             "neighbour alone in the same repetition, the geometric mean of the pairs' ratios [95% CI] (paired, "
             "uncorrected p, no verdict). disk: its worst one-second write rate from the checkpoint's start to its "
             "end (at least one second).", "",
             f"| variant | n | failed | checkpoint s | {op} p50 ms | p50 / alone | {op} p99 ms | p99 / alone "
             "[95% CI] | longest ms (worst) | longest / alone | " + "".join(h + " | " for h, _ in tail)
             + "disk MiB/s |",
             "|" + " --- |" * (11 + len(tail))]
    f = lambda x, fmt="{:.2f}": "-" if x is None else fmt.format(x)
    for r in table_rows(doc):
        vs = r["vs_alone"]
        ratio = (lambda k: fmt_ratio(vs[k], True).replace(" uncorrected", "") if vs[k] else "-") if vs else \
            (lambda k: "1" if r["entry"]["flavor"] == "idle" else "-")
        lines.append(f"| {r['name']} | {r['n']} | {r['failed']} | {f(r['checkpoint_s'], '{:.3f}')} | "
                     f"{f(r['p50_ms'])} | {ratio('p50_ms')} | {f(r['p99_ms'])} | {ratio('p99_ms')} | "
                     f"{f(r['max_ms'], '{:.1f}')} ({f(r['worst_ms'], '{:.1f}')}) | {ratio('max_ms')} | "
                     + "".join(f"{f(r[k], fmt)} | " for k, (_, fmt) in zip(w["columns"], tail))
                     + f"{f(r['disk_mib_s'], '{:.0f}')} |")
    return ["\n".join(lines) + "\n", stall_section(doc)]


def stall_section(doc):
    """Where each repetition's stalls fell against its checkpoint (stalls)."""
    op = workload(doc)[1]["op"]
    lines = ["## Stalls", "",
             f"Every 100 ms window of the neighbour's in which a {op} took over {STALL_MS:.0f} ms, by repetition: "
             "its start in seconds from the checkpoint's start (negative: during the neighbour's lead) and, after "
             "@, the longest there; the checkpoint's own span beside it. Results without this record show "
             "\"not recorded\".", "",
             "| variant | stalls |", "| --- | --- |"]
    for r in table_rows(doc):
        if r["entry"].get("stalls") is None:
            lines.append(f"| {r['name']} | not recorded |")
            continue
        cells = []
        per_rep = keyed(r["entry"], "stalls")
        for rep in sorted(per_rep):
            st = per_rep[rep]
            if not st["windows"]:
                continue
            span = f" (checkpoint 0-{st['checkpoint_s'][1]:.2f} s)" if st.get("checkpoint_s") else ""
            cells.append(f"rep {rep + 1}: " + ", ".join(f"{t:.1f} s @ {ms:.0f} ms" for t, ms in st["windows"]) + span)
        lines.append(f"| {r['name']} | {'; '.join(cells) if cells else 'none'} |")
    return "\n".join(lines) + "\n"


def timeline(doc):
    """The panels of neighbour-timeline.png: per entry with a series of the
    neighbour's operations (its first repetition), in results order,
    {"name", "op": what they are ("commit" or "read"), "checkpoint_s":
    [start, end] or None, "latency": [(window middle s, p99 ms, longest
    ms)] of the windows with operations, "neighbour_mib_s": [(window middle
    s, the neighbour's own commits' MiB/s)] (none for reads), "disk": the
    disk's [(s, MiB/s)], "alone_p99_ms": the neighbour alone's median
    p99}."""
    idle = next((e for e in doc["results"] if e["flavor"] == "idle"), None)
    op = workload(doc)[1]["op"]
    alone = _median(idle.get("p99_ms")) if idle else None
    out = []
    for e in doc["results"]:
        ns = next((x for x in e.get("neighbour_series") or [] if x), None)
        if not ns:
            continue
        w, cb = ns["window_s"], ns.get("commit_bytes")
        mid = lambda t: round(t + w / 2, 3)
        out.append({"name": cell_name(e) if e["flavor"] == "idle" else f"{e['flavor']}: {cell_name(e)}", "op": op,
                    "checkpoint_s": ns.get("checkpoint_s"),
                    "latency": [(mid(t), p99, mx) for t, n, _, p99, mx in ns["windows"] if n],
                    "neighbour_mib_s": [(mid(t), n * cb / w / 2**20) for t, n, *_ in ns["windows"]] if cb else [],
                    "disk": [tuple(p) for p in next((x for x in e.get("disk_series") or [] if x), [])],
                    "alone_p99_ms": alone})
    return out


def plots(doc, outdir, plt):
    return disk_plot(doc, outdir, plt) + timeline_plot(doc, outdir, plt)


def disk_plot(doc, outdir, plt):
    """neighbour-disk.png: the disk's write rate over the first repetition's
    checkpoint (0 s: its start), per variant."""
    es = [e for e in doc["results"] if e["flavor"] != "idle" and any(e.get("disk_series") or [])]
    if not es:
        return []
    fig, ax = plt.subplots(figsize=(8, 4))
    for e in es:
        ser = next(x for x in e["disk_series"] if x)
        ax.plot([p[0] for p in ser], [p[1] for p in ser], label=f"{e['flavor']}: {cell_name(e)}", linewidth=1)
    ax.set_xlabel("seconds from the checkpoint's start")
    ax.set_ylabel("disk write MiB/s")
    ax.set_title(f"{doc['suite']}: the disk during the checkpoint")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "neighbour-disk.png"), dpi=120)
    return ["neighbour-disk.png"]


def timeline_plot(doc, outdir, plt):
    """neighbour-timeline.png: a panel per variant (timeline), the first
    repetition: the neighbour's latency per 100 ms window (p99 and longest
    of its commits, or of its reads for "reads"; log scale, the neighbour
    alone's p99 dashed) and, on the right axis, the disk's write rate and
    the neighbour's own; the checkpoint shaded from its start to its end."""
    panels = timeline(doc)
    if not panels:
        return []
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 2.4 * len(panels)), squeeze=False)
    for ax, p in zip(axes[:, 0], panels):
        if p["checkpoint_s"]:
            ax.axvspan(*p["checkpoint_s"], color="tab:red", alpha=0.08, label="checkpoint")
            for x in p["checkpoint_s"]:
                ax.axvline(x, color="tab:red", linewidth=0.8)
        lat = p["latency"]
        ax.plot([x[0] for x in lat], [x[1] for x in lat], color="tab:blue", linewidth=0.8, label=f"{p['op']} p99")
        ax.plot([x[0] for x in lat], [x[2] for x in lat], ".", color="tab:blue", markersize=2, alpha=0.5,
                label=f"{p['op']} longest")
        if p["alone_p99_ms"]:
            ax.axhline(p["alone_p99_ms"], color="grey", linestyle="--", linewidth=0.8, label="p99 alone")
        if lat:
            ax.set_yscale("log")
        ax.set_ylabel(f"{p['op']} ms", fontsize=8)
        ax.set_title(p["name"] + (f", checkpoint {p['checkpoint_s'][1]:.2f} s" if p["checkpoint_s"] else ""),
                     fontsize=9)
        ax.grid(alpha=0.3)
        ax2 = ax.twinx()
        if p["disk"]:
            ax2.plot([x[0] for x in p["disk"]], [x[1] for x in p["disk"]], color="tab:orange", linewidth=1,
                     label="disk write")
        if p["neighbour_mib_s"]:
            ax2.plot([x[0] for x in p["neighbour_mib_s"]], [x[1] for x in p["neighbour_mib_s"]], color="tab:green",
                     linewidth=0.6, label="neighbour's commits")
        ax2.set_ylabel("MiB/s", fontsize=8)
        ax2.set_ylim(bottom=0)
    handles, labels = [], []
    for a in fig.axes:
        for h, lab in zip(*a.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    axes[-1, 0].set_xlabel("seconds from the checkpoint's start (the neighbour alone: from its own start)")
    fig.suptitle(f"{doc['suite']}: the neighbour's {panels[0]['op']}s and the disk, first repetition", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / fig.get_figheight()))
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=len(labels), fontsize=8,
               frameon=False)
    fig.savefig(os.path.join(outdir, "neighbour-timeline.png"), dpi=100, bbox_inches="tight")
    return ["neighbour-timeline.png"]


KIND = Kind(name="neighbour", KEYS=KEYS, SWITCHES=SWITCHES, REPETITIONS=REPETITIONS,
            Suite=Suite, validate=validate, refuse=refuse, run=run, SCANS=SCANS, KEY_FIELDS=KEY_FIELDS,
            summary_note=summary_note, cell_name=cell_name, compared=compared, sections=sections, plots=plots)
