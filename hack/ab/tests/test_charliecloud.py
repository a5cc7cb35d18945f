"""System charliecloud (ab.systems.charliecloud): its flavor table, the
ch-run command lines it runs the overhead workloads with, the root file
systems it unpacks from the project's image archives (and the archives it
refuses), and what it leaves when it starts or fails."""
import gzip
import hashlib
import importlib.util
import io
import json
import os
import random
import shutil
import subprocess
import tarfile
import tempfile
import unittest
from unittest import mock

from ab import hosts, report, runner, suite
from ab.kinds import overhead
from ab.systems import charliecloud as cc
from ab.tests import fakehosts
from ab.tests.test_suite import SuiteErrors, load

_spec = importlib.util.spec_from_file_location("mkimage", os.path.join(hosts.HOSTS, "testimages", "mkimage.py"))
mkimage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mkimage)

SUITE = """
name = "cc"
kind = "overhead"
repetitions = 2
workloads = ["cpu", "pingpong"]

[pingpong]
networks = ["native", "bridge", "host"]

[flavor.stock]
daemon = {}

[flavor.charliecloud]
ch_run = { write = false, private_tmp = true, environment = "image" }
"""


class SuiteTest(SuiteErrors, unittest.TestCase):
    def test_flavor_table(self):
        s = load(SUITE)
        fl = s.flavors["charliecloud"]
        self.assertEqual(fl.system, "charliecloud")
        self.assertEqual(fl.variants(), [{"write": False, "private_tmp": True, "environment": "image"}])
        text = SUITE.replace('ch_run = { write = false, private_tmp = true, environment = "image" }', "")
        self.assertEqual(load(text).flavors["charliecloud"].variants(), [{}])

    def test_bad_settings_refused_naming_the_key_and_line(self):
        self.assertEditsRefused(SUITE, [
            ("write = false", "writable = false", r"\.toml:\d+: ch_run.writable: not an option of ch-run "
                                                  r"the harness takes \(known: write, private_tmp, environment\)"),
            ("write = false", 'write = "no"', r":\d+: ch_run.write: want true or false, got 'no'"),
            ("write = false", "write = [true, false]", r"ch_run.write: want true or false, got \[True, False\]"),
            ('environment = "image"', 'environment = "none"',
             r"ch_run.environment: want one of image, host, got 'none'"),
            ("ch_run = {", "daemon = {", r"unknown key 'daemon' in \[flavor.charliecloud\] \(known: ch_run\)"),
            ('workloads = ["cpu", "pingpong"]', 'workloads = ["cpu", "pingpong", "files", "run"]',
             r":\d+: \[flavor.charliecloud\]: charliecloud runs the workloads cpu, pingpong, not files, run"),
            ('networks = ["native", "bridge", "host"]', 'networks = ["bridge"]',
             r":\d+: networks: none of them is a placement of \[flavor.charliecloud\] \(native, host\)"),
        ])
        # the line of the key
        text = SUITE.replace("write = false", "writable = false")
        line = text.splitlines().index(next(x for x in text.splitlines() if x.startswith("ch_run"))) + 1
        self.assertIn(f":{line}: ch_run.writable", self.error(text))
        self.assertIn("want a table of ch-run options", self.error(SUITE.replace(
            'ch_run = { write = false, private_tmp = true, environment = "image" }', 'ch_run = "fast"')))

    def test_only_the_overhead_kind(self):
        from ab.tests.test_suite import GOOD
        self.assertRegex(self.error(GOOD + "[flavor.charliecloud]\n"),
                         r":\d+: \[flavor.charliecloud\]: pull suites measure dockerd, containerd, podman, "
                         r"not charliecloud")

    def test_peers_suite_is_seed_002s(self):
        """overhead-seed002-peers is overhead-seed002 with charliecloud at
        the harness's defaults added: the same workloads, ping-pong and
        dockerd flavors; 10 repetitions, where 5 give no verdict."""
        root = os.path.join(hosts.ROOT, "hyperfine-suites")
        base = suite.load(os.path.join(root, "overhead-seed002.toml"))
        peers = suite.load(os.path.join(root, "overhead-seed002-peers.toml"))
        self.assertEqual((peers.workloads, peers.pingpong, peers.seed), (base.workloads, base.pingpong, base.seed))
        self.assertEqual((base.repetitions, peers.repetitions), (5, 10))
        for f in ("stock", "patched"):
            self.assertEqual(peers.flavors[f], base.flavors[f])
        self.assertEqual(list(peers.flavors), ["stock", "patched", "charliecloud"])
        self.assertEqual(peers.flavors["charliecloud"].variants(), [{}])
        self.assertEqual(overhead.placements(peers.pingpong.networks, cc), ["native", "host"])


