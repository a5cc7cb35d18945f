"""Where a pull's time goes, seen at the registry: its blob requests, the
connections that carried them and the bytes they moved over time, from
hack/hosts/faultreg.py's log (the proxy a profile with conn_rate puts in front of
the registry, pull-hostile's faults.log).

  python3 -m ab.timeline LOG [--out DIR] [--rate RATE] [--conn-rate RATE]

A pull is one test host's blob requests (the host from its connections'
client address, 10.199.<index>.2: hack/lib.sh's index; its second link's
10.199.<10+index>.2), from its first blob GET to the end of its last
response, ended by GAP seconds in which none of its requests was open, or
by a blob it asked for whole asked for whole again while none was open
(the next pull of the image).
Each pull's row: its duration at the registry, requests and those with a
Range, bytes sent, connections used, the most requests open at once, when
the first range began, when the most requests were first and last open
(what follows is the tail), and the floors its bytes give: the link's
(--rate) and the per-connection cap's times the most requests open
(--conn-rate). Bytes are spread evenly over each response's time (a capped
connection sends at its cap), in BIN-second bins.

Writes DIR/timeline.json (the rows, and the bins of each host's median
pull), DIR/timeline.md
(a row per pull and the median pull of each host) and DIR/timeline.png
(the median pull of each host: requests open and goodput over time) when
--out is given; prints timeline.md otherwise.
"""
import argparse
import json
import os
import sys

from . import units

GAP = 2.0
BIN = 0.1
HOSTS = {1: "stock", 2: "patched", 3: "ctrd", 4: "podman"}


class LogError(ValueError):
    pass


def host_of(addr):
    """10.199.<i>.2 -> lib.sh's test host of index i (or 10+i: its second
    link); any other address is its own name."""
    p = addr.split(".")
    if len(p) == 4 and p[:2] == ["10", "199"] and p[2].isdigit():
        i = int(p[2])
        return HOSTS.get(i if i < 10 else i - 10, addr)
    return addr


def parse(lines):
    """faultreg's log lines -> [request]: each blob GET's host, connection,
    path, start and end (unix s), status, bytes sent and Range asked for.
    Lines of other kinds are skipped; a malformed CONN, BLOB or SENT line
    raises LogError naming its line number."""
    addr, open_, reqs = {}, {}, []
    for no, line in enumerate(lines, 1):
        f = line.split()
        if not f or f[0] not in ("CONN", "BLOB", "SENT"):
            continue
        try:
            if f[0] == "CONN":
                addr[int(f[2])] = f[3]
            elif f[0] == "BLOB" and f[1] == "start":
                conn = int(f[3])
                open_[conn] = {"conn": conn, "path": f[5], "start": float(f[2]), "end": None,
                               "status": None, "bytes": 0, "range": None}
            elif f[0] == "BLOB" and f[1] == "end":
                r = open_.pop(int(f[3]), None)
                if r is not None:
                    r["end"] = float(f[2])
                    reqs.append(r)
            elif f[0] == "SENT" and len(f) >= 6:
                # <status> <bytes> <path> <range> <connection>
                r = open_.get(int(f[5]))
                if r is not None and r["path"] == f[3]:
                    r["status"], r["bytes"] = int(f[1]), int(f[2])
                    r["range"] = None if f[4] == "-" else f[4]
            elif f[0] not in ("BLOB", "SENT"):
                raise IndexError
        except (IndexError, ValueError) as e:
            raise LogError(f"line {no}: not a faultreg log line: {line.strip()!r}") from e
    for r in reqs:
        r["host"] = host_of(addr.get(r["conn"], "?"))
    return sorted(reqs, key=lambda r: r["start"])


def pulls(reqs, gap=GAP):
    """[request] -> [pull]: each host's requests, split where none of them
    was open for gap seconds, or where, none open, a blob the pull already
    asked for whole is asked for whole again (the next pull of the same
    image, sooner than gap)."""
    by_host, out = {}, []
    for r in reqs:
        by_host.setdefault(r["host"], []).append(r)
    for host, rs in by_host.items():
        cur, last_end, whole = None, None, set()
        for r in rs:
            idle = cur is not None and r["start"] >= last_end
            if cur is None or r["start"] - last_end >= gap or (idle and r["range"] is None and r["path"] in whole):
                cur = {"host": host, "requests": []}
                out.append(cur)
                last_end, whole = r["end"], set()
            cur["requests"].append(r)
            last_end = max(last_end, r["end"])
            if r["range"] is None:
                whole.add(r["path"])
    out.sort(key=lambda p: p["requests"][0]["start"])
    return out


