#!/usr/bin/env python3
"""The docs against the committed results, and against each other.

Fails (exit 1, one line per finding) when
- a doc links to a path under docs/measurements/ that does not exist, or
  names a run (<date>-<series>-<name>) that is not there; a run removed
  since may be named by the commit that has it, as
  `git show REV:docs/measurements/<run>/...`, and that path must exist
  at REV;
- a directory under docs/measurements/ is cited by no doc (the index,
  docs/measurements.md, and the runs' own files do not count);
- the index misses a directory or lists one that is gone;
- the docs quote durations of `make ab` or `make test` that differ from
  each other, or, for `make ab`, from the default run they cite;
- docs/forest.md is not what docs/forest.json's runs give, README's
  headline ratios are not among its rows, or README's count of verdicts
  is not its count.

Current docs: README.md, CHANGELOG.md, CONTRIBUTING.md, docs/*.md,
docs/reference/, docs/proposals/, docs/forest.json. The runs' own
READMEs and reports are checked for their links and names only.

usage: hack/check-docs.py   (any directory; PYTHONPATH needs no setting)"""
import collections
import glob
import json
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MEAS = os.path.join(ROOT, "docs", "measurements")
INDEX = os.path.join(ROOT, "docs", "measurements.md")

# a run's name: date, then a series hash (or what a run that reads others
# did), then the suite's or script's name
RUN = re.compile(r"\b20\d\d-\d\d-\d\d-(?:[0-9a-f]{10}|compare|rejudged)(?:-[0-9a-z]+)*\b")
LINK = re.compile(r"\]\(([^)\s]+)\)")
GIT_SHOW = re.compile(r"git show ([0-9a-f]{7,40}):(docs/measurements/[^\s`]+)")
# `make ab` or `make test` (as README gives them: no arguments), then a
# duration in minutes in the same sentence
# (no other code span between them: "`make test` runs it after
# `test-harness`, ... 2 min" is the linter's time)
DURATION = re.compile(r"`make (ab|test)`[^.;`]{0,60}?\b(\d+) ?(?:min|minutes)\b", re.S)


