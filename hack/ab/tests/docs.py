"""Results documents for the report tests, and their reports."""
import json
import os
import shutil
import tempfile

from ab import report


def results_doc(kind, seed=None):
    return {"suite": "t", "kind": kind, "repetitions": 3, "started": "x", "finished": "y",
            "machine": {"cpu": "c", "cpus": 2, "memory_gib": 1, "kernel": "k"},
            "daemons": {"stock": {"version": "a"}, "patched": {"version": "b"}}, "seed": seed or {}, "results": []}


def write_report(test, doc):
    d = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, d, True)
    with open(os.path.join(d, "results.json"), "w") as f:
        json.dump(doc, f)
    report.write(d)
    with open(os.path.join(d, "report.md")) as f:
        return d, f.read()


def render(doc):
    """Write doc as results.json, build the report; (report.md, the files written)."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "results.json"), "w") as f:
            json.dump(doc, f)
        report.write(d)
        with open(os.path.join(d, "report.md")) as f:
            md = f.read()
        return md, {n: os.path.getsize(os.path.join(d, n)) for n in os.listdir(d)}
