"""moby-ab harness.

  python3 -m ab run SUITE [--results DIR]   run a suite (a file, or a name in hyperfine-suites/)
  python3 -m ab validate SUITE...           check suite files without running anything (and warn,
                                            on stderr, of too few repetitions for a verdict)
  python3 -m ab report DIR                  rebuild report.md and plots from DIR/results.json
  python3 -m ab report --nodes DIR... --out OUT
                                            one report over several nodes' results of a suite
                                            (each node's ratios and a pooled one; ab/nodes.py)
  python3 -m ab compare A B [--margin 0.05]  patched/stock of run B against run A, per comparison
                                            both have (ab/compare.py)

A suite file whose only key is `include = ["a", "b"]` runs those suites, each
into a subdirectory of the results directory.

run exits 0 when every sample succeeded, 1 when any failed (a measured
sample, a warm-up or a patched daemon's restore; stock's restores are
measured, see report.failures) (after writing
the report and naming each cell with failures), 130 when interrupted, 2 on
an invalid suite, a host error, or results whose values cannot be matched
to their repetitions (report.Unpairable).
"""
import argparse
import datetime
import os
import sys
import tomllib

from . import hosts, report, stats, suite


def expand(name):
    """SUITE -> [paths]: a group's members, or the suite itself."""
    path = suite.resolve(name, hosts.ROOT)
    with open(path, "rb") as f:
        try:
            data = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise suite.SuiteError(f"{path}: {e}") from None
    if "include" in data:
        if set(data) - {"include", "name", "description"}:
            raise suite.SuiteError(f"{path}: a group suite has only name, description and include")
        out = []
        for member in data["include"]:
            out += expand(os.path.join(os.path.dirname(path), member) if member.endswith(".toml") else member)
        return out
    return [path]


def warn(suites):
    """Print the suites' warnings (suite.Suite.warnings) on stderr, each
    suite's once however often (and by whatever path) it is named."""
    seen = set()
    for s in suites:
        if os.path.realpath(s.path) not in seen:
            seen.add(os.path.realpath(s.path))
            for w in s.warnings:
                print(f"warning: {w}", file=sys.stderr)


def group_summary(done, top):
    """The summary tables of a run's suites, [(suite, its results
    directory)]. With more than one, their comparisons are one Holm family
    (report.adjust_rows): the summary says so, and is written to
    top/summary.md as well; each suite's own report.md adjusts within
    itself."""
    docs = [(s, report.load(out)) for s, out in done]
    rows = [report.comparisons(doc, adjust=False) for _, doc in docs] if len(docs) > 1 else [None] * len(docs)
    lines = []
    if len(docs) > 1:
        m = report.adjust_rows([r for r in rows if r is not None])
        lines += [f"One Holm family across the {len(docs)} suites of this run ({m} comparisons): the p-values, "
                  "intervals and verdicts below are adjusted across all of them (each suite's report.md adjusts "
                  "within itself, and may call what this does not).", ""]
    for (s, doc), r in zip(docs, rows):
        lines += [f"## {s.name} ({s.kind})", "", report.summary_table(doc, r), ""]
    text = "\n".join(lines)
    if len(docs) > 1:
        with open(os.path.join(top, "summary.md"), "w") as f:
            f.write(text)
    return text


def main(argv=None):
    p = argparse.ArgumentParser(prog="ab", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("suite")
    r.add_argument("--results")
    v = sub.add_parser("validate")
    v.add_argument("suites", nargs="+")
    rp = sub.add_parser("report")
    rp.add_argument("dir", nargs="?")
    rp.add_argument("--nodes", nargs="+", metavar="DIR", help="several nodes' results directories")
    rp.add_argument("--out", help="with --nodes: where the report goes")
    c = sub.add_parser("compare", help="patched/stock of run B against run A (ab.compare)")
    c.add_argument("a", metavar="A", help="a results directory")
    c.add_argument("b", metavar="B", help="a results directory of the same kind")
    c.add_argument("--margin", type=float, default=stats.MARGIN,
                   help=f"the noise threshold: level within it (a fraction, default {stats.MARGIN})")
    a = p.parse_args(argv)
    if a.cmd == "compare" and not 0 < a.margin < 0.5:
        p.error(f"compare: --margin wants a fraction above 0 and below 0.5, got {a.margin}")
    if a.cmd == "report" and bool(a.dir) == bool(a.nodes):
        p.error("report: give either DIR or --nodes DIR... --out OUT")
    if a.cmd == "report" and a.nodes and (not a.out or len(a.nodes) < 2):
        p.error("report --nodes: give two or more nodes' directories and --out")
    try:
        if a.cmd == "validate":
            loaded = []
            for name in a.suites:
                for path in expand(name):
                    s = suite.load(path)
                    loaded.append(s)
                    print(f"{path}: ok ({s.kind}, {s.repetitions} repetitions)")
            warn(loaded)
            return 0
        if a.cmd == "report" and a.nodes:
            from . import nodes
            try:
                nodes.write(nodes.load_nodes(a.nodes), a.out)
            except (OSError, ValueError) as e:
                raise suite.SuiteError(str(e)) from None
            with open(os.path.join(a.out, "report.md")) as f:
                print(f.read())
            return 0
        if a.cmd == "compare":
            from . import compare
            try:
                print(compare.table(report.load(a.a), report.load(a.b), a.margin, paths=(a.a, a.b)))
            except (OSError, ValueError) as e:
                raise suite.SuiteError(f"compare: {e}") from None
            return 0
        if a.cmd == "report":
            doc = report.write(a.dir)
            print(report.summary_table(doc))
            return 0
        paths = expand(a.suite)
        suites = [suite.load(x) for x in paths]  # validate everything before starting
        warn(suites)
        if any(s.needs_hosts for s in suites) and os.geteuid() != 0:
            raise suite.SuiteError("running a suite needs root (test hosts are network namespaces)")
        stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
        top = a.results or os.path.join(hosts.ROOT, "results", f"{os.path.basename(a.suite).removesuffix('.toml')}-{stamp}")
        ok = True
        failed = 0
        done = []
        for s in suites:
            out = top if len(suites) == 1 else os.path.join(top, s.name)
            os.makedirs(out, exist_ok=True)
            from .runner import Runner
            ok = Runner(s, out).run() and ok
            report.write(out)
            done.append((s, out))
            if not ok:
                break
        print()
        print(group_summary(done, top))
        for s, out in done:
            for flavor, cell, params, what in report.failures(report.load(out)):
                failed += sum(n for n, _ in what)
                print(f"FAILED: {s.name}: {flavor} {cell} ({params}): " + ", ".join(f"{n} {w}" for n, w in what))
        print(f"results: {top}")
        if not ok:
            return 130
        if failed:
            print(f"error: {failed} failure(s); the report is written, the run is not a success",
                  file=sys.stderr)
            return 1
        return 0
    except (suite.SuiteError, hosts.HostError, report.Unpairable) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
