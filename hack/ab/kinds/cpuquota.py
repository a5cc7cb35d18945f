"""kind = "cpuquota": seed 003's reader of many small files, in a container
per CPU limit (docker run --cpus) and way of reading.

A cell is a way of reading and a CPU limit: scenario is the mode's label
(sequential, async, "workers x<n>"), container the limit's ("unlimited",
"0.6"), and mode, workers and cpus say the same as values. The samples are
the time to read every file; files_per_s, cpu_s, throttled_s and run_s
(the container's whole run) come with them."""
import os
import resource
import sys
import time
from dataclasses import dataclass, field

from .. import hosts, stats, suite, units
from ..measure import Progress, parse_json_line, rotate
from ..report import bar_plot, fmt_v, keyed, median_of, versus
from ..results import Cell
from . import Kind

KEYS = ("cpus", "modes", "workers", "files", "file_size")
KEY_FIELDS = ()  # scenario and container name the mode and the limit
SWITCHES = ()
REPETITIONS = 3
READ_MODES = ("sequential", "async", "workers")  # hack/hosts/testimages/node/readfiles.js


@dataclass
class CPUQuota:
    """cpuquota: seed 003's file reader in a container per CPU limit and mode."""
    cpus: list = field(default_factory=lambda: [None, 0.6])  # None: no limit
    modes: list = field(default_factory=lambda: ["async", "workers"])
    workers: list = field(default_factory=lambda: [4])
    files: int = 10000
    file_size: int = 19001  # the seed's: "longonglndinfdfkjds" x 1000 and a newline

    def cells(self):
        """(mode, workers) of every run, workers 0 for the other modes."""
        out = []
        for m in self.modes:
            out += [(m, n) for n in self.workers] if m == "workers" else [(m, 0)]
        return out


def cpus_label(c):
    return "unlimited" if c is None else f"{c:g}"


def mode_label(mode, workers):
    return f"workers x{workers}" if mode == "workers" else mode


@dataclass
class Suite(suite.Suite):
    cpuquota: CPUQuota = None


# --- the suite file ---------------------------------------------------------

def validate(v, d, s):
    s.cpuquota = cpuquota(v, d)


def refuse(v, d, kind):
    for k in KEYS:
        if k in d:
            v.fail(v.first(d, k), f"{k} belongs to cpuquota suites, not {kind}")


def cpuquota(v, d):
    """Seed 003: cpus (a list of CPU limits, "unlimited" for none), modes
    (sequential, async, workers), workers (the worker counts of mode
    workers), files and file_size (the directory read)."""
    q = CPUQuota()
    ncpu = os.cpu_count() or 1
    cpus = v.typed(d.get("cpus", ["unlimited", 0.6]), list, ("cpus",), 'a list of CPU limits ("unlimited" or a number)')
    if not cpus:
        v.fail(("cpus",), "cpus: want at least one CPU limit")
    q.cpus = []
    for c in cpus:
        if c == "unlimited":
            limit = None
        elif isinstance(c, (int, float)) and not isinstance(c, bool):
            if not 0.01 <= c <= ncpu:
                v.fail(("cpus",), f"cpus: {c} is outside 0.01 to {ncpu} (this machine's CPUs; "
                                  f'"unlimited" for no limit)')
            limit = float(c)
        else:
            v.fail(("cpus",), f'cpus: want "unlimited" or a number of CPUs like 0.6, got {c!r}')
        if limit in q.cpus:
            v.fail(("cpus",), f"cpus: {cpus_label(limit)} is listed twice")
        q.cpus.append(limit)
    q.modes = v.typed(d.get("modes", q.modes), list, ("modes",), "a list")
    if not q.modes:
        v.fail(("modes",), "modes: want at least one")
    for m in q.modes:
        if m not in READ_MODES:
            v.fail(("modes",), f"modes: '{m}' is not one of {', '.join(READ_MODES)}")
    if len(set(q.modes)) != len(q.modes):
        v.fail(("modes",), "modes: a mode is listed twice")
    if "workers" in d and "workers" not in q.modes:
        v.fail(("workers",), "workers: worker counts need mode \"workers\" in modes")
    q.workers = v.typed(d.get("workers", q.workers), list, ("workers",), "a list of worker counts")
    if not q.workers:
        v.fail(("workers",), "workers: want at least one worker count")
    for n in q.workers:
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 64:
            v.fail(("workers",), f"workers: want worker counts from 1 to 64, got {n!r}")
    if len(set(q.workers)) != len(q.workers):
        v.fail(("workers",), "workers: a count is listed twice")
    q.files = v.typed(d.get("files", q.files), int, ("files",), "a number of files")
    if not 1 <= q.files <= 200000:
        v.fail(("files",), f"files: want 1 to 200000, got {q.files}")
    if "file_size" in d:
        q.file_size = units.size(v.unit(units.size, v.typed(d["file_size"], str, ("file_size",), "a size"),
                                        ("file_size",)))
        if not 1 <= q.file_size <= 16 << 20:
            v.fail(("file_size",), f"file_size: want 1B to 16MiB, got {d['file_size']}")
    return q


