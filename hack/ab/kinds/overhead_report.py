"""The overhead kind's report: what a cell compares and its name, the sections
after the summary (the platforms, the HTTP and ping-pong tables by
placement) and the plots. kinds/overhead.py, which runs the kind, imports
them, and NETWORKS."""
import os

from .. import systems
from ..report import bar_plot, fmt_v, keyed, median_of, versus


# Where the overhead suites put a server and its client (http, pingpong):
# native processes in the flavor's test host, containers on the bridge
# network (reached at their address), containers on the host network, and
# (http) a bridge container behind a published port, reached at 127.0.0.1 as
# seed 004's -p 3000:3000 was.
NETWORKS = ("native", "bridge", "published", "host")


def compared(e):
    """What the report compares: requests/s of http, the median round trip
    of pingpong, the time of the others."""
    if e.get("scenario") == "http":
        return "rps", "req/s", False
    if e.get("scenario") == "pingpong":  # the median round trip of each run
        return "p50_us", "µs", True
    return "times_s", "s", True


def cell_name(e):
    if e.get("endpoint"):
        return f"{e['scenario']} {e['endpoint']}: {e['container']}"
    return f"{e['scenario']}: {e['container']}"


def sections(doc):
    return [platforms_table(doc), http_table(doc), pingpong_table(doc)]