def host(rootfs="/var/lib/moby-ab/charliecloud/img/pingpong", config=None):
    c = cc.Charliecloud("charliecloud")
    c.config = config or {}
    c.images = {"ab/pingpong": {"path": rootfs, "env": ["PATH=/usr/local/bin:/bin"]}}
    return c


class CommandsTest(unittest.TestCase):
    def test_options(self):
        env = ["PATH=/bin", "A=b c"]
        self.assertEqual(cc.options({}, env), ["--unset-env=*", "--set-env=PATH=/bin", "--set-env=A=b c"])
        self.assertEqual(cc.options({"write": True, "private_tmp": True, "environment": "host"}, env), ["-w", "-t"])

    def test_shell(self):
        """The cpu hash's prefix: ch-run on the image's root file system in
        the host's namespace, the image's environment alone."""
        with cc.shell(host(), "ab/pingpong", "abov-cpu") as prefix:
            self.assertEqual(prefix, "nsenter --net=/run/netns/ab-charliecloud /usr/bin/ch-run '--unset-env=*' "
                                     "--set-env=PATH=/usr/local/bin:/bin /var/lib/moby-ab/charliecloud/img/pingpong --")
        with self.assertRaisesRegex(hosts.HostError, r"ab/busybox is not unpacked"):
            with cc.shell(host(), "ab/busybox", "x"):
                pass

    def test_pingpong(self):
        """The server, then the client at 127.0.0.1, each a ch-run pinned to
        its CPU; the server stopped by its PID, also when the client's
        command fails to run."""
        started, ran = [], []

        class Proc(fakehosts.FakeProcess):
            def __init__(self, argv, **kw):
                super().__init__()
                started.append((argv, kw["env"]["USER"]))
                self.pid = 4242

        def sh(*args, **kw):
            ran.append(args)
            return subprocess.CompletedProcess(args, 0, '{"p50_us": 9}\n', "")
        c = host()
        log = tempfile.NamedTemporaryFile(delete=False).name
        self.addCleanup(os.unlink, log)
        with mock.patch("subprocess.Popen", Proc), mock.patch.object(hosts, "sh", sh):
            p = cc.pingpong(c, "abov-pp-host", "ab/pingpong", "host", ["pingpong", "server", "-listen", ":7000"],
                            lambda ip: ["pingpong", "client", "-connect", f"{ip}:7000"], ("0", "1"), log)
        ch = ["/usr/bin/ch-run", "--unset-env=*", "--set-env=PATH=/usr/local/bin:/bin",
              "/var/lib/moby-ab/charliecloud/img/pingpong", "--"]
        self.assertEqual(started, [(["nsenter", "--net=/run/netns/ab-charliecloud", "taskset", "-c", "0", *ch,
                                     "pingpong", "server", "-listen", ":7000"], cc.user())])
        self.assertEqual(ran, [("nsenter", "--net=/run/netns/ab-charliecloud", "taskset", "-c", "1", *ch,
                                "pingpong", "client", "-connect", "127.0.0.1:7000")])
        self.assertEqual(p.stdout, '{"p50_us": 9}\n')
        self.assertEqual(c.servers, [])
        # the client's command fails to run: the server is stopped all the same
        stopped = []

        class Stopped(Proc):
            def terminate(self):
                stopped.append(self.pid)
                super().terminate()

        def boom(*a, **kw):
            raise subprocess.TimeoutExpired(a, 600)
        with mock.patch("subprocess.Popen", Stopped), mock.patch.object(hosts, "sh", boom):
            with self.assertRaises(subprocess.TimeoutExpired):
                cc.pingpong(c, "n", "ab/pingpong", "host", ["s"], lambda ip: ["c"], (None, None), log)
        self.assertEqual((stopped, c.servers), ([4242], []))
        with self.assertRaisesRegex(hosts.HostError, r"no network placement 'bridge'"):
            cc.pingpong(c, "n", "ab/pingpong", "bridge", ["s"], lambda ip: ["c"], (None, None), log)

    def test_a_dead_server_is_named(self):
        """A client that fails while the server has exited says what the
        server said last."""
        class Dead(fakehosts.FakeProcess):
            def __init__(self, argv, stdout=None, **kw):
                super().__init__()
                stdout.write("listen tcp :7000: bind: address already in use\n")
                self.returncode = 1
        log = tempfile.NamedTemporaryFile(delete=False).name
        self.addCleanup(os.unlink, log)
        with mock.patch("subprocess.Popen", Dead), \
                mock.patch.object(hosts, "sh", lambda *a, **kw: subprocess.CompletedProcess(a, 1, "", "refused")):
            p = cc.pingpong(host(), "n", "ab/pingpong", "host", ["s"], lambda ip: ["c"], (None, None), log)
        self.assertEqual(p.returncode, 1)
        self.assertIn("the server exited 1: listen tcp :7000: bind: address already in use", p.stderr)