# --- the run ----------------------------------------------------------------

def prepare(r):
    # Promise.all opens every file before the first read completes; a
    # container cannot raise its descriptor limit above the hard limit the
    # daemon has where root lacks CAP_SYS_RESOURCE.
    need = r.s.cpuquota.files + 1024
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and need > hard:
        raise hosts.HostError(f"files: {r.s.cpuquota.files} files need {need} open files at once; "
                              f"this host's hard limit is {hard} (ulimit -Hn)")


def images(s):
    return ["node"]


def run(r):
    """Write the files once per flavor; then per repetition, each flavor
    in the repetition's order reads them in a container per CPU limit and
    mode."""
    s = r.s
    q = s.cpuquota
    dirs = {}
    for f, d in r.daemons.items():
        sys.stderr.write(f"==> {f}: {q.files} files of {units.human_size(q.file_size)}\n")
        dirs[f] = files_dir(q, d)
    cells = q.cells()
    r.results.doc["workload"] = {"files": q.files, "file_size": q.file_size, "cpus": q.cpus,
                                 "modes": q.modes, "workers": q.workers}
    r.results.save()
    prog = Progress(len(q.cpus) * len(cells) * s.repetitions * len(r.daemons))
    # Every descriptor at once: Promise.all opens all the files before
    # the first read completes.
    nofile = q.files + 1024  # checked against the hard limit in prepare()
    for rep in range(s.repetitions):
        for f in r.flavor_order(rep):
            d = r.daemons[f]
            for cpus in rotate(q.cpus, rep):
                for mode, n in rotate(cells, rep):
                    limit = ["--cpus", f"{cpus:g}"] if cpus is not None else []
                    argv = ["node", "/app/readfiles.js", "/data", mode] + ([str(n)] if mode == "workers" else [])
                    t0 = time.monotonic()
                    p = d.docker("run", "--rm", *limit, "--ulimit", f"nofile={nofile}:{nofile}",
                                 "-v", f"{dirs[f]}:/data:ro", "ab/node", *argv, check=False,
                                 timeout=s.sample_timeout)
                    wall = time.monotonic() - t0
                    res = parse_json_line(p.stdout)
                    err = None if res else ((p.stderr or "").strip().splitlines() or ["failed"])[-1][:300]
                    res = res or {}
                    cell = Cell(f, image="ab/node", params=d.config, scenario=mode_label(mode, n),
                                container=cpus_label(cpus), kind_fields={"mode": mode, "workers": n, "cpus": cpus})
                    r.results.add(cell, res.get("elapsed_s"), err, files_per_s=res.get("files_per_s"),
                                  cpu_s=res.get("cpu_s"), throttled_s=res.get("throttled_s"), run_s=round(wall, 4))
                    prog.step(f"cpuquota {mode_label(mode, n)} cpus={cpus_label(cpus)} {f} rep {rep + 1}: "
                              + (f"{res['elapsed_s']:.2f}s, {res['files_per_s']:.0f} files/s" if res
                                 else f"FAILED {err}"))


def files_dir(q, d):
    """Seed 003's directory: files of the seed's text, on the data-root's
    disk, written once and read once (the runs read from the page cache,
    as the seed's repeated runs did)."""
    path = os.path.join(d.vardir(), "abcq-files")
    os.makedirs(path, exist_ok=True)
    body = seed003_text(q.file_size)
    for i in range(q.files):
        with open(os.path.join(path, f"file-{i}.txt"), "wb") as f:
            f.write(body)
    for i in range(q.files):
        with open(os.path.join(path, f"file-{i}.txt"), "rb") as f:
            f.read()
    return path


SEED003_LINE = b"longonglndinfdfkjds"


