"""Runs a validated suite: prepares registry, links, daemons and images, then
measures every cell, alternating flavours, each measurement cold. Writes
results.json after every sample, so an interrupted run keeps what it measured."""
import concurrent.futures
import dataclasses
import datetime
import json
import os
import platform
import re
import shutil
import shlex
import signal
import sys
import tempfile
import time

from . import hosts, units, zns


class Results:
    def __init__(self, suite, outdir):
        self.path = os.path.join(outdir, "results.json")
        self.doc = {"suite": suite.name, "kind": suite.kind, "suite_file": os.path.relpath(suite.path, hosts.ROOT),
                    "description": suite.description, "repetitions": suite.repetitions,
                    "machine": machine(), "started": now(), "finished": None, "interrupted": False,
                    "daemons": {}, "link": {}, "seed": suite.seed, "results": []}
        self.index = {}

    def add(self, key, sample=None, error=None, **extra):
        """key: dict of the cell's identifying fields."""
        k = json.dumps(key, sort_keys=True)
        if k not in self.index:
            entry = dict(key, times_s=[], errors=[])
            entry.update({x: [] for x in extra})
            self.index[k] = entry
            self.doc["results"].append(entry)
        e = self.index[k]
        if sample is not None:
            e["times_s"].append(round(sample, 4))
        if error:
            e["errors"].append(error)
        for x, v in extra.items():
            e.setdefault(x, []).append(v)
        self.save()

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.doc, f, indent=1)
        os.replace(tmp, self.path)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def machine():
    def read(p):
        try:
            with open(p) as f:
                return f.read()
        except OSError:
            return ""
    cpu = re.search(r"model name\s*:\s*(.*)", read("/proc/cpuinfo"))
    mem = re.search(r"MemTotal:\s*(\d+)", read("/proc/meminfo"))
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "cpu": cpu.group(1) if cpu else "",
            "memory_gib": round(int(mem.group(1)) / 2**20, 1) if mem else None,
            "hostname": platform.node()}


class Progress:
    def __init__(self, total):
        self.total, self.done, self.start = total, 0, time.monotonic()

    def step(self, what):
        self.done += 1
        el = time.monotonic() - self.start
        eta = el / self.done * (self.total - self.done)
        sys.stderr.write(f"[{self.done}/{self.total}] {what}  (elapsed {fmt_t(el)}, left ~{fmt_t(eta)})\n")
        sys.stderr.flush()


def fmt_t(s):
    s = int(s)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def interleave(variants, rep):
    """ABAB order over the flavours' variants, starting flavour alternating per rep."""
    by = {}
    for v in variants:
        by.setdefault(v[0], []).append(v)
    names = sorted(by, reverse=(rep % 2 == 1))
    out, i = [], 0
    while any(by.values()):
        f = names[i % len(names)]
        if by[f]:
            out.append(by[f].pop(0))
        i += 1
    return out


def params_label(p):
    return ",".join(f"{k}={v}" for k, v in sorted(p.items())) or "defaults"