def platforms_table(doc):
    """Seed 002's platforms side by side, where a suite has a peer of
    another system (charliecloud): the cpu hash and the ping-pong round
    trip natively and on each platform, each platform against the native
    runs of its own test host (paired by repetition)."""
    es = [e for e in doc["results"] if e.get("scenario") in ("cpu", "pingpong")]
    flavors = _flavors(es)
    if all(systems.name_of(f) == "dockerd" for f in flavors):
        return ""
    cpu, pp = _entries(doc, "cpu"), _entries(doc, "pingpong")
    pls = [p for p in _placements(pp) if p != "native"]
    head = ["platform"] + (["cpu: hash (s)", "/ native [95% CI]"] if cpu else [])
    for p in pls:
        head += [f"ping-pong {p}: p50 (µs)", "/ native [95% CI]"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    native = ["native (each test host's own process)"]
    if cpu:
        native += [fmt_v(median_of([x for f in flavors for x in _samples(cpu, f, "native", "times_s")]), "s"), "1"]
    for _ in pls:
        native += [fmt_v(median_of([x for f in flavors for x in _samples(pp, f, "native", "p50_us")]), "µs"), "1"]
    rows.append("| " + " | ".join(native) + " |")
    for f in flavors:
        cells = [systems.of(f).LABELS.get(f, f)]
        if cpu:
            got = _samples(cpu, f, "container", "times_s")
            cells += [fmt_v(median_of(got), "s"),
                      versus(_samples(cpu, f, "container", "times_s", True), _samples(cpu, f, "native", "times_s", True),
                             True)]
        for p in pls:
            got = _samples(pp, f, p, "p50_us")
            cells += [fmt_v(median_of(got), "µs") if got else "-",
                      versus(_samples(pp, f, p, "p50_us", True), _samples(pp, f, "native", "p50_us", True), True)]
        rows.append("| " + " | ".join(cells) + " |")
    ch = (doc.get("daemons") or {}).get("charliecloud") or {}
    out = ["## Platforms side by side (seed 002)", "",
           "The same programs natively and on each platform: the cpu hash (the same busybox) in a container, and "
           "ping-pong round trips between two containers (bridge: at the server's address; host: over loopback "
           "on the host network). Medians of the repetitions; \"/ native\" is each platform against the native "
           "runs in its own test host, paired by repetition (uncorrected p). The summary puts patched against "
           "stock, and against each peer, with the paired statistics."
           + (f" charliecloud is ch-run {ch.get('version')} on a root file system unpacked from the image the "
              "dockerd hosts load, each container a ch-run command in its test host's network namespace (the host "
              "network: it has no other), started and ended with it; docker's cpu hash runs by docker exec in a "
              "running container." if ch else ""), ""]
    return "\n".join(out + rows) + "\n"


def plots(doc, outdir, plt):
    return bar_plot(doc, outdir, plt) + plot_placements(doc, outdir, plt)


PLACEMENT_NOTE = {"native": "a process in the test host", "bridge": "container on the bridge, at its address",
                  "published": "container on the bridge, at 127.0.0.1 through a published port",
                  "host": "container on the host network"}


def _flavors(es):
    """The flavors of entries es, in the order reports show them (ab.systems)."""
    return [f for f in systems.flavors() if any(e["flavor"] == f for e in es)]


def _entries(doc, scenario, **match):
    return [e for e in doc["results"] if e.get("scenario") == scenario
            and all(e.get(k) == v for k, v in match.items())]


def _placements(es):
    seen = {e["container"] for e in es}
    return [p for p in NETWORKS if p in seen]


def _against(es, flavors, pl, key, lower_is_better):
    """A placement's table cells: patched against stock (with both flavors),
    then each flavor against its native run ("1" for native itself)."""
    got = {f: _samples(es, f, pl, key, True) for f in flavors}
    cells = []
    if _ab(flavors):
        cells.append(versus(got["patched"], got["stock"], lower_is_better))
    for f in flavors:
        native = _samples(es, f, "native", key, True)
        cells.append("1" if pl == "native" and native else versus(got[f], native, lower_is_better))
    return cells


def _ab(flavors):
    """Whether both dockerd flavors are there (a patched/stock column)."""
    return "stock" in flavors and "patched" in flavors


def _samples(es, flavor, placement, field, by_rep=False):
    """A placement's field: its values of the repetitions that succeeded,
    or (by_rep) those by repetition (report.keyed)."""
    for e in es:
        if e["flavor"] == flavor and e["container"] == placement:
            v = keyed(e, field)
            return v if by_rep else [v[r] for r in sorted(v)]
    return {} if by_rep else []


def http_table(doc):
    """Seed 004's comparison: per endpoint, requests/s and latency of the
    server as a native process and in each container placement, per flavor,
    each against native; the seed's requests/s beside where it gives them."""
    es = _entries(doc, "http")
    if not es:
        return ""
    seed = (doc.get("seed") or {}).get("http_rps") or {}
    flavors = _flavors(es)
    endpoints = list(dict.fromkeys(e.get("endpoint") or "/" for e in es))
    head = ["endpoint", "placement"] + [f"{f} req/s" for f in flavors]
    head += ["patched/stock [95% CI]"] if _ab(flavors) else []
    head += [f"{f} / native [95% CI]" for f in flavors] + ["seed req/s", "seed / native"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lat = ["| endpoint | placement | " + " | ".join(f"{f} mean / p50 / p99 (ms)" for f in flavors) + " |",
           "| --- | --- |" + " --- |" * len(flavors)]
    for ep in endpoints:
        sub = [e for e in es if (e.get("endpoint") or "/") == ep]
        sd = seed.get(ep) or {}
        for pl in _placements(sub):
            rps = {f: _samples(sub, f, pl, "rps") for f in flavors}
            cells = [ep, pl] + [f"{fmt_v(median_of(rps[f]), 'req/s')}" for f in flavors]
            cells += _against(sub, flavors, pl, "rps", False)
            sv, sn = sd.get(pl), sd.get("native")
            cells.append(fmt_v(sv, "req/s") if isinstance(sv, (int, float)) else "-")
            cells.append(f"{sv / sn:.2f}" if isinstance(sv, (int, float)) and isinstance(sn, (int, float)) and sn
                         else "-")
            rows.append("| " + " | ".join(cells) + " |")
            lc = []
            for f in flavors:
                m = [median_of(_samples(sub, f, pl, k)) for k in ("latency_mean_s", "times_s", "latency_p99_s")]
                lc.append(" / ".join(f"{x * 1e3:.2f}" if x is not None else "-" for x in m))
            lat.append(f"| {ep} | {pl} | " + " | ".join(lc) + " |")
    used = _placements(es)
    out = ["## HTTP: native, bridge, published port, host (seed 004)", "",
           "The same server and the same wrk in each flavor's test host: "
           + "; ".join(f"{p}: {PLACEMENT_NOTE[p]}" for p in used)
           + ". Medians of the repetitions; \"/ native\" is each placement's requests/s over the native "
             "process's in the same flavor (above 1: faster than native)."
           + (" Seed 004 measured on a 4-vCPU AWS instance with wrk -t32 and Node 18; its bridge container was "
              "reached through a published port." if seed else ""), ""]
    out += rows + ["", "Latency (wrk's mean and percentiles, medians of the repetitions):", ""] + lat
    return "\n".join(out) + "\n"


def pingpong_table(doc):
    """Seed 002's point: message passing over the container network. Round
    trips of a small message per placement, per flavor, against native."""
    es = _entries(doc, "pingpong")
    if not es:
        return ""
    mp = (doc.get("seed") or {}).get("message_passing") or {}
    flavors = _flavors(es)
    head = ["placement"] + [f"{f} mean / p50 / p99 (µs)" for f in flavors]
    head += ["patched/stock, p50 [95% CI]"] if _ab(flavors) else []
    head += [f"{f} / native, p50 [95% CI]" for f in flavors]
    head += ["seed: Docker / bare metal"] if mp else []
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    n = {x for e in es for x in e.get("round_trips", []) if x}
    cpus = {x for e in es for x in e.get("cpus", []) if x}
    pinned = ""
    if len(cpus) == 1:
        srv, cli = cpus.pop().split(",")
        pinned = (f". In each, the server runs on CPU {srv} and the client on CPU {cli}" if srv != cli
                  else f". In each, both run on CPU {srv}")
    for pl in _placements(es):
        cells = [pl]
        for f in flavors:
            m = [median_of(_samples(es, f, pl, k)) for k in ("mean_us", "p50_us", "p99_us")]
            cells.append(" / ".join(fmt_v(x, "µs") for x in m))
        cells += _against(es, flavors, pl, "p50_us", True)
        if mp:
            v = mp.get("mpi_communication_time")
            cells.append(f"{v:.2f} (MPI communication time)" if pl == "bridge" and isinstance(v, (int, float))
                         else "-")
        rows.append("| " + " | ".join(cells) + " |")
    where = {"native": "two processes in the test host", "bridge": "two containers on the bridge network",
             "host": "two containers on the host network"}
    out = ["## TCP ping-pong: message passing (seed 002)", "",
           f"A client and a server exchange a small message {', '.join(map(str, sorted(n)))} times, one round "
           "trip after the other (hack/hosts/testimages/pingpong), as "
           + "; ".join(f"{p}: {where[p]}" for p in _placements(es)) + pinned
           + ". Each run's mean, median (p50) and 99th percentile round trip, medians of the repetitions; the "
             "ratios are of the p50s (a run's mean moves with a few preempted round trips)."]
    if mp:
        said = [f"{what} {mp[k]}x bare metal's" for k, what in (("mpi_communication_time", "MPI communication time"),
                                                                 ("run_time_mean", "run time on average"),
                                                                 ("run_time_max", "run time at most"))
                if isinstance(mp.get(k), (int, float))]
        out[-1] += f" Seed 002 ({mp.get('note', 'MPI over the container network')}): " + ", ".join(said) + "."
    return "\n".join(out + [""] + rows) + "\n"


def plot_placements(doc, outdir, plt):
    """overhead-placements.png: per endpoint (and ping-pong), each placement
    against native, per flavor, with the seed's ratio beside."""
    panels = []
    seed = (doc.get("seed") or {}).get("http_rps") or {}
    for ep in dict.fromkeys(e.get("endpoint") or "/" for e in _entries(doc, "http")):
        sub = [e for e in _entries(doc, "http") if (e.get("endpoint") or "/") == ep]
        panels.append((f"HTTP {ep}: requests/s", sub, "rps", False, seed.get(ep) or {}, "seed 004"))
    pp = _entries(doc, "pingpong")
    if pp:
        mp = (doc.get("seed") or {}).get("message_passing") or {}
        v = mp.get("mpi_communication_time")
        panels.append(("TCP ping-pong: median round trip", pp, "p50_us", True,
                       {"native": 1.0, "bridge": v} if isinstance(v, (int, float)) else {},
                       "seed 002: MPI communication time"))
    panels = [p for p in panels if "native" in _placements(p[1])]
    if not panels:
        return []
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 4), squeeze=False)
    for ax, (title, es, field, lower, sd, seed_label) in zip(axes[0], panels):
        pls = _placements(es)
        flavors = _flavors(es)
        series = [(f, f"C{i}") for i, f in enumerate(flavors)]
        has_seed = any(isinstance(sd.get(p), (int, float)) for p in pls if p != "native")
        width = 0.8 / (len(series) + (1 if has_seed else 0))
        for j, (f, colour) in enumerate(series):
            native = median_of(_samples(es, f, "native", field))
            ys, lo, hi = [], [], []
            for p in pls:
                xs = _samples(es, f, p, field)
                m = median_of(xs)
                r = m / native if m is not None and native else 0
                ys.append(r)
                lo.append(r - min(xs) / native if xs and native else 0)
                hi.append(max(xs) / native - r if xs and native else 0)
            ax.bar([i + (j - (len(series) - (0 if has_seed else 1)) / 2) * width for i in range(len(pls))], ys,
                   width, yerr=[lo, hi], capsize=3, color=colour, label=f)
        if has_seed:
            sn = sd.get("native")
            ys = [sd[p] / sn if isinstance(sd.get(p), (int, float)) and sn else 0 for p in pls]
            ax.bar([i + (len(series) - (len(series)) / 2) * width for i in range(len(pls))], ys, width,
                   color="0.75", hatch="//", edgecolor="0.4", label=seed_label)
        ax.axhline(1, color="k", lw=0.8)
        ax.set_xticks(range(len(pls)))
        ax.set_xticklabels(pls)
        ax.set_title(title, fontsize=9)
        ax.set_ylabel("relative to native (" + ("lower" if lower else "higher") + " is better)")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    fig.suptitle(f"{doc['suite']}: each placement against a native process (medians, min-max)")
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "overhead-placements.png"), dpi=120)
    return ["overhead-placements.png"]
