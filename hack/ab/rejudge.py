"""The committed results' comparisons judged under the verdicts of
stats.verdict (five words, "level" against the suite's margin, "better"
only where the sign-flip test agrees) beside the rule they were reported
under before 2026-11-29 (the Holm-adjusted t-test alone: better or worse
below 0.05, else "n.s."), so that README and docs can say where a verdict
changed.

usage: python3 -m ab.rejudge DIR...   (DIR: a directory holding results.json
       files, searched below; prints a Markdown table of every comparison)"""
import os
import sys

from . import report, stats


def old_verdict(r, lower_is_better):
    """The verdict before 2026-11-29."""
    if r.get("failed"):
        return f"inconclusive ({r['failed']} failed)"
    if r["too_few"] or r["p"] is None:
        return f"too few samples (n={r['n']})"
    if r["p_adj"] >= stats.ALPHA:
        return "n.s."
    return "better" if (r["ratio"] < 1) == lower_is_better else "worse"


def rows(path):
    """(cell, comparison, r, lower_is_better) of every comparison in the
    results.json at path."""
    doc = report.load(os.path.dirname(path))
    for row in report.comparisons(doc):
        cell = row["cell"] + (f" ({row['arm']})" if row.get("arm") else "")
        for name, r in report.named(row):
            yield cell, name, r, row["lower_is_better"]


def table(dirs):
    out = ["| results | cell | patched against | ratio [Holm CI] | n | before | now | MDE |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    changed = total = 0
    for top in dirs:
        for d, _, files in sorted(os.walk(top)):
            if "results.json" not in files:
                continue
            try:
                found = list(rows(os.path.join(d, "results.json")))
            except (KeyError, ValueError, TypeError) as e:  # a kind with a table of its own
                out.append(f"| {d} | - | - | not judged here: {type(e).__name__} {e} | | | | |")
                continue
            for cell, name, r, lower in found:
                before, now = old_verdict(r, lower), stats.verdict(r, lower, r.get("p_adj"))
                m = stats.mde(r)
                ci = report.interval(r) if r["lo"] is not None else ""
                ratio = f"{r['ratio']:.2f} {ci}" if r["ratio"] is not None else "-"
                total += 1
                changed += before.split(" (")[0] != now.split(" (")[0]
                out.append(f"| {d} | {cell} | {name} | {ratio} | {r['n']} | {before} | {now} | "
                           f"{'' if m is None else f'{m:.2f}x'} |")
    out.append("")
    out.append(f"{total} comparisons, {changed} whose verdict word changed.")
    return "\n".join(out)


if __name__ == "__main__":
    if not sys.argv[1:]:
        sys.exit(__doc__)
    print(table(sys.argv[1:]))