# --- unpacking ---------------------------------------------------------------

def layer(*members):
    """An uncompressed layer tar of (name, type, data or link target, mode)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, typ, data, mode in members:
            ti = tarfile.TarInfo(name)
            ti.type, ti.mode = typ, mode
            if typ == tarfile.REGTYPE:
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
            else:
                if typ in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                    ti.linkname = data
                t.addfile(ti)
    return buf.getvalue()


def read(path):
    with open(path, "rb") as f:
        return f.read()


D, F, L, H = tarfile.DIRTYPE, tarfile.REGTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE
BASE = layer(("bin", D, None, 0o755), ("bin/busybox", F, b"\x7fELF busybox", 0o755),
             ("bin/sh", L, "busybox", 0o777), ("tmp", D, None, 0o1777), ("etc", D, None, 0o755),
             ("etc/gone", F, b"x", 0o644), ("etc/old", D, None, 0o755), ("etc/old/a", F, b"a", 0o644),
             ("usr/local/bin/tool", F, b"tool", 0o4755), ("bin/hard", H, "bin/busybox", 0o755))
TOP = layer(("etc/.wh.gone", F, b"", 0o644), ("etc/old/.wh..wh..opq", F, b"", 0o644),
            ("etc/old/b", F, b"b", 0o644), ("etc/new", F, b"new", 0o600))


class UnpackTest(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ab-cc-test-")
        self.addCleanup(shutil.rmtree, self.d, True)
        self.outside = os.path.join(self.d, "outside")
        os.mkdir(self.outside)

    def archive(self, *layers, env=("PATH=/bin",)):
        path = os.path.join(self.d, "image.tar")
        with open(path, "wb") as f:
            f.write(mkimage.build("ab/test:latest", list(layers), {"Env": list(env)}))
        return path

    def blobs_archive(self, name, blobs):
        """An image archive of blobs {member name: bytes}, as given."""
        path = os.path.join(self.d, name)
        with tarfile.open(path, "w") as t:
            for n, b in blobs.items():
                ti = tarfile.TarInfo(n)
                ti.size = len(b)
                t.addfile(ti, io.BytesIO(b))
        return path

    def rootfs(self):
        dest = os.path.join(self.d, "rootfs")
        shutil.rmtree(dest, ignore_errors=True)
        os.mkdir(dest)
        return dest

    def test_layers_in_order(self):
        a = self.archive(BASE, TOP)
        dest = self.rootfs()
        rec = cc.unpack(a, dest)
        with open(a, "rb") as f:
            self.assertEqual(rec["sha256"], "sha256:" + hashlib.sha256(f.read()).hexdigest())
        with tarfile.open(a) as t:
            m = json.load(t.extractfile("manifest.json"))[0]
        self.assertEqual(rec["config_digest"], "sha256:" + m["Config"].rsplit("/", 1)[1])
        self.assertEqual(rec["layers"], ["sha256:" + x.rsplit("/", 1)[1] for x in m["Layers"]])
        self.assertEqual(rec["env"], ["PATH=/bin"])
        files = {}
        for base, dirs, names in os.walk(dest):
            for n in dirs + names:
                p = os.path.join(base, n)
                files[os.path.relpath(p, dest)] = os.readlink(p) if os.path.islink(p) else \
                    (None if os.path.isdir(p) else read(p))
        self.assertEqual(files, {"bin": None, "bin/busybox": b"\x7fELF busybox", "bin/sh": "busybox",
                                 "bin/hard": b"\x7fELF busybox", "tmp": None, "etc": None, "etc/old": None,
                                 "etc/old/b": b"b", "etc/new": b"new", "usr": None, "usr/local": None,
                                 "usr/local/bin": None, "usr/local/bin/tool": b"tool"})
        mode = lambda p: os.lstat(os.path.join(dest, p)).st_mode & 0o7777
        self.assertEqual((mode("tmp"), mode("bin/busybox"), mode("etc/new")), (0o1777, 0o755, 0o600))
        self.assertEqual(mode("usr/local/bin/tool"), 0o755)  # no setuid
        self.assertEqual(os.stat(os.path.join(dest, "bin/hard")).st_ino,
                         os.stat(os.path.join(dest, "bin/busybox")).st_ino)
        self.assertEqual(rec["bytes"], len(b"\x7fELF busybox") + 1 + 1 + 4 + 1 + 3)

    def test_hostile_archives_refused(self):
        """Nothing is written outside the root file system; the unpack fails
        with what is wrong."""
        rel = os.path.relpath(self.outside, os.path.join(self.d, "rootfs"))
        cases = [
            (layer(("../outside/x", F, b"x", 0o644)), r"'../outside/x': a path with \.\."),
            (layer(("/abs", F, b"x", 0o644)), r"'/abs': an absolute path"),
            (layer(("link", L, self.outside, 0o777), ("link/x", F, b"x", 0o644)),
             r"'link/x': its path goes through 'link', not a directory"),
            (layer(("up", L, rel, 0o777), ("up/x", F, b"x", 0o644)), r"its path goes through 'up'"),
            (layer(("h", H, "../outside/y", 0o644)), r"a path with \.\."),
            (layer(("h", H, "nothing", 0o644)), r"a hard link to 'nothing', not a file of the image"),
        ]
        dev = tarfile.TarInfo("dev/null")
        dev.type, dev.devmajor, dev.devminor = tarfile.CHRTYPE, 1, 3
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            t.addfile(dev)
        cases.append((buf.getvalue(), r"'dev/null': a device node or FIFO"))
        for raw, msg in cases:
            with self.subTest(msg):
                with self.assertRaisesRegex(cc.UnpackError, msg):
                    cc.unpack(self.archive(raw), self.rootfs())
                self.assertEqual(os.listdir(self.outside), [])

    def test_random_layers_stay_inside(self):
        """Layers of random members (names with .., absolute, through links;
        links out, to links, FIFOs), seeded: each unpacks or is refused,
        and nothing outside the root file system is written, made or has
        its mode changed."""
        rng = random.Random(2026)
        victim = os.path.join(self.outside, "victim")
        with open(victim, "w") as f:
            f.write("v")
        os.chmod(victim, 0o600)
        names = ["a", "b", "..", ".", "/", "l", "h", ".wh.a", ".wh..wh..opq", "outside", "victim"]
        targets = [self.outside, victim, "../outside/victim", "../../outside", "a", "l", "h", "/", "a/b", "l/victim"]
        for i in range(300):
            members = []
            for _ in range(rng.randint(1, 8)):
                name = "/".join(rng.choice(names) for _ in range(rng.randint(1, 3)))
                typ = rng.choice([D, F, L, L, H, H, tarfile.FIFOTYPE])
                data = b"x" if typ == F else (rng.choice(targets) if typ in (L, H) else None)
                members.append((name, typ, data, rng.choice([0o755, 0o777, 0o4755, 0o1777])))
            try:
                cc.unpack(self.archive(layer(*members)), self.rootfs())
            except cc.UnpackError:
                pass
            with self.subTest(i=i, members=members):
                self.assertEqual(sorted(os.listdir(self.d)), ["image.tar", "outside", "rootfs"])
                self.assertEqual(os.listdir(self.outside), ["victim"])
                self.assertEqual((os.stat(victim).st_mode & 0o7777, read(victim)), (0o600, b"v"))

    def test_digests_checked(self):
        a = self.archive(BASE)
        with tarfile.open(a) as t:
            m = json.load(t.extractfile("manifest.json"))[0]
            blobs = {x.name: t.extractfile(x).read() for x in t.getmembers() if x.isreg()}
        # the layer's bytes changed, its name kept
        name = m["Layers"][0]
        blobs[name] = gzip.compress(layer(("bin", D, None, 0o755)), mtime=0)
        with self.assertRaisesRegex(cc.UnpackError, r"layer sha256:[0-9a-f]{64}: its bytes do not have its digest"):
            cc.unpack(self.blobs_archive("tampered.tar", blobs), self.rootfs())
        # a blob path that is not a digest, a manifest of two images, a blob
        # the archive does not have
        for manifest, regex in (([dict(m, Layers=["../../etc/passwd"])], r"is not blobs/sha256/<digest>"),
                                ([m, m], r"want one image"),
                                ([dict(m, Layers=["blobs/sha256/" + "0" * 64])], r"no blobs/sha256/0{64} in the archive")):
            blobs["manifest.json"] = json.dumps(manifest).encode()
            with self.assertRaisesRegex(cc.UnpackError, regex):
                cc.unpack(self.blobs_archive("bad.tar", blobs), self.rootfs())

    def test_bounded(self):
        with mock.patch.object(cc, "MAX_BYTES", 10):
            with self.assertRaisesRegex(cc.UnpackError, "more than 10 bytes"):
                cc.unpack(self.archive(BASE), self.rootfs())
        with mock.patch.object(cc, "MAX_MEMBERS", 3):
            with self.assertRaisesRegex(cc.UnpackError, "more than 3 members"):
                cc.unpack(self.archive(BASE), self.rootfs())


class HostTest(unittest.TestCase):
    """up and down on this machine's files, the namespace's commands
    recorded (not run)."""

    def setUp(self):
        self.d = tempfile.mkdtemp(prefix="ab-cc-host-")
        self.addCleanup(shutil.rmtree, self.d, True)
        os.makedirs(os.path.join(self.d, "build", "images"))
        self.ran = []

        def sh(*args, **kw):
            self.ran.append(args[:4])
            return subprocess.CompletedProcess(args, 0, "0.31" if args[0] == "dpkg-query" else "", "0.31\n")
        for p in (mock.patch.object(hosts, "sh", sh), mock.patch.object(hosts, "AB_VAR", os.path.join(self.d, "var")),
                  mock.patch.dict(os.environ, {"AB_BUILD": os.path.join(self.d, "build")})):
            p.start()
            self.addCleanup(p.stop)

    def image(self, name, raw):
        with open(os.path.join(self.d, "build", "images", f"{name}.tar"), "wb") as f:
            f.write(mkimage.build(f"ab/{name}:latest", [raw], {"Env": ["PATH=/bin"]}))

    def test_start_records_and_down_removes(self):
        self.image("busybox", BASE)
        # what a run before left
        os.makedirs(os.path.join(self.d, "var", "charliecloud", "img", "stale"))
        fl = suite.Flavor("charliecloud", {"private_tmp": True}, system="charliecloud")
        c = cc.start("charliecloud", fl, ["busybox"])
        root = os.path.join(self.d, "var", "charliecloud")
        self.assertEqual(os.listdir(os.path.join(root, "img")), ["busybox"])
        self.assertTrue(os.path.isfile(os.path.join(root, "img", "busybox", "bin", "busybox")))
        self.assertEqual(self.ran, [("ip", "netns", "del", "ab-charliecloud"), ("ip", "netns", "add", "ab-charliecloud"),
                                    ("ip", "-n", "ab-charliecloud", "link"), ("/usr/bin/ch-run", "--version"),
                                    ("dpkg-query", "-W", "-f=${Version}", "charliecloud-runtime")])
        rec = cc.record(c, fl)
        self.assertEqual((rec["version"], rec["package"]), ("0.31", "charliecloud-runtime 0.31"))
        with open(os.path.join(self.d, "build", "images", "busybox.tar"), "rb") as f:
            self.assertEqual(rec["rootfs"]["ab/busybox"]["sha256"], "sha256:" + hashlib.sha256(f.read()).hexdigest())
        self.assertEqual(rec["options"]["ab/busybox"], ["-t", "--unset-env=*", "--set-env=PATH=/bin"])
        self.assertEqual(rec["settings"], [{"private_tmp": True}])
        self.ran.clear()
        c.down()
        self.assertFalse(os.path.exists(root))
        self.assertEqual(self.ran, [("ip", "netns", "del", "ab-charliecloud")])

    def test_a_failed_start_leaves_nothing(self):
        self.image("busybox", BASE)
        self.image("pingpong", layer(("../x", F, b"x", 0o644)))
        fl = suite.Flavor("charliecloud", {}, system="charliecloud")
        with self.assertRaisesRegex(hosts.HostError, r"charliecloud: .*pingpong.tar: '../x': a path with \.\."):
            cc.start("charliecloud", fl, ["busybox", "pingpong"])
        self.assertFalse(os.path.exists(os.path.join(self.d, "var", "charliecloud")))
        self.assertEqual(self.ran[-1], ("ip", "netns", "del", "ab-charliecloud"))
        self.assertFalse(os.path.exists(os.path.join(self.d, "x")))


@unittest.skipUnless(os.access(cc.CH_RUN, os.X_OK), "ch-run is not installed (hack/stack/install-deps.sh)")
class ChRunTest(unittest.TestCase):
    def test_runs_the_unpacked_image(self):
        """ch-run, with the options the system gives, runs the unpacked
        image's own files, in the image's environment alone."""
        d = tempfile.mkdtemp(prefix="ab-cc-chrun-")
        self.addCleanup(shutil.rmtree, d, True)
        src = os.path.join(d, "src")
        os.makedirs(os.path.join(src, "bin"))
        for x in ("etc", "tmp", "proc", "sys", "dev"):
            os.makedirs(os.path.join(src, x))
        shutil.copy("/bin/busybox", os.path.join(src, "bin", "busybox"))
        os.symlink("busybox", os.path.join(src, "bin", "sh"))
        for name, text in (("marker", "from the image\n"), ("passwd", "root:x:0:0:root:/root:/bin/sh\n"),
                           ("group", "root:x:0:\n")):  # ch-run binds the host's passwd and group there
            with open(os.path.join(src, "etc", name), "w") as f:
                f.write(text)
        archive = os.path.join(d, "image.tar")
        with open(archive, "wb") as f:
            f.write(mkimage.build("ab/t:latest", [mkimage.layer_from_dir(src)], {"Env": ["PATH=/bin", "IMG=1"]}))
        dest = os.path.join(d, "rootfs")
        os.mkdir(dest)
        rec = cc.unpack(archive, dest)
        c = cc.Charliecloud("charliecloud")
        c.config, c.images = {}, {"ab/t": dict(rec, path=dest)}
        p = subprocess.run([*c.ch_run("ab/t"), "sh", "-c", "cat /etc/marker; echo IMG=$IMG HOME=${HOME-unset}"],
                           env=dict(os.environ, **c.env), capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, "from the image\nIMG=1 HOME=unset\n"), p.stderr)


class PretendRunTest(unittest.TestCase):
    def test_run(self):
        """A suite with charliecloud beside stock and patched on the pretend
        machine: charliecloud's cells are cpu (native, container) and
        pingpong (native, host: no bridge), its ch-run lines the clients',
        and its host is taken down."""
        out = tempfile.mkdtemp(prefix="ab-cc-run-")
        self.addCleanup(shutil.rmtree, out, True)
        with fakehosts.pretend() as world:
            s = suite.load(os.path.join(os.path.dirname(__file__), "golden", "overhead-peers.toml"))
            s.repetitions = 2
            self.assertTrue(runner.Runner(s, out).run())
        doc = report.load(out)
        cells = sorted((e["scenario"], e["container"], e["image"]) for e in doc["results"]
                       if e["flavor"] == "charliecloud")
        self.assertEqual(cells, [("cpu", "container", "ab/busybox"), ("cpu", "native", None),
                                 ("pingpong", "host", "ab/pingpong"), ("pingpong", "native", None)])
        self.assertTrue(all(len(e["times_s"]) == 2 for e in doc["results"]))
        self.assertEqual(doc["daemons"]["charliecloud"]["binary"], "ch-run")
        # the clients (the servers are Popen's): ch-run on pingpong's root file system
        clients = [x[x.index("--") - 1:] for x in world.ch_run_calls]
        self.assertEqual(clients, [["/var/lib/moby-ab/charliecloud/img/pingpong", "--", "pingpong", "client",
                                    "-connect", "127.0.0.1:7000", "-n", "1000", "-warmup", "500", "-size", "64"]] * 2)
        self.assertIn("charliecloud", world.downs)
        report.write(out)
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        self.assertIn("| charliecloud (ch-run) |", md)
        self.assertIn("| pingpong: host | charliecloud |", md)


if __name__ == "__main__":
    unittest.main()