def summarise(pull, rate=None, conn_rate=None, bin_s=BIN):
    """A pull's row and bins (times in s from its first request)."""
    rs = pull["requests"]
    t0 = rs[0]["start"]
    end = max(r["end"] for r in rs) - t0
    # requests open over time: +1 at a start, -1 at an end (ends first)
    events = sorted([(r["start"] - t0, 1) for r in rs] + [(r["end"] - t0, -1) for r in rs],
                    key=lambda e: (e[0], e[1]))
    n, most, first_most, last_most = 0, 0, 0.0, 0.0
    for t, d in events:
        n += d
        if n > most:
            most, first_most = n, t
    n = 0
    for t, d in events:
        if n == most:  # the interval [previous event, t) had the most open
            last_most = t
        n += d
    nbins = max(1, int(end / bin_s) + 1)
    openb, good = [0.0] * nbins, [0.0] * nbins
    for r in rs:
        a, b = r["start"] - t0, r["end"] - t0
        for k in range(int(a / bin_s), min(nbins, int(b / bin_s) + 1)):
            lo, hi = max(a, k * bin_s), min(b, (k + 1) * bin_s)
            if hi <= lo:
                continue
            openb[k] += (hi - lo) / bin_s
            if b > a:
                good[k] += r["bytes"] * (hi - lo) / (b - a) / bin_s
    ranged = [r for r in rs if r["range"]]
    sent = sum(r["bytes"] for r in rs)
    row = {
        "host": pull["host"],
        "start": t0,
        "duration_s": round(end, 3),
        "requests": len(rs),
        "ranges": len(ranged),
        "bytes": sent,
        "connections": len({r["conn"] for r in rs}),
        "most_open": most,
        "first_range_s": round(min(r["start"] for r in ranged) - t0, 3) if ranged else None,
        "most_open_from_s": round(first_most, 3),
        "most_open_until_s": round(last_most, 3),
        "tail_s": round(end - last_most, 3),
        "link_floor_s": round(sent * 8 / rate, 3) if rate else None,
        "cap_floor_s": round(sent * 8 / min(rate or float("inf"), conn_rate * most), 3) if conn_rate else None,
        "bins": {"bin_s": bin_s, "open": [round(x, 2) for x in openb],
                 "goodput_bytes_per_s": [round(x) for x in good]},
    }
    return row


def by_host(rows):
    """rows grouped by host, in the order the hosts first pulled."""
    out = {}
    for r in rows:
        out.setdefault(r["host"], []).append(r)
    return out


