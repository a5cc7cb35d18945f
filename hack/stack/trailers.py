#!/usr/bin/env python3
"""The patches' trailers against each other and against the docs.

Every patch of patches/ (and patches/containerd/) is checked for:

- one `Upstream:` and one `Drop-when:` trailer; `Upstream:` says yes or no
  (not containerd's patches, which are containerd's own commits);
- an author whose address is the one its `Signed-off-by:` gives (a DCO
  check upstream compares them);
- an "Upstream: yes" that names other patches (0025, 0009-0011) naming
  only patches that are meant for upstream too: a patch cannot go upstream
  with one that does not;
- every "Upstream: yes" patch of patches/ named by its file in a proposal
  (docs/proposals/*.md), with the patch files to send;
- docs/patches.md's table giving each patch the same yes or no.

The patches are those a directory's `series` file lists, in order. Given a
directory other than the project's patches/ (`--patches DIR`), the checks
that need the docs, and containerd's patches, are left out.

usage: hack/stack/trailers.py [--patches DIR] [ROOT]   (exit 1 with one line per finding)
"""
import argparse
import glob
import os
import re
import sys

NUMBERS = re.compile(r"\b(\d{4})(?:-(\d{4}))?\b")
ROW = re.compile(r"^\| (\d{4}) \|.*\|\s*(yes|no)\b[^|]*\|\s*$")


def message(text):
    """The From: address and the commit message of a patch file."""
    author = ""
    m = re.search(r"^From: .*<([^>]+)>$", text, re.M)
    if m:
        author = m.group(1)
    head, _, _ = text.partition("\n---\n")
    _, _, body = head.partition("\n\n")
    return author, body


def trailers(body):
    """{name: [values]}, continuation lines (a leading space) joined."""
    out = {}
    last = None
    for line in body.splitlines():
        m = re.match(r"^(Upstream|Drop-when|Signed-off-by): ?(.*)$", line)
        if m:
            last = m.group(1)
            out.setdefault(last, []).append(m.group(2).strip())
        elif last and line[:1] in (" ", "\t") and line.strip():
            out[last][-1] += " " + line.strip()
        else:
            last = None
    return out


def named(text):
    """The patch numbers a trailer names, ranges expanded."""
    nums = set()
    for a, b in NUMBERS.findall(text):
        if b and int(b) > int(a):
            nums.update(f"{n:04d}" for n in range(int(a), int(b) + 1))
        else:
            nums.add(a)
    return nums


def series(d):
    """The patch files d/series lists, in order, as paths ([] without one)."""
    try:
        with open(os.path.join(d, "series"), encoding="utf-8") as f:
            names = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    except FileNotFoundError:
        return []
    return [os.path.join(d, n) for n in names]


def check(root, patches=None):
    findings = []
    ours = os.path.join(root, "patches")
    project = patches is None or os.path.realpath(patches) == os.path.realpath(ours)
    patches = ours if project else patches
    status = {}
    upstream = {}
    files = {}
    # containerd's patches are containerd's commits: no trailers of this
    # series, only the author's sign-off
    todo = [(p, True) for p in series(patches)]
    if project:
        todo += [(p, False) for p in series(os.path.join(ours, "containerd"))]
    for path, mine in todo:
        name = os.path.relpath(path, root) if project else os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            author, body = message(f.read())
        t = trailers(body)
        ups = t.get("Upstream", [""])[0]
        verdict = ups.split(None, 1)[0].rstrip(",;(") if ups else ""
        if mine:
            for key in ("Upstream", "Drop-when"):
                n = len([v for v in t.get(key, []) if v])
                if n != 1:
                    findings.append(f"{name}: {n} {key}: trailers, want 1")
            if ups and verdict not in ("yes", "no"):
                findings.append(f"{name}: Upstream: says neither yes nor no: {ups!r}")
        signed = [re.search(r"<([^>]+)>", s) for s in t.get("Signed-off-by", [])]
        addrs = {m.group(1) for m in signed if m}
        if not addrs:
            findings.append(f"{name}: no Signed-off-by:")
        elif author not in addrs:
            findings.append(f"{name}: author <{author}> is not among the sign-offs {sorted(addrs)}")
        if mine:
            num = os.path.basename(path)[:4]
            files[num] = os.path.basename(path)
            status[num] = verdict
            upstream[num] = ups
    for num, ups in upstream.items():
        if status[num] != "yes":
            continue
        for other in sorted(named(ups) - {num}):
            if other in status and status[other] != "yes":
                findings.append(f"{files[num]}: Upstream: yes with {other}, which is not meant for upstream")
    if not project:
        return findings
    proposals = ""
    for path in sorted(glob.glob(os.path.join(root, "docs", "proposals", "*.md"))):
        with open(path, encoding="utf-8") as f:
            proposals += f.read()
    for num, name in files.items():
        if status[num] == "yes" and name not in proposals:
            findings.append(f"{name}: Upstream: yes, but no docs/proposals/*.md names it")
    table = {}
    doc = os.path.join(root, "docs", "patches.md")
    if os.path.exists(doc):
        with open(doc, encoding="utf-8") as f:
            for line in f:
                m = ROW.match(line.rstrip("\n"))
                if m and m.group(1) not in table:
                    table[m.group(1)] = m.group(2)
    for num in files:
        if num not in table:
            findings.append(f"docs/patches.md: no row for {num}")
        elif status[num] in ("yes", "no") and table[num] != status[num]:
            findings.append(f"docs/patches.md: {num} says {table[num]}, its Upstream: trailer {status[num]}")
    return findings


def main(argv):
    ap = argparse.ArgumentParser(description="The patches' trailers against each other and the docs.")
    ap.add_argument("--patches", help="a directory with a series file (default: ROOT/patches, with the docs)")
    ap.add_argument("root", nargs="?", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    args = ap.parse_args(argv[1:])
    findings = check(args.root, args.patches)
    for f in findings:
        print(f"trailers: {f}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
