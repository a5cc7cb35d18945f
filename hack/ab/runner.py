"""Runs a validated suite: prepares registry, links, daemons and images, then
measures every cell, alternating flavours, each measurement cold. Writes
results.json after every sample, so an interrupted run keeps what it measured."""
import concurrent.futures
import dataclasses
import json
import os
import re
import resource
import shutil
import shlex
import signal
import subprocess
import sys
import tempfile
import time

from . import hosts, units, zns
from .results import Cell, Results, now
from .kinds.checkpoint import BATCH
from .kinds.cpuquota import cpus_label, mode_label


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


def rotate(items, rep):
    """items started at a different one each repetition, so that no item is
    always measured first (or right after the same one)."""
    items = list(items)
    k = rep % len(items) if items else 0
    return items[k:] + items[:k]


_WRK_UNIT = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}


def parse_wrk(text):
    """wrk --latency output -> rps, requests, mean/p50/p99 latency (s) and the
    errors it reports (socket errors, non-2xx answers)."""
    out = {}
    m = re.search(r"Requests/sec:\s*([\d.]+)", text)
    out["rps"] = float(m.group(1)) if m else None
    m = re.search(r"^\s*(\d+) requests in", text, re.M)
    out["requests"] = int(m.group(1)) if m else None

    def secs(pat):
        m = re.search(pat, text, re.M)
        return round(float(m.group(1)) * _WRK_UNIT[m.group(2)], 9) if m else None
    out["mean_s"] = secs(r"^\s*Latency\s+([\d.]+)(us|ms|s|m)\b")
    out["p50_s"] = secs(r"^\s*50%\s+([\d.]+)(us|ms|s|m)\b")
    out["p99_s"] = secs(r"^\s*99%\s+([\d.]+)(us|ms|s|m)\b")
    errs = []
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m and any(int(x) for x in m.groups()):
        errs.append("socket errors: " + ", ".join(f"{k} {v}" for k, v in
                                                  zip(("connect", "read", "write", "timeout"), m.groups())))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        errs.append(f"{m.group(1)} non-2xx answers")
    out["errors"] = "; ".join(errs)
    return out