def seed003_text(size):
    """Seed 003's file body: its text repeated and a newline (19001 bytes at
    the seed's 1000 repetitions), cut or extended to size bytes."""
    if size <= 1:
        return b"\n"[:size]
    reps = -(-(size - 1) // len(SEED003_LINE))
    return (SEED003_LINE * reps)[:size - 1] + b"\n"


# --- the report -------------------------------------------------------------

def cell_name(e):
    return f"{e['scenario']} @ {e['container']} CPU"


def sections(doc):
    return [cpuquota_tables(doc)]


def plots(doc, outdir, plt):
    return bar_plot(doc, outdir, plt, "time to read every file") + plot_cpuquota(doc, outdir, plt)


def cpu_value(c, ncpu):
    """A CPU limit for an axis: no limit counts as the machine's CPUs."""
    return float(ncpu or 1) if c is None else float(c)


def _cq_cells(doc):
    """(mode labels in suite order, CPU limits from the most to the least)."""
    es = [e for e in doc["results"] if "mode" in e]
    modes = list(dict.fromkeys(e["scenario"] for e in es))
    ncpu = (doc.get("machine") or {}).get("cpus")
    cpus = sorted({e.get("cpus") for e in es}, key=lambda c: -cpu_value(c, ncpu) - (0.001 if c is None else 0))
    return es, modes, cpus, ncpu


def _cq(es, flavor, mode, cpus, field="times_s", by_rep=False):
    """A cell's field: its values of the repetitions that succeeded, or
    (by_rep) those by repetition (report.keyed)."""
    for e in es:
        if e["flavor"] == flavor and e["scenario"] == mode and e.get("cpus") == cpus:
            v = keyed(e, field)
            return v if by_rep else [v[r] for r in sorted(v)]
    return {} if by_rep else []


def crossover(doc, flavor):
    """Per worker mode: the CPU limits where it beats async (time to read
    every file, the ratio's 95% interval below 1), where it loses (above 1),
    and where the two cannot be told apart (or too few samples tell): the
    paired test, Holm-adjusted across the limits."""
    es, modes, cpus, _ = _cq_cells(doc)
    if "async" not in modes:
        return {}
    out = {}
    for m in modes:
        if not m.startswith("workers"):
            continue
        pays, ties, costs = [], [], []
        rs = [(c, stats.paired(_cq(es, flavor, m, c, by_rep=True), _cq(es, flavor, "async", c, by_rep=True))) for c in cpus]
        rs = [(c, r) for c, r in rs if r]
        # Holm across the CPU limits: a verdict per limit, the chance of any
        # false one at most 5%.
        adj = stats.holm([None if r["too_few"] else r["p"] for _, r in rs])
        for (c, r), p in zip(rs, adj):
            v = stats.verdict(r, True, p)
            (pays if v == "better" else costs if v == "worse" else ties).append(c)
        out[m] = (pays, ties, costs)
    return out


def cpus_phrase(cs):
    """[None, 1.5, 1] -> 'with no CPU limit and at 1.5 and 1 CPUs'"""
    nums = [f"{c:g}" for c in cs if c is not None]
    parts = ["with no CPU limit"] if None in cs else []
    if nums:
        listed = nums[0] if len(nums) == 1 else ", ".join(nums[:-1]) + " and " + nums[-1]
        parts.append(f"at {listed} CPU" + ("" if nums == ["1"] else "s"))
    return " and ".join(parts)


def cpuquota_tables(doc):
    es, modes, cpus, ncpu = _cq_cells(doc)
    if not es:
        return ""
    flavors = [f for f in ("stock", "patched") if any(e["flavor"] == f for e in es)]
    out = ["## Where workers stop paying (seed 003)", "",
           "Time to read every file (median of the repetitions, seconds; files/s in brackets) per CPU limit "
           "(`docker run --cpus`), per way of reading: one file after the other, Promise.all over every file "
           "(libuv's pool does the I/O), or N worker threads each reading a slice with Promise.all. "
           "\"workers / async\": above 1, the workers are slower than plain async I/O.", ""]
    worker_modes = [m for m in modes if m.startswith("workers")]
    for f in flavors:
        head = ["CPUs"] + modes + (["fastest"]) + ([f"{m} / async" for m in worker_modes] if "async" in modes else [])
        out += [f"**{f}**", "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for c in cpus:
            cells = [cpus_label(c)]
            best = None
            for m in modes:
                t, fps = median_of(_cq(es, f, m, c)), median_of(_cq(es, f, m, c, "files_per_s"))
                cells.append(f"{t:.3f} ({fps:.0f})" if t is not None and fps is not None else "-")
                if t is not None and (best is None or t < best[0]):
                    best = (t, m)
            cells.append(best[1] if best else "-")
            if "async" in modes:
                a = _cq(es, f, "async", c, by_rep=True)
                cells += [versus(_cq(es, f, m, c, by_rep=True), a, True) for m in worker_modes]
            out.append("| " + " | ".join(cells) + " |")
        verdicts = crossover(doc, f)
        if verdicts:
            out.append("")
        for m, (pays, ties, costs) in verdicts.items():
            said = [f"{what} {cpus_phrase(cs)}" for what, cs in (("faster than async", pays),
                                                                 ("slower", costs), ("no different", ties)) if cs]
            verdict = f"{m}: " + "; ".join(said)
            out.append(f"- {verdict}.")
        out.append("")
    # CPU time and throttling: why the workers stop paying
    out += ["CPU time the reader used (user and system, every thread) and the time the CFS quota held it back "
            "(cpu.stat's throttled time, summed over the CPUs it waited on), medians in seconds:", "",
            "| CPUs | mode | " + " | ".join(f"{f} CPU time / throttled" for f in flavors) + " |",
            "| --- | --- |" + " --- |" * len(flavors)]
    for c in cpus:
        for m in modes:
            cells = []
            for f in flavors:
                cu, th = median_of(_cq(es, f, m, c, "cpu_s")), median_of(_cq(es, f, m, c, "throttled_s"))
                cells.append(f"{cu:.2f} / {th:.2f}" if cu is not None and th is not None else
                             (f"{cu:.2f} / -" if cu is not None else "-"))
            out.append(f"| {cpus_label(c)} | {m} | " + " | ".join(cells) + " |")
    seed = doc.get("seed") or {}
    runs = seed.get("runs") or []
    if runs:
        sf = seed.get("files")
        wl = doc.get("workload") or {}
        ours = (f"; ours read {wl['files']} files of {units.human_size(wl['file_size'])}"
                if wl.get("files") and wl.get("file_size") else "")
        out += ["", "### The seed's published runs beside ours", "",
                f"Seed 003 read {sf or '?'} files" + (f" of {seed['file_size']}" if seed.get("file_size") else "")
                + (f" ({seed['note']})" if seed.get("note") else "") + ours
                + ". Files per second puts the runs on one scale.", ""]
        head = ["seed run", "mode", "CPUs", "seed: time (median, runs)", "seed files/s"] + \
            [f"ours, {f}: files/s" for f in flavors]
        out += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        for r in runs:
            ts = [x for x in r.get("elapsed_s", []) if isinstance(x, (int, float))]
            mode = r.get("mode", "")
            label = f"workers x{r.get('workers')}" if mode == "workers" else mode
            c = None if r.get("cpus", "unlimited") == "unlimited" else float(r["cpus"])
            med = median_of(ts)
            ours = []
            for f in flavors:
                v = median_of(_cq(es, f, label, c, "files_per_s"))
                ours.append(fmt_v(v, "files/s") if v is not None else "not measured")
            out.append("| " + " | ".join([r.get("label", label), label, cpus_label(c),
                                         f"{med:.2f} s ({len(ts)})" if med else "-",
                                         fmt_v(sf / med, "files/s") if med and sf else "-"] + ours) + " |")
    return "\n".join(out) + "\n"


def plot_cpuquota(doc, outdir, plt):
    """cpuquota.png's companion, cpuquota-workers.png: (a) files/s against
    the CPU limit per mode and flavor, the seed's runs as markers; (b) each
    worker mode's time over async's: above 1 the workers cost."""
    es, modes, cpus, ncpu = _cq_cells(doc)
    if not es:
        return []
    flavors = [f for f in ("stock", "patched") if any(e["flavor"] == f for e in es)]
    style = {"stock": "--", "patched": "-"}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 5.2))
    xs = [cpu_value(c, ncpu) for c in cpus]
    for i, m in enumerate(modes):
        for f in flavors:
            pts = [(x, _cq(es, f, m, c, "files_per_s")) for x, c in zip(xs, cpus)]
            pts = [(x, v) for x, v in pts if v]
            if not pts:
                continue
            med = [median_of(v) for _, v in pts]
            a1.errorbar([x for x, _ in pts], med, yerr=[[m_ - min(v) for m_, (_, v) in zip(med, pts)],
                                                        [max(v) - m_ for m_, (_, v) in zip(med, pts)]],
                        color=f"C{i}", ls=style.get(f, "-"), marker="o", ms=4, capsize=3, label=f"{m} ({f})")
    seed = doc.get("seed") or {}
    sf = seed.get("files")
    seen_seed = False
    for r in seed.get("runs") or []:
        ts = [x for x in r.get("elapsed_s", []) if isinstance(x, (int, float))]
        if not ts or not sf:
            continue
        mode = r.get("mode", "")
        label = f"workers x{r.get('workers')}" if mode == "workers" else mode
        c = None if r.get("cpus", "unlimited") == "unlimited" else float(r["cpus"])
        colour = f"C{modes.index(label)}" if label in modes else "0.4"
        a1.plot([cpu_value(c, ncpu)], [sf / median_of(ts)], marker="D", mfc="none", mec=colour, ms=9, mew=1.5, ls="none")
        seen_seed = True
    a1.set_ylabel("files read per second (median, min-max)")
    a1.set_title("(a) throughput against the CPU limit")
    a1.set_ylim(bottom=0)
    worker_modes = [m for m in modes if m.startswith("workers")]
    if "async" in modes and worker_modes:
        for i, m in enumerate(modes):
            if m not in worker_modes:
                continue
            for f in flavors:
                pts = []
                for x, c in zip(xs, cpus):
                    r = stats.ratio_ci(_cq(es, f, m, c, by_rep=True), _cq(es, f, "async", c, by_rep=True))
                    if r and r["ratio"] is not None:
                        pts.append((x, r))
                if not pts:
                    continue
                ys = [r["ratio"] for _, r in pts]
                lo = [r["ratio"] - (r["lo"] if r["lo"] is not None else r["ratio"]) for _, r in pts]
                hi = [(r["hi"] if r["hi"] is not None else r["ratio"]) - r["ratio"] for _, r in pts]
                a2.errorbar([x for x, _ in pts], ys, yerr=[lo, hi], color=f"C{i}", ls=style.get(f, "-"), marker="o",
                            ms=4, capsize=3, label=f"{m} ({f})")
        a2.axhline(1, color="k", lw=0.8)
        top = max(a2.get_ylim()[1], 1.1)
        a2.axhspan(1, top, color="C3", alpha=0.07)
        a2.text(0.02, 0.97, "above 1: workers slower than async", transform=a2.transAxes, va="top", fontsize=8,
                color="C3")
        a2.set_ylim(min(a2.get_ylim()[0], 0.9), top)
        a2.set_ylabel("time with workers / time with async (95% CI)")
        a2.set_title("(b) where workers stop paying")
    else:
        a2.set_visible(False)
    for a in (a1, a2):
        a.set_xticks(xs)
        a.set_xticklabels([("unlimited\n(" + f"{ncpu}" + " CPUs)") if c is None else f"{c:g}" for c in cpus])
        a.set_xlabel("CPU limit (docker run --cpus)")
        a.grid(alpha=0.3)
    # One legend for both panels: a colour per mode, a line style per flavor.
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], color=f"C{i}", marker="o", ms=4, label=m) for i, m in enumerate(modes)]
    handles += [Line2D([], [], color="0.3", ls=style.get(f, "-"), label=f) for f in flavors]
    if seen_seed:
        handles.append(Line2D([], [], color="0.3", marker="D", mfc="none", ms=8, ls="none",
                              label="seed 003's runs (files/s; colour: mode)"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 5), fontsize=8, frameon=False)
    fig.suptitle(f"{doc['suite']}: reading many small files, worker threads against async I/O")
    fig.tight_layout(rect=(0, 0.08 + 0.04 * ((len(handles) - 1) // 5), 1, 1))
    fig.savefig(os.path.join(outdir, "cpuquota-workers.png"), dpi=120)
    return ["cpuquota-workers.png"]


KIND = Kind(name="cpuquota", KEYS=KEYS, SWITCHES=SWITCHES, REPETITIONS=REPETITIONS,
            Suite=Suite, validate=validate, refuse=refuse, run=run, KEY_FIELDS=KEY_FIELDS, prepare=prepare,
            images=images, cell_name=cell_name, sections=sections, plots=plots)
