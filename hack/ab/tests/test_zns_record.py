import contextlib
import io
import json
import os
import sys
import tempfile
import textwrap
import unittest

from ab import zns, zns_record

# A docker command line that keeps containers and their checkpoints in a
# JSON file and logs what a patched daemon logs of them.
FAKE_DOCKER = textwrap.dedent('''\
    #!{python}
    import datetime, fcntl, json, os, sys
    state, log = sys.argv[0] + ".json", sys.argv[0] + ".log"
    with open(sys.argv[0] + ".lock", "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        s = json.load(open(state)) if os.path.exists(state) else {{}}
        a = sys.argv[1:]
        def line(msg, **f):
            t = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            with open(log, "a") as o:
                o.write(f'time="{{t}}" level=info msg="{{msg}}" ' + " ".join(f"{{k}}={{v}}" for k, v in f.items()) + "\\n")
        if a[0] == "run":
            name, mib = a[a.index("--name") + 1], int(a[-1])
            s[name] = {{"id": (name.replace("-", "") * 16)[:64], "mib": mib, "cps": []}}
        elif a[0] == "logs":
            print("memholder mib=2 count=1 verified_passes=1 ok")
        elif a[:2] == ["checkpoint", "create"]:
            c = s[a[-2]]
            if a[-1] in c["cps"]:
                sys.exit("conflict")
            c["cps"].append(a[-1])
            line("Checkpoint created", checkpoint=a[-1], container=c["id"], memory=c["mib"] << 20)
        elif a[:2] == ["checkpoint", "rm"]:
            c = s[a[-2]]
            if a[-1] not in c["cps"]:
                sys.exit("no such checkpoint")
            c["cps"].remove(a[-1])
            line("Checkpoint deleted", bytes=c["mib"] << 20, checkpoint=a[-1], container=c["id"])
        elif a[:2] == ["rm", "-f"]:
            c = s.pop(a[-1])
            for cp in c["cps"]:
                line("Checkpoint deleted", bytes=c["mib"] << 20, checkpoint=cp, container=c["id"], container_removed="true")
        json.dump(s, open(state, "w"))
''').format(python=sys.executable)


def fake_docker(d):
    """FAKE_DOCKER as the executable d/docker."""
    docker = os.path.join(d, "docker")
    with open(docker, "w") as f:
        f.write(FAKE_DOCKER)
    os.chmod(docker, 0o755)
    return docker


class WorkloadTest(unittest.TestCase):
    def test_a_run_gives_a_trace_with_deletes_and_removals(self):
        with tempfile.TemporaryDirectory() as d:
            docker = fake_docker(d)
            w = zns_record.Workload(6, 3.0, seed=3, docker=docker, out=io.StringIO(), intervals=(0.2, 0.3, 0.5),
                                    replace=0.5)
            doc = w.run()
            self.assertEqual(doc["failures"], [])
            c = doc["counts"]
            self.assertGreater(c.get("created", 0), 10)
            self.assertGreater(c.get("deleted", 0), 0)
            self.assertGreater(c.get("removed", 0), 0)
            self.assertEqual(c["started"], 6 + c["removed"])
            with open(docker + ".log") as f:
                lines = f.readlines()
            events = zns.trace_from_log(lines, keep=1)
            path = os.path.join(d, "t.csv")
            zns.write_trace(path, events)
            events = zns.read_trace(path)  # a valid trace
            info = zns.describe_trace(events)
            self.assertEqual(info["creates"], c["created"])
            removed = sum("container_removed" in x for x in lines)
            self.assertGreater(removed, 0)
            self.assertEqual(info["deletes"], c["deleted"] + removed)
            # Retention held: what lives at the end is each holder's last
            # `keep` (one more where the retention was late).
            with open(docker + ".json") as f:
                state = json.load(f)
            for h in doc["holders_at_end"]:
                self.assertLessEqual(len(state[h["name"]]["cps"]), h["keep"] + 1, h)
            live = {}
            for e in events:
                live[e.key] = e.op == "create"
            self.assertEqual(sum(live.values()), sum(len(s["cps"]) for s in state.values()))

    def test_the_command_line_runs_the_workload(self):
        # As hack/zoned/zns-record.sh runs it: seconds without a unit, docker
        # from PATH; what it did on standard output.
        with tempfile.TemporaryDirectory() as d:
            docker = fake_docker(d)
            path = os.environ["PATH"]
            os.environ["PATH"] = d + os.pathsep + path
            out, err = io.StringIO(), io.StringIO()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    rc = zns_record.main(["--seconds", "2", "--containers", "3", "--seed", "2"])
            finally:
                os.environ["PATH"] = path
            self.assertEqual(rc, 0, err.getvalue())
            doc = json.loads(out.getvalue())
            self.assertEqual(doc["counts"]["started"], 3)
            self.assertEqual(doc["seconds"], 2.0)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
                    self.assertRaises(SystemExit):
                zns_record.main(["--seconds", "two"])


if __name__ == "__main__":
    unittest.main()