def parse_json_line(text):
    """The last line of text that is a JSON object, or None."""
    for line in reversed((text or "").strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


SEED003_LINE = b"longonglndinfdfkjds"


def seed003_text(size):
    """Seed 003's file body: its text repeated and a newline (19001 bytes at
    the seed's 1000 repetitions), cut or extended to size bytes."""
    if size <= 1:
        return b"\n"[:size]
    reps = -(-(size - 1) // len(SEED003_LINE))
    return (SEED003_LINE * reps)[:size - 1] + b"\n"


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
        if self.s.kind == "cpuquota":
            # Promise.all opens every file before the first read completes;
            # a container cannot raise its descriptor limit above the hard
            # limit the daemon has where root lacks CAP_SYS_RESOURCE.
            need = self.s.cpuquota.files + 1024
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            if hard != resource.RLIM_INFINITY and need > hard:
                raise hosts.HostError(f"files: {self.s.cpuquota.files} files need {need} open files at once; "
                                      f"this host's hard limit is {hard} (ulimit -Hn)")
        extra = self.extra_images()
        if extra:
            hosts.build_images(*extra)
        hosts.registry_up()
        for f in self.s.flavours:
            d = hosts.Daemon(f)
            first = self.s.flavours[f].variants()[0]
            d.up(first)
            self.daemons[f] = d
            self.results.doc["daemons"][f] = {"version": d.version}
            d.load("busybox", "memholder", *extra)
        self.results.save()

    def flavour_order(self, rep):
        """The running flavours in repetition rep's order (ABAB, see interleave)."""
        return [f for f, _ in interleave([(f, None) for f in self.daemons], rep)]

    def extra_images(self):
        """The images a suite needs beyond busybox and memholder."""
        s = self.s
        if s.kind == "overhead":
            return ([s.http.server] if s.http else []) + (["pingpong"] if s.pingpong else [])
        if s.kind == "cpuquota":
            return ["node"]
        return []

    def teardown(self):
        for f in list(self.daemons):
            hosts.link_down(f)
            self.daemons[f].down(keep=self.out)
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
                        cell, t, err = self.pull(f, params, prof, img, refs[img.name])
                        self.results.add(cell, None, f"warm-up: {err}" if err else None,
                                         warmup_s=round(t, 4) if t is not None else None)
                        sys.stderr.write(f"    warm-up pull {prof.name}/{img.name} {f} {params_label(params)}: "
                                         + (f"{t:.2f}s\n" if t is not None else f"FAILED {err}\n"))
                for rep in range(s.repetitions):
                    for f, params in interleave(variants, rep):
                        cell, t, err = self.pull(f, params, prof, img, refs[img.name])
                        self.results.add(cell, t, err)
                        prog.step(f"pull {prof.name}/{img.name} {f} {params_label(params)} rep {rep + 1}: "
                                  + (f"{t:.2f}s" if t is not None else f"FAILED {err}"))

    def pull(self, f, params, prof, img, ref):
        """One cold pull of ref by flavour f with params: (its cell, seconds, error)."""
        d = self.daemons[f]
        d.apply(params)
        t, err = self.hyperfine_pull(d, ref)
        return Cell(f, profile=prof.name, image=img.name, params=params), t, err

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
                for f in self.flavour_order(rep):
                    d = self.daemons[f]
                    groups = {"alone": [[c] for c in s.containers], "together": [s.containers],
                              "incremental": [s.containers[:k] for k in range(1, n + 1)]}[scen]
                    for group in groups:
                        names = [f"abcp-{c.name}" for c in group]
                        try:
                            for c, nm in zip(group, names):
                                self.start_container(d, c, nm)
                            t0 = time.monotonic()
                            with concurrent.futures.ThreadPoolExecutor(len(group)) as ex:
                                futs = [ex.submit(self.checkpoint, d, nm, f"cp{rep}") for nm in names]
                                res = [x.result() for x in futs]
                            batch = time.monotonic() - t0
                            for c, nm, (t, err) in zip(group, names, res):
                                cell = Cell(f, image=c.image or "ab/memholder", params=d.config, scenario=scen,
                                           container=c.name,
                                           kind_fields={"concurrent": len(group)} if scen == "incremental" else {})
                                extra = {}
                                if s.leave_running and c.memory and t is not None:
                                    extra["freeze_s"] = self.freeze(d, nm)
                                if s.restore and scen == "alone" and t is not None:
                                    rt, rerr = self.restore(d, nm, f"cp{rep}")
                                    extra = {"restore_s": round(rt, 4) if rt is not None else None}
                                    if rerr:
                                        extra["restore_error"] = rerr
                                self.results.add(cell, t, err, **extra)
                            if scen == "together":
                                # The whole batch: from the requests to the last checkpoint done.
                                bad = [e for _, e in res if e]
                                self.results.add(Cell(f, params=d.config, scenario=scen, container=BATCH),
                                                 None if bad else batch, f"a checkpoint failed: {bad[0]}" if bad else None)
                            if s.floor and scen == "alone" and f == floor_host:
                                for c in group:
                                    ft, fr, ferr = self.floor(d, c, rep)
                                    cell = Cell("runc", image=c.image or "ab/memholder", scenario=scen,
                                               container=c.name)
                                    extra = {"freeze_s": fr} if s.leave_running and c.memory else {}
                                    self.results.add(cell, ft, ferr, **extra)
                            label = "+".join(c.name for c in group)
                            prog.step(f"checkpoint {scen} {label} {f} rep {rep + 1}: "
                                      + ", ".join(f"{t:.2f}s" if t is not None else "FAILED" for t, _ in res)
                                      + (f" (batch {batch:.2f}s)" if scen == "together" else ""))
                        finally:
                            self.cleanup(d, names)

    # --- overhead -------------------------------------------------------
    def run_overhead(self):
        s = self.s
        steps = {"run": 1, "cpu": 2, "files": 2,
                 "http": len(s.http.networks) * len(s.http.endpoints) if s.http else 0,
                 "pingpong": len(s.pingpong.networks) if s.pingpong else 0}
        prog = Progress(sum(steps[w] for w in s.workloads) * s.repetitions * len(self.daemons))
        for rep in range(s.repetitions):
            for f in self.flavour_order(rep):
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
        self.results.add(Cell(d.flavour, image="ab/busybox", params=d.config, scenario="run",
                              container="busybox true"), t, err)
        prog.step(f"overhead run {d.flavour} rep {rep + 1}: {t:.3f}s" if t else f"overhead run FAILED {err}")

    CPU = "head -c 300000000 /dev/zero | busybox sha256sum >/dev/null"

    def overhead_cpu(self, d, rep, prog):
        # The same busybox binary, natively in the test host and in a container.
        t, err = self.hyperfine(d.env, f"nsenter --net={d.netns()} busybox sh -c '{self.CPU}'")
        self.results.add(Cell(d.flavour, params=d.config, scenario="cpu", container="native"), t, err)
        prog.step(f"overhead cpu native ({d.flavour} host) rep {rep + 1}: {t:.2f}s" if t else "cpu native FAILED")
        name = "abov-cpu"
        d.docker("run", "-d", "--name", name, "ab/busybox", "sleep", "3600")
        try:
            t, err = self.hyperfine(d.env, f"docker exec {name} sh -c '{self.CPU}'")
        finally:
            d.docker("rm", "-f", name, check=False)
        self.results.add(Cell(d.flavour, image="ab/busybox", params=d.config, scenario="cpu",
                              container="container"), t, err)
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
        self.results.add(Cell(d.flavour, params=d.config, scenario="files", container="native"), t, err)
        prog.step(f"overhead files native ({d.flavour} host) rep {rep + 1}: {t:.2f}s" if t else f"files native FAILED {err}")
        # in a container: its writable layer (overlay on the same disk)
        name = "abov-files"
        d.docker("run", "-d", "--name", name, "ab/busybox", "sleep", "3600")
        try:
            t, err = self.hyperfine(d.env, f"docker exec {name} sh -c " + shlex.quote(self.FILES.format(dir="/work")))
        finally:
            d.docker("rm", "-f", name, check=False)
        self.results.add(Cell(d.flavour, image="ab/busybox", params=d.config, scenario="files",
                              container="container"), t, err)
        prog.step(f"overhead files container {d.flavour} rep {rep + 1}: {t:.2f}s" if t else f"files container FAILED {err}")

    # --- overhead: servers in each network placement ---------------------
    # native: a process in the flavour's test host (its network namespace),
    # the same program the containers run; bridge: a container on the
    # default bridge, reached at its address; published: the same behind
    # a published port, reached at 127.0.0.1 (seed 004's -p 3000:3000, through
    # the daemon's port mapping); host: a container on the host network.

    def native(self, d, argv, cwd=None):
        """Start argv in the flavour's test host; returns the Popen."""
        log = open(os.path.join(self.tmp, f"native-{os.path.basename(argv[0])}.log"), "w")
        try:
            # nsenter without --fork execs argv: the Popen's pid is the server's
            return subprocess.Popen(["nsenter", f"--net={d.netns()}", *argv], cwd=cwd, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()

    @staticmethod
    def stop_native(p):
        if p is None or p.poll() is not None:
            return
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def ip_of(self, d, name):
        return d.docker("inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}",
                        name).stdout.strip()

    def wait_http(self, d, url, proc=None, name=None, limit=20):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if hosts.sh("nsenter", f"--net={d.netns()}", "curl", "-fs", "-m", "5", "-o", "/dev/null", url,
                        check=False).returncode == 0:
                return
            if proc is not None and proc.poll() is not None:
                break
            time.sleep(0.1)
        why = ""
        if name:
            why = d.docker("logs", "--tail", "5", name, check=False).stderr.strip()
        raise hosts.HostError(f"{url}: the server did not answer within {limit}s {why}".strip())

    def http_dir(self, d):
        """The node server's directory on the data-root's disk: app.js, and
        testfile.txt of /disk-io (the seed mounted its home directory)."""
        path = os.path.join(d.vardir(), "abov-http")
        os.makedirs(path, exist_ok=True)
        shutil.copyfile(os.path.join(hosts.HACK, "testimages", "node", "app.js"), os.path.join(path, "app.js"))
        return path

    def start_http(self, d, net):
        """Start the suite's server placed as net: (url base, Popen or None, container name or None)."""
        h = self.s.http
        name = f"abov-http-{net}"
        if h.server == "node":
            app = self.http_dir(d)
            if net == "native":
                return f"http://127.0.0.1:{h.port}", self.native(d, [hosts.node_binary(), "app.js"], cwd=app), None
            image = ["-v", f"{app}:/usr/src/app", "-w", "/usr/src/app", "ab/node", "node", "app.js"]
        else:
            image = ["ab/nginx"]
        net_args = {"bridge": [], "published": ["-p", f"{h.port}:{h.port}"], "host": ["--network", "host"]}[net]
        d.docker("run", "-d", "--name", name, *net_args, *image)
        ip = self.ip_of(d, name) if net == "bridge" else "127.0.0.1"
        return f"http://{ip}:{h.port}", None, name

    def http_cell(self, d, net, ep):
        return Cell(d.flavour, image=f"ab/{self.s.http.server}", params=d.config, scenario="http", container=net,
                    kind_fields={"endpoint": ep})

    def overhead_http(self, d, rep, prog):
        h = self.s.http
        for net in rotate(h.networks, rep):
            proc = name = None
            try:
                try:
                    base, proc, name = self.start_http(d, net)
                    self.wait_http(d, base + h.endpoints[0], proc, name)
                except hosts.HostError as e:
                    # this placement's cells get the error; the suite goes on
                    for ep in h.endpoints:
                        self.results.add(self.http_cell(d, net, ep), None, str(e)[:300])
                        prog.step(f"overhead http {ep} {net} {d.flavour} rep {rep + 1}: FAILED {str(e)[:200]}")
                    continue
                for ep in h.endpoints:
                    url = base + ep
                    wrk = ["nsenter", f"--net={d.netns()}", "wrk", "-t", str(h.threads), "-c", str(h.connections[ep])]
                    if h.warmup_s:
                        hosts.sh(*wrk, "-d", f"{h.warmup_s:g}s", url, check=False)
                    p = hosts.sh(*wrk, "-d", f"{h.duration_s:g}s", "--latency", url, check=False)
                    w = parse_wrk(p.stdout or "")
                    err = None
                    if w.get("rps") is None:
                        err = (p.stderr or p.stdout or "wrk failed").strip()[-300:]
                    elif w.get("errors"):
                        err = f"wrk: {w['errors']}"
                    self.results.add(self.http_cell(d, net, ep), w.get("p50_s"), err, rps=w.get("rps"), latency_mean_s=w.get("mean_s"),
                                     latency_p99_s=w.get("p99_s"), requests=w.get("requests"))
                    prog.step(f"overhead http {ep} {net} {d.flavour} rep {rep + 1}: "
                              + (f"{w['rps']:.0f} req/s, p50 {w['p50_s'] * 1e3:.2f} ms" if w.get("rps") is not None
                                 else "FAILED"))
            finally:
                self.stop_native(proc)
                if name:
                    d.docker("rm", "-f", name, check=False)

    PINGPONG_PORT = 7000

    def overhead_pingpong(self, d, rep, prog):
        """Round trips of a small message between two processes: two native
        processes in the test host, two containers on the bridge, two on the
        host network (seed 002: MPI's messages over Docker's virtual network)."""
        pp = self.s.pingpong
        args = ["-n", str(pp.round_trips), "-warmup", str(pp.warmup), "-size", str(pp.size)]
        srv = ["pingpong", "server", "-listen", f":{self.PINGPONG_PORT}", "-size", str(pp.size)]
        scpu, ccpu = pp.cpus(os.cpu_count() or 1)
        taskset = lambda cpu: ["taskset", "-c", cpu] if cpu is not None else []
        cpuset = lambda cpu: ["--cpuset-cpus", cpu] if cpu is not None else []
        for net in rotate(pp.networks, rep):
            proc = name = None
            try:
                if net == "native":
                    proc = self.native(d, taskset(scpu) + [hosts.pingpong_binary()] + srv[1:])
                    p = hosts.sh("nsenter", f"--net={d.netns()}", *taskset(ccpu), hosts.pingpong_binary(), "client",
                                 "-connect", f"127.0.0.1:{self.PINGPONG_PORT}", *args, check=False, timeout=600)
                else:
                    name = f"abov-pp-{net}"
                    net_args = ["--network", "host"] if net == "host" else []
                    p = d.docker("run", "-d", "--name", name, *net_args, *cpuset(scpu), "ab/pingpong", *srv,
                                 check=False)
                    if p.returncode == 0:
                        ip = self.ip_of(d, name) if net == "bridge" else "127.0.0.1"
                        p = d.docker("run", "--rm", *net_args, *cpuset(ccpu), "ab/pingpong", "pingpong", "client",
                                     "-connect", f"{ip}:{self.PINGPONG_PORT}", *args, check=False)
                r, err = parse_json_line(p.stdout), None
                if r is None:
                    err = ((p.stderr or "").strip().splitlines() or ["pingpong failed"])[-1][:300]
                cell = Cell(d.flavour, image=None if net == "native" else "ab/pingpong", params=d.config,
                           scenario="pingpong", container=net)
                r = r or {}
                self.results.add(cell, r["p50_us"] / 1e6 if r else None, err, mean_us=r.get("mean_us"),
                                 p50_us=r.get("p50_us"), p99_us=r.get("p99_us"), round_trips=r.get("round_trips"),
                                 cpus=f"{scpu},{ccpu}" if scpu is not None else None)
                prog.step(f"overhead pingpong {net} {d.flavour} rep {rep + 1}: "
                          + (f"p50 {r['p50_us']:.1f} us, mean {r['mean_us']:.1f} us, p99 {r['p99_us']:.1f} us" if r
                             else f"FAILED {err}"))
            finally:
                self.stop_native(proc)
                if name:
                    d.docker("rm", "-f", name, check=False)

    # --- cpuquota -------------------------------------------------------
    def cpuquota_files(self, d):
        """Seed 003's directory: files of the seed's text, on the data-root's
        disk, written once and read once (the runs read from the page cache,
        as the seed's repeated runs did)."""
        q = self.s.cpuquota
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

    def run_cpuquota(self):
        s = self.s
        q = s.cpuquota
        dirs = {}
        for f, d in self.daemons.items():
            sys.stderr.write(f"==> {f}: {q.files} files of {units.human_size(q.file_size)}\n")
            dirs[f] = self.cpuquota_files(d)
        cells = q.cells()
        self.results.doc["workload"] = {"files": q.files, "file_size": q.file_size, "cpus": q.cpus,
                                        "modes": q.modes, "workers": q.workers}
        self.results.save()
        prog = Progress(len(q.cpus) * len(cells) * s.repetitions * len(self.daemons))
        # Every descriptor at once: Promise.all opens all the files before
        # the first read completes.
        nofile = q.files + 1024  # checked against the hard limit in prepare()
        for rep in range(s.repetitions):
            for f in self.flavour_order(rep):
                d = self.daemons[f]
                for cpus in rotate(q.cpus, rep):
                    for mode, n in rotate(cells, rep):
                        limit = ["--cpus", f"{cpus:g}"] if cpus is not None else []
                        argv = ["node", "/app/readfiles.js", "/data", mode] + ([str(n)] if mode == "workers" else [])
                        t0 = time.monotonic()
                        p = d.docker("run", "--rm", *limit, "--ulimit", f"nofile={nofile}:{nofile}",
                                     "-v", f"{dirs[f]}:/data:ro", "ab/node", *argv, check=False)
                        wall = time.monotonic() - t0
                        r = parse_json_line(p.stdout)
                        err = None if r else ((p.stderr or "").strip().splitlines() or ["failed"])[-1][:300]
                        r = r or {}
                        cell = Cell(f, image="ab/node", params=d.config, scenario=mode_label(mode, n),
                                   container=cpus_label(cpus), kind_fields={"mode": mode, "workers": n, "cpus": cpus})
                        self.results.add(cell, r.get("elapsed_s"), err, files_per_s=r.get("files_per_s"),
                                         cpu_s=r.get("cpu_s"), throttled_s=r.get("throttled_s"),
                                         run_s=round(wall, 4))
                        prog.step(f"cpuquota {mode_label(mode, n)} cpus={cpus_label(cpus)} {f} rep {rep + 1}: "
                                  + (f"{r['elapsed_s']:.2f}s, {r['files_per_s']:.0f} files/s" if r
                                     else f"FAILED {err}"))

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
                self.results.append(o.entry(dict(doc["placement"]), g))
                m = o.metrics
                on = f" on {units.human_size(g.zone_size)} zones" if scan else ""
                prog.step(f"replay {policy}{on}: relocated {zns.gib(m['relocated_bytes'])}, "
                          f"WA {m['write_amplification']}, {m['resets']} resets, {m['failed']} failed creates")