def current_docs():
    out = [os.path.join(ROOT, f) for f in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")]
    out += sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    for sub in ("reference", "proposals"):
        out += sorted(p for p in glob.glob(os.path.join(ROOT, "docs", sub, "**", "*"), recursive=True)
                      if os.path.isfile(p) and p.endswith((".md", ".json", ".toml")))
    out.append(os.path.join(ROOT, "docs", "forest.json"))
    return [p for p in out if os.path.isfile(p)]


def run_docs():
    return sorted(p for p in glob.glob(os.path.join(MEAS, "**", "*.md"), recursive=True))


def rel(p):
    return os.path.relpath(p, ROOT)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def run_of(name, runs):
    """The run a name starts with (a name may go on into a subdirectory or
    a file: 2026-11-27-e7e1cced32-default/pull-quick), or None."""
    best = None
    for r in runs:
        if name == r or name.startswith(r + "-") or name.startswith(r + "/"):
            if best is None or len(r) > len(best):
                best = r
    return best


def git_has(pairs):
    """{(rev, path): bool} for whether path exists at rev."""
    if not pairs:
        return {}
    pairs = sorted(pairs)
    inp = "".join(f"{rev}:{path}\n" for rev, path in pairs)
    out = subprocess.run(["git", "-C", ROOT, "cat-file", "--batch-check"], input=inp, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    return {p: not line.endswith(" missing") for p, line in zip(pairs, out)}


def check_names(findings):
    runs = sorted(d for d in os.listdir(MEAS) if os.path.isdir(os.path.join(MEAS, d)))
    cited = collections.defaultdict(set)
    shows = []
    for path in current_docs() + run_docs():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        is_current = not path.startswith(MEAS + os.sep) and path != INDEX
        where = os.path.dirname(path)
        historic = set()  # the runs this file cites by commit
        for m in GIT_SHOW.finditer(text):
            shows.append((m.group(1), m.group(2).rstrip(").,;"), f"{rel(path)}:{line_of(text, m.start())}"))
            historic.add(m.group(2)[len("docs/measurements/"):].split("/")[0])
        for m in LINK.finditer(text):
            target = m.group(1).split("#")[0]
            if not target or "://" in target or target.startswith("mailto:"):
                continue
            full = os.path.normpath(os.path.join(where, target))
            if full.startswith(MEAS + os.sep) and not os.path.exists(full):
                findings.append(f"{rel(path)}:{line_of(text, m.start())}: link to {rel(full)}, which does not exist")
        for m in RUN.finditer(text):
            name = m.group(0)
            if any(h == name or h.startswith(name + "-") for h in historic):
                continue  # a removed run named beside its `git show`, or its date and series
            r = run_of(name, runs)
            if r is None and any(x.startswith(name + "-") for x in runs):
                continue  # a date and series alone: a kept run's
            if r is None:
                findings.append(f"{rel(path)}:{line_of(text, m.start())}: names the run {m.group(0)}, "
                                "which is not in docs/measurements (cite a removed run as `git show REV:docs/measurements/...`)")
            elif is_current:
                cited[r].add(rel(path))
    have = git_has({(rev, p) for rev, p, _ in shows})
    for rev, p, at in shows:
        if not have[(rev, p)]:
            findings.append(f"{at}: git show {rev}:{p}: no such path at {rev}")
    for r in runs:
        if not cited[r]:
            findings.append(f"docs/measurements/{r}: no doc cites it (remove it: git keeps it), or cite it")
    with open(INDEX, encoding="utf-8") as f:
        index = f.read()
    listed = {run_of(m.group(1), runs) or m.group(1) for m in re.finditer(r"\]\(measurements/([^/)]+)", index)}
    for r in runs:
        if r not in listed:
            findings.append(f"docs/measurements.md: the index has no row for {r}")
    return runs


def check_durations(findings, runs):
    quotes = collections.defaultdict(list)
    for path in current_docs():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for m in DURATION.finditer(text):
            quotes[m.group(1)].append((int(m.group(2)), f"{rel(path)}:{line_of(text, m.start())}"))
    # make ab: the newest committed run of the default suite says how long
    # it took ("13 min, 20:52 to 21:05 UTC")
    defaults = sorted(r for r in runs if r.endswith("-default"))
    if defaults:
        with open(os.path.join(MEAS, defaults[-1], "README.md"), encoding="utf-8") as f:
            m = re.search(r"(\d+) min", f.read())
        if m:
            want = int(m.group(1))
            for got, at in quotes["ab"]:
                if got != want:
                    findings.append(f"{at}: `make ab` {got} min, but its newest committed run "
                                    f"(docs/measurements/{defaults[-1]}) took {want} min")
    for what, qs in quotes.items():
        if len({q for q, _ in qs}) > 1:
            findings.append(f"`make {what}` durations disagree: " + ", ".join(f"{q} min at {at}" for q, at in qs))


def check_headline(findings):
    sys.path.insert(0, os.path.join(ROOT, "hack"))
    from ab import forest  # the harness's own computation, from results.json
    with open(os.path.join(ROOT, "docs", "forest.json")) as f:
        spec = json.load(f)
    for run in spec["runs"]:
        if not os.path.isfile(os.path.join(ROOT, run["dir"], "results.json")):
            findings.append(f"docs/forest.json: {run['dir']} has no results.json")
            return
    drawn = forest.rows(spec)
    with open(os.path.join(ROOT, "docs", "forest.md"), encoding="utf-8") as f:
        committed = f.read()
    if committed.strip() != forest.table(drawn).strip():
        findings.append("docs/forest.md is not what docs/forest.json's runs give: regenerate it "
                        "(cd hack && PYTHONPATH=. python3 -m ab.forest ../docs/forest.json ../docs/forest.png)")
    ratios = set(re.findall(r"\| (\d+\.\d\d) \[", committed))
    verdicts = collections.Counter(re.findall(r"\| (better|worse|level|inconclusive|failed) \|$", committed, re.M))
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    m = re.search(r"^## What it buys\n(.*?)^## ", readme, re.S | re.M)
    if not m:
        findings.append("README.md: no section \"What it buys\"")
        return
    section, start = m.group(1), m.start(1)
    for r in re.finditer(r"(?<![\d.])(\d+\.\d\d)(?:-(\d+\.\d\d))?x\b", section):
        for value in filter(None, r.groups()):
            if value not in ratios:
                findings.append(f"README.md:{line_of(readme, start + r.start())}: {value}x is no ratio of "
                                "docs/forest.md, the headline runs' comparisons")
    c = re.search(r"Of the (\d+) headline comparisons.*?(\d+) better, (\d+) worse, (\d+) level, (\d+)\s+inconclusive",
                  section, re.S)
    if c:
        n, b, w, lv, i = map(int, c.groups())
        want = (sum(verdicts.values()), verdicts["better"], verdicts["worse"], verdicts["level"],
                verdicts["inconclusive"])
        if (n, b, w, lv, i) != want:
            findings.append(f"README.md: {n} comparisons, {b} better, {w} worse, {lv} level, {i} inconclusive; "
                            "docs/forest.md has %d, %d, %d, %d, %d" % want)
    else:
        findings.append("README.md: \"What it buys\" gives no count of the headline comparisons' verdicts")


def main():
    findings = []
    runs = check_names(findings)
    check_durations(findings, runs)
    check_headline(findings)
    for f in findings:
        print(f)
    if findings:
        print(f"check-docs: {len(findings)} findings")
        return 1
    print(f"check-docs: {len(runs)} runs, each cited; links, names, durations and headline figures agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