def median_pull(rows):
    """The pull of median duration (the lower one of an even count)."""
    s = sorted(rows, key=lambda r: r["duration_s"])
    return s[(len(s) - 1) // 2]


def fmt(x):
    return "-" if x is None else f"{x:.2f} s"


def cells(r, sent=True):
    """A row's columns from its duration on, as the tables show them
    (sent: with the MiB sent)."""
    out = [fmt(r["duration_s"]), str(r["requests"]), str(r["ranges"])]
    if sent:
        out.append(f"{r['bytes'] / 2**20:.1f}")
    out += [str(r["connections"]), str(r["most_open"])]
    out += [fmt(r[k]) for k in ("first_range_s", "most_open_from_s", "most_open_until_s", "tail_s",
                                "link_floor_s", "cap_floor_s")]
    return out


def markdown(rows, log, rate=None, conn_rate=None):
    out = [f"# Where the pulls' time goes, at the registry ({os.path.basename(log)})", ""]
    out.append("Times in seconds from each pull's first blob request, as the registry saw them "
               "(hack/hosts/faultreg.py's log; `python3 -m ab.timeline`). most open: the most blob "
               "requests open at once, from/until: when that many were first and last open; "
               "tail: what followed. Floors: the pull's bytes at the link's rate"
               + (f" ({units.plain(rate / 1e6)} Mbit/s)" if rate else "")
               + ", and at the per-connection cap"
               + (f" ({units.plain(conn_rate / 1e6)} Mbit/s)" if conn_rate else "")
               + " times the most requests open.")
    out.append("")
    hdr = ("| host | pull | duration | requests | ranges | MiB sent | connections | most open | "
           "first range | most open from | until | tail | link floor | cap floor |")
    out += ["## Each host's median pull", "", hdr, "|" + " --- |" * 14]

    def line(r, label):
        return "| " + " | ".join([r["host"], label] + cells(r)) + " |"
    for host, rs in by_host(rows).items():
        m = median_pull(rs)
        out.append(line(m, f"median of {len(rs)}: #{rows.index(m) + 1}"))
    out += ["", "## Every pull", "", hdr, "|" + " --- |" * 14]
    for i, r in enumerate(rows, 1):
        out.append(line(r, f"#{i}"))
    return "\n".join(out) + "\n"


def plot(rows, path, rate=None, conn_rate=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    hosts = by_host(rows)
    fig, axes = plt.subplots(len(hosts), 1, figsize=(8, 2.4 * len(hosts)), squeeze=False, sharex=True)
    for ax, (host, rs) in zip(axes[:, 0], hosts.items()):
        m = median_pull(rs)
        b = m["bins"]
        t = [i * b["bin_s"] for i in range(len(b["open"]))]
        ax.step(t, [g * 8 / 1e6 for g in b["goodput_bytes_per_s"]], where="post", color="tab:blue",
                label="goodput")
        if rate:
            ax.axhline(rate / 1e6, color="grey", ls="--", lw=0.8, label="link")
        ax.set_ylabel("Mbit/s")
        ax2 = ax.twinx()
        ax2.step(t, b["open"], where="post", color="tab:orange", label="requests open")
        if conn_rate:
            ax.step(t, [o * conn_rate / 1e6 for o in b["open"]], where="post", color="tab:green", lw=0.8,
                    ls=":", label="cap x open")
        ax2.set_ylabel("requests open")
        ax.set_title(f"{host}: median of {len(rs)} pulls, {m['duration_s']:.2f} s", fontsize=9)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")
    axes[-1, 0].set_xlabel("s from the pull's first blob request")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def document(rows, log, rate, conn_rate, gap):
    """timeline.json: every pull's row; bins only for each host's median
    pull (the one the plot draws)."""
    medians = {id(median_pull(rs)) for rs in by_host(rows).values()}
    return {"log": os.path.basename(log), "rate_bits_per_s": rate, "conn_rate_bits_per_s": conn_rate,
            "gap_s": gap, "pulls": [r if id(r) in medians else {k: v for k, v in r.items() if k != "bins"}
                                    for r in rows]}


def read(log, rate=None, conn_rate=None, gap=GAP):
    """The log's pulls' rows; LogError if it has no blob request."""
    with open(log) as f:
        reqs = parse(f)
    if not reqs:
        raise LogError("no blob request in it")
    return [summarise(pl, rate, conn_rate) for pl in pulls(reqs, gap)]


def write(rows, log, outdir, rate=None, conn_rate=None, gap=GAP):
    """timeline.json, .md and .png in outdir."""
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "timeline.json"), "w") as f:
        json.dump(document(rows, log, rate, conn_rate, gap), f, indent=1)
        f.write("\n")
    with open(os.path.join(outdir, "timeline.md"), "w") as f:
        f.write(markdown(rows, log, rate, conn_rate))
    plot(rows, os.path.join(outdir, "timeline.png"), rate, conn_rate)


def medians(rows):
    """Each host's median pull's row, without its bins, in the order the
    hosts first pulled."""
    return [{k: v for k, v in median_pull(rs).items() if k != "bins"} | {"pulls": len(rs)}
            for rs in by_host(rows).values()]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m ab.timeline", description=__doc__.split("\n\n")[0])
    p.add_argument("log", help="hack/hosts/faultreg.py's log")
    p.add_argument("--out", help="write timeline.json, .md and .png here")
    p.add_argument("--rate", help="the link's rate, e.g. 200mbit")
    p.add_argument("--conn-rate", help="the registry's cap per connection, e.g. 12mbit")
    p.add_argument("--gap", type=float, default=GAP, help=f"seconds of quiet that end a pull (default {GAP})")
    a = p.parse_args(argv)
    try:
        rate = units.rate(a.rate) if a.rate else None
        conn_rate = units.rate(a.conn_rate) if a.conn_rate else None
    except ValueError as e:
        p.error(str(e))
    if a.gap <= 0:
        p.error("--gap: want a positive number of seconds")
    try:
        rows = read(a.log, rate, conn_rate, a.gap)
    except (OSError, LogError) as e:
        print(f"error: {a.log}: {e}", file=sys.stderr)
        return 2
    if not a.out:
        sys.stdout.write(markdown(rows, a.log, rate, conn_rate))
        return 0
    write(rows, a.log, a.out, rate, conn_rate, a.gap)
    print(f"{a.out}: timeline.json, timeline.md, timeline.png ({len(rows)} pulls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