class Runner:
    def __init__(self, suite, outdir):
        self.s = suite
        self.out = outdir
        self.results = Results(suite, outdir)
        self.daemons = {}
        self.tmp = tempfile.mkdtemp(prefix="ab-run-")

    # --- life cycle -----------------------------------------------------
    def run(self):
        interrupted = False

        def on_signal(sig, frame):
            raise KeyboardInterrupt
        signal.signal(signal.SIGTERM, on_signal)
        try:
            self.prepare()
            getattr(self, "run_" + self.s.kind)()
        except KeyboardInterrupt:
            interrupted = True
            sys.stderr.write("\ninterrupted: tearing down; what was measured is kept\n")
        finally:
            self.teardown()
            self.results.doc["finished"] = now()
            self.results.doc["interrupted"] = interrupted
            self.results.save()
        return not interrupted

    def prepare(self):
        sys.stderr.write(f"==> suite {self.s.name} ({self.s.kind}), results in {self.out}\n")
        if not self.s.needs_hosts:
            return
        hosts.build_images("busybox", "memholder")
        if self.s.kind == "checkpoint":
            apps = sorted({c.image.split("/")[-1].split(":")[0] for c in self.s.containers if c.image})
            if apps:
                hosts.build_images(*apps)
        if self.s.kind == "overhead" and "http" in self.s.workloads:
            hosts.build_images("nginx")
        hosts.registry_up()
        for f in self.s.flavours:
            d = hosts.Daemon(f)
            first = self.s.flavours[f].variants()[0]
            d.up(first)
            self.daemons[f] = d
            self.results.doc["daemons"][f] = {"version": d.version}
            d.load("busybox", "memholder")
        self.results.save()

    def teardown(self):
        for f in list(self.daemons):
            hosts.link_down(f)
            self.daemons[f].down()
        if self.s.needs_hosts:
            hosts.registry_down()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # --- pull -----------------------------------------------------------
    def run_pull(self):
        s = self.s
        refs = {}
        for i, img in enumerate(s.images):
            sys.stderr.write(f"==> image {img.name}: {len(img.layers)} layers, {units.human_size(img.total)}, pushing\n")
            repo = "ab-pull/" + re.sub(r"[^a-z0-9]+", "-", img.name.lower()).strip("-")
            refs[img.name] = hosts.push_random_image(repo, "v1", img.layers, seed=i + 1)
        variants = [(f, p) for f in s.flavours for p in s.flavours[f].variants()]
        prog = Progress(len(s.profiles) * len(s.images) * s.repetitions * len(variants))
        backend = hosts.link_backend(s.link_backend)
        self.results.doc["link"] = {"backend": backend}
        for prof in s.profiles:
            for f in self.daemons:
                hosts.link_up(f, prof, backend)
            for img in s.images:
                # Warm-up pulls, untimed by the verdict but kept: what a daemon
                # that has pulled from this registry before does differently
                # (the patched daemon learns per registry) shows from the
                # first measured pull on, and the warm-up times stay visible.
                for w in range(s.warmup):
                    for f, params in variants:
                        key, t, err = self.pull(f, params, prof, img, refs[img.name])
                        self.results.add(key, None, f"warm-up: {err}" if err else None,
                                         warmup_s=round(t, 4) if t is not None else None)
                        sys.stderr.write(f"    warm-up pull {prof.name}/{img.name} {f} {params_label(params)}: "
                                         + (f"{t:.2f}s\n" if t is not None else f"FAILED {err}\n"))
                for rep in range(s.repetitions):
                    for f, params in interleave(variants, rep):
                        key, t, err = self.pull(f, params, prof, img, refs[img.name])
                        self.results.add(key, t, err)
                        prog.step(f"pull {prof.name}/{img.name} {f} {params_label(params)} rep {rep + 1}: "
                                  + (f"{t:.2f}s" if t is not None else f"FAILED {err}"))

    def pull(self, f, params, prof, img, ref):
        """One cold pull of ref by flavour f with params: (cell key, seconds, error)."""
        d = self.daemons[f]
        d.apply(params)
        t, err = self.hyperfine_pull(d, ref)
        key = {"flavor": f, "profile": prof.name, "image": img.name, "params": params,
               "scenario": None, "container": None}
        return key, t, err

    def hyperfine_pull(self, d, ref):
        out = os.path.join(self.tmp, "hf.json")
        p = hosts.sh("hyperfine", "--runs", "1", "--style", "none", "--export-json", out,
                     # Cold: no image, no content, and no kept-alive connection
                     # to the registry from an earlier pull (ss -K aborts them).
                     "--prepare", f"docker rmi -f {ref} >/dev/null 2>&1; docker image prune -af >/dev/null 2>&1; "
                                  f"nsenter --net={d.netns()} ss -K dst {hosts.REGISTRY.split(':')[0]} >/dev/null 2>&1; true",
                     f"docker pull -q {ref}", env=d.env, check=False)
        if p.returncode != 0:
            return None, (p.stderr or "hyperfine failed").strip().splitlines()[-1][:300]
        with open(out) as f:
            r = json.load(f)["results"][0]
        return r["times"][0], None

    # --- checkpoint -----------------------------------------------------
    def start_container(self, d, c, name):
        if c.memory:
            d.docker("run", "-d", "--name", name, "ab/memholder", "memholder", "-r", "200",
                     str(max(1, c.memory >> 20)))
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if "verified_passes=" in d.docker("logs", "--tail", "1", name, check=False).stdout:
                    return
                time.sleep(0.1)
            raise hosts.HostError(f"{name}: the memory holder did not get ready")
        d.docker("run", "-d", "--name", name, c.image, *c.command)
        time.sleep(2)

    def checkpoint(self, d, name, cp):
        args = ["checkpoint", "create"] + (["--leave-running"] if self.s.leave_running else []) + [name, cp]
        t0 = time.monotonic()
        p = d.docker(*args, check=False)
        t = time.monotonic() - t0
        if p.returncode != 0:
            return None, (p.stderr.strip().splitlines() or ["failed"])[-1][:300]
        return t, None

    def freeze(self, d, name):
        """How long a memory holder was frozen by a --leave-running checkpoint,
        seen from inside: the longest gap of its 10 ms ticker (maxgap_ms in
        its next report; before the checkpoint it is a few ms)."""
        before = d.docker("logs", name, check=False).stdout.count("\n")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            lines = d.docker("logs", name, check=False).stdout.splitlines()
            if len(lines) > before:
                m = re.search(r"maxgap_ms=([\d.]+)", lines[-1])
                return round(float(m.group(1)) / 1000, 4) if m else None
            time.sleep(0.1)
        return None

    def restore(self, d, name, cp):
        if self.s.leave_running:
            d.docker("stop", "-t", "1", name, check=False)
        t0 = time.monotonic()
        p = d.docker("start", "--checkpoint", cp, name, check=False)
        t = time.monotonic() - t0
        if p.returncode != 0:
            return None, (p.stderr.strip().splitlines() or ["failed"])[-1][:300]
        return t, None

    RUNC = os.path.join(hosts.AB_PREFIX, "bin", "runc")

    def floor(self, d, c, rep):
        """The floor under a daemon's checkpoint: runc checkpoint --image-path
        on a container of the same kind, into a directory on the daemon's
        data disk, plus fsync of every file and the directory (what makes the
        daemon's checkpoint durable). Returns (seconds, freeze, error)."""
        name = f"abcp-{c.name}-floor"
        imgdir = os.path.join(d.vardir(), f"floor-{c.name}-{rep}")
        try:
            self.start_container(d, c, name)
            cid = d.docker("inspect", "-f", "{{.Id}}", name).stdout.strip()
            os.makedirs(imgdir)
            cmd = [self.RUNC, "--root", d.runc_root(), "checkpoint", "--image-path", imgdir]
            if self.s.leave_running:
                cmd.append("--leave-running")
            t0 = time.monotonic()
            # runc finds criu on PATH: the one the daemons use
            path = os.path.dirname(self.RUNC) + os.pathsep + os.environ.get("PATH", "")
            p = hosts.sh(*cmd, cid, env={"PATH": path}, check=False)
            if p.returncode == 0:
                for dirpath, _, files in os.walk(imgdir):
                    for fn in files:
                        fd = os.open(os.path.join(dirpath, fn), os.O_RDONLY)
                        os.fsync(fd)
                        os.close(fd)
                    fd = os.open(dirpath, os.O_RDONLY)
                    os.fsync(fd)
                    os.close(fd)
            t = time.monotonic() - t0
            if p.returncode != 0:
                return None, None, (p.stderr.strip().splitlines() or ["runc checkpoint failed"])[-1][:300]
            fr = self.freeze(d, name) if self.s.leave_running and c.memory else None
            return t, fr, None
        finally:
            self.cleanup(d, [name])
            shutil.rmtree(imgdir, ignore_errors=True)

    def cleanup(self, d, names):
        if names:
            d.docker("rm", "-f", *names, check=False)

    def run_checkpoint(self):
        s = self.s
        n = len(s.containers)
        per = {"alone": n, "together": 1, "incremental": n}
        prog = Progress(sum(per[x] for x in s.scenarios) * s.repetitions * len(self.daemons))
        # runc's floor is measured in the patched daemon's test host (the
        # stock one's when there is no patched flavour).
        floor_host = "patched" if "patched" in self.daemons else next(iter(self.daemons))
        for rep in range(s.repetitions):
            for scen in s.scenarios:
                for f, _ in interleave([(f, None) for f in self.daemons], rep):
                    d = self.daemons[f]
                    groups = {"alone": [[c] for c in s.containers], "together": [s.containers],
                              "incremental": [s.containers[:k] for k in range(1, n + 1)]}[scen]
                    for group in groups:
                        names = [f"abcp-{c.name}" for c in group]
                        try:
                            for c, nm in zip(group, names):
                                self.start_container(d, c, nm)
                            with concurrent.futures.ThreadPoolExecutor(len(group)) as ex:
                                futs = [ex.submit(self.checkpoint, d, nm, f"cp{rep}") for nm in names]
                                res = [x.result() for x in futs]
                            for c, nm, (t, err) in zip(group, names, res):
                                key = {"flavor": f, "profile": None, "image": c.image or "ab/memholder",
                                       "params": d.config, "scenario": scen, "container": c.name}
                                if scen == "incremental":
                                    key["concurrent"] = len(group)
                                extra = {}
                                if s.leave_running and c.memory and t is not None:
                                    extra["freeze_s"] = self.freeze(d, nm)
                                if s.restore and scen == "alone" and t is not None:
                                    rt, rerr = self.restore(d, nm, f"cp{rep}")
                                    extra = {"restore_s": round(rt, 4) if rt is not None else None}
                                    if rerr:
                                        extra["restore_error"] = rerr
                                self.results.add(key, t, err, **extra)
                            if s.floor and scen == "alone" and f == floor_host:
                                for c in group:
                                    ft, fr, ferr = self.floor(d, c, rep)
                                    key = {"flavor": "runc", "profile": None, "image": c.image or "ab/memholder",
                                           "params": None, "scenario": scen, "container": c.name}
                                    extra = {"freeze_s": fr} if s.leave_running and c.memory else {}
                                    self.results.add(key, ft, ferr, **extra)
                            label = "+".join(c.name for c in group)
                            prog.step(f"checkpoint {scen} {label} {f} rep {rep + 1}: "
                                      + ", ".join(f"{t:.2f}s" if t is not None else "FAILED" for t, _ in res))
                        finally:
                            self.cleanup(d, names)

    # --- overhead -------------------------------------------------------
    def run_overhead(self):
        s = self.s
        steps = {"run": 1, "cpu": 2, "http": 2, "files": 2}
        prog = Progress(sum(steps[w] for w in s.workloads) * s.repetitions * len(self.daemons))
        for rep in range(s.repetitions):
            for f, _ in interleave([(f, None) for f in self.daemons], rep):
                d = self.daemons[f]
                for w in s.workloads:
                    getattr(self, "overhead_" + w)(d, rep, prog)

    def hyperfine(self, env, cmd, prepare=None):
        out = os.path.join(self.tmp, "hf.json")
        args = ["hyperfine", "--runs", "1", "--style", "none", "--export-json", out]
        if prepare:
            args += ["--prepare", prepare]
        p = hosts.sh(*args, cmd, env=env, check=False)
        if p.returncode != 0:
            return None, (p.stderr or "failed").strip().splitlines()[-1][:300]
        with open(out) as f:
            return json.load(f)["results"][0]["times"][0], None

    def overhead_run(self, d, rep, prog):
        t, err = self.hyperfine(d.env, "docker run --rm ab/busybox true")
        self.results.add({"flavor": d.flavour, "profile": None, "image": "ab/busybox", "params": d.config,
                          "scenario": "run", "container": "busybox true"}, t, err)
        prog.step(f"overhead run {d.flavour} rep {rep + 1}: {t:.3f}s" if t else f"overhead run FAILED {err}")

    CPU = "head -c 300000000 /dev/zero | busybox sha256sum >/dev/null"

    def overhead_cpu(self, d, rep, prog):
        # The same busybox binary, natively in the test host and in a container.
        t, err = self.hyperfine(d.env, f"nsenter --net={d.netns()} busybox sh -c '{self.CPU}'")
        self.results.add({"flavor": d.flavour, "profile": None, "image": None, "params": d.config,
                          "scenario": "cpu", "container": "native"}, t, err)
        prog.step(f"overhead cpu native ({d.flavour} host) rep {rep + 1}: {t:.2f}s" if t else "cpu native FAILED")
        name = "abov-cpu"
        d.docker("run", "-d", "--name", name, "ab/busybox", "sleep", "3600")
        try:
            t, err = self.hyperfine(d.env, f"docker exec {name} sh -c '{self.CPU}'")
        finally:
            d.docker("rm", "-f", name, check=False)
        self.results.add({"flavor": d.flavour, "profile": None, "image": "ab/busybox", "params": d.config,
                          "scenario": "cpu", "container": "container"}, t, err)
        prog.step(f"overhead cpu container {d.flavour} rep {rep + 1}: {t:.2f}s" if t else "cpu container FAILED")

    # Small files (seeds 002, 003): one process writes 2000 files of 4 KiB,
    # syncs, and reads them all back; one process each, so that the time is
    # file operations, not process start-up.
    FILES = ("mkdir -p {dir} && cd {dir} && "
             "busybox awk 'BEGIN {{ for (i = 0; i < 2000; i++) {{ f = \"f\" i; printf \"%4096s\", \"\" > f; close(f) }} }}' && "
             "sync && busybox cat f* >/dev/null && cd / && rm -rf {dir}")

    def overhead_files(self, d, rep, prog):
        # natively, on the disk that holds the daemon's data-root
        native = os.path.join(d.vardir(), "abov-files")
        t, err = self.hyperfine(d.env, "busybox sh -c " + shlex.quote(self.FILES.format(dir=native)))
        self.results.add({"flavor": d.flavour, "profile": None, "image": None, "params": d.config,
                          "scenario": "files", "container": "native"}, t, err)
        prog.step(f"overhead files native ({d.flavour} host) rep {rep + 1}: {t:.2f}s" if t else f"files native FAILED {err}")
        # in a container: its writable layer (overlay on the same disk)
        name = "abov-files"
        d.docker("run", "-d", "--name", name, "ab/busybox", "sleep", "3600")
        try:
            t, err = self.hyperfine(d.env, f"docker exec {name} sh -c " + shlex.quote(self.FILES.format(dir="/work")))
        finally:
            d.docker("rm", "-f", name, check=False)
        self.results.add({"flavor": d.flavour, "profile": None, "image": "ab/busybox", "params": d.config,
                          "scenario": "files", "container": "container"}, t, err)
        prog.step(f"overhead files container {d.flavour} rep {rep + 1}: {t:.2f}s" if t else f"files container FAILED {err}")

    def overhead_http(self, d, rep, prog):
        if rep == 0:
            d.load("nginx")
        for net in ("bridge", "host"):
            name = f"abov-http-{net}"
            d.docker("run", "-d", "--name", name, "--network", net, "ab/nginx")
            try:
                ip = "127.0.0.1" if net == "host" else d.docker(
                    "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", name).stdout.strip()
                url = f"http://{ip}/1k.txt"
                for _ in range(100):
                    if hosts.sh("nsenter", f"--net={d.netns()}", "curl", "-fs", "-o", "/dev/null", url,
                                check=False).returncode == 0:
                        break
                    time.sleep(0.1)
                p = hosts.sh("nsenter", f"--net={d.netns()}", "wrk", "-t", "2", "-c", "32", "-d", "5s",
                             "--latency", url, check=False)
                rps = re.search(r"Requests/sec:\s*([\d.]+)", p.stdout or "")
                lat = re.search(r"^\s+50%\s+([\d.]+)(us|ms|s)", p.stdout or "", re.M)
                err = None if rps else (p.stderr or p.stdout or "wrk failed").strip()[-300:]
                key = {"flavor": d.flavour, "profile": None, "image": "ab/nginx", "params": d.config,
                       "scenario": "http", "container": net}
                p50 = float(lat.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1}[lat.group(2)] if lat else None
                self.results.add(key, p50, err, rps=float(rps.group(1)) if rps else None)
                prog.step(f"overhead http {net} {d.flavour} rep {rep + 1}: "
                          + (f"{float(rps.group(1)):.0f} req/s" if rps else "FAILED"))
            finally:
                d.docker("rm", "-f", name, check=False)

    # --- zns ------------------------------------------------------------
    def run_zns(self):
        """Replay one trace under each placement policy on the model device,
        on every geometry of the suite (one, or a scan of zone sizes). The
        trace is kept beside the results, so the numbers can be reproduced
        (and checked) from this directory alone."""
        s = self.s
        if s.trace_file:
            events = zns.read_trace(s.trace_file)
            source = {"file": os.path.relpath(s.trace_file, hosts.ROOT)}
        else:
            events = zns.generate(s.trace)
            source = {"generated": dataclasses.asdict(s.trace)}
        path = os.path.join(self.out, "trace.csv")
        if s.trace_file:
            shutil.copyfile(s.trace_file, path)  # byte for byte: the digest is the source's
        else:
            zns.write_trace(path, events)
        doc = self.results.doc
        doc["trace"] = dict(source, **zns.describe_trace(events), csv="trace.csv", sha256=zns.trace_digest(path))
        doc["geometry"] = dataclasses.asdict(s.geometry)  # a scan's: the one whose time series are plotted
        doc["geometries"] = [dataclasses.asdict(g) for g in s.geometries]
        doc["placement"] = {"chunk": s.chunk, "gc_reserve": s.gc_reserve}
        self.results.save()
        scan = len(s.geometries) > 1
        prog = Progress(len(s.geometries) * len(s.policies))
        for g in s.geometries:
            sys.stderr.write(f"==> {len(events)} events on {g.describe()}\n")
            for policy in s.policies:
                o = zns.replay(events, g, policy, s.chunk, s.gc_reserve)
                doc["results"].append(o.entry(dict(doc["placement"]), g))
                self.results.save()
                m = o.metrics
                on = f" on {units.human_size(g.zone_size)} zones" if scan else ""
                prog.step(f"replay {policy}{on}: relocated {zns.gib(m['relocated_bytes'])}, "
                          f"WA {m['write_amplification']}, {m['resets']} resets, {m['failed']} failed creates")
