"""hack/hosts/faultreg.py: each fault answers as its docstring says, in front of
a registry of one blob and one manifest, on loopback."""
import hashlib
import http.client
import http.server
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HACK = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOB = random.Random(7).randbytes(300 << 10)
DIGEST = "sha256:" + hashlib.sha256(BLOB).hexdigest()
SMALL = b"config"
SMALL_DIGEST = "sha256:" + hashlib.sha256(SMALL).hexdigest()
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {"digest": SMALL_DIGEST, "size": len(SMALL)},
                       "layers": [{"digest": DIGEST, "size": len(BLOB)}]}).encode()


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _body(self):
        if self.path == f"/v2/r/blobs/{DIGEST}":
            return BLOB, "application/octet-stream"
        if self.path == f"/v2/r/blobs/{SMALL_DIGEST}":
            return SMALL, "application/octet-stream"
        if self.path == "/v2/r/manifests/v1":
            return MANIFEST, "application/vnd.oci.image.manifest.v1+json"
        if self.path == "/v2/":
            return b"{}", "application/json"
        return None, None

    def do_HEAD(self):
        body, ct = self._body()
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", ct or "text/plain")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()

    def do_GET(self):
        self.do_HEAD()
        body, _ = self._body()
        self.wfile.write(body or b"")


def free_port():
    """A free port whose next one is free too (redirect-expire's storage
    listener takes it)."""
    while True:
        with socket.socket() as s, socket.socket() as s2:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            try:
                s2.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
            return port


class FaultregTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.up = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
        threading.Thread(target=cls.up.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.up.shutdown()
        cls.up.server_close()

    def start(self, *args):
        self.port = free_port()
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.log = os.path.join(self.tmp.name, "faults.log")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HACK, "hosts", "faultreg.py"), "--listen", f"127.0.0.1:{self.port}",
             "--upstream", f"http://127.0.0.1:{self.up.server_address[1]}", "--log", self.log] + list(args),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.addCleanup(self.stop)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.fail("faultreg did not start: " + self.proc.stderr.read().decode())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc.stderr.close()

    def get(self, path, headers=None, port=None, method="GET"):
        """status, headers, body (as much as came before the connection
        ended), and the error that ended it, if any"""
        c = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=10)
        c.request(method, path, headers=headers or {})
        r = c.getresponse()
        body, err = b"", None
        try:
            while True:
                chunk = r.read1(1 << 16) if method == "GET" else b""
                if not chunk:
                    break
                body += chunk
        except (http.client.IncompleteRead, ConnectionResetError) as e:
            err = e
        if err is None and method == "GET" and len(body) < int(r.headers.get("Content-Length") or 0):
            err = http.client.IncompleteRead(body)
        c.close()
        return r.status, r.headers, body, err

    def logged(self, prefix):
        with open(self.log) as f:
            return [l.split() for l in f if l.startswith(prefix)]

    def test_unknown_fault_is_refused(self):
        r = subprocess.run([sys.executable, os.path.join(HACK, "hosts", "faultreg.py"), "--listen", "127.0.0.1:1",
                            "--upstream", "http://127.0.0.1:2", "--faults", "ignore-ranges"],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown fault 'ignore-ranges'", r.stderr)

    def test_passthrough_without_faults(self):
        self.start()
        st, _, body, _ = self.get(f"/v2/r/blobs/{DIGEST}", {"Range": "bytes=10-19"})
        self.assertEqual(st, 200)  # the upstream ignores Range; the proxy passes it on
        self.assertEqual(body, BLOB)

    def test_ignore_range(self):
        self.start("--faults", "ignore-range", "--min-size", "1024")
        st, h, body, _ = self.get(f"/v2/r/blobs/{DIGEST}", {"Range": "bytes=1000-"})
        self.assertEqual((st, body, h["Content-Range"]), (200, BLOB, None))
        st, _, body, _ = self.get(f"/v2/r/blobs/{SMALL_DIGEST}", {"Range": "bytes=1-"})
        self.assertEqual(body, SMALL)  # below --min-size: passed through
        self.stop()
        self.assertEqual(self.logged("FAULT"), [["FAULT", "ignore-range", f"/v2/r/blobs/{DIGEST}"]])

    def test_bad_range(self):
        self.start("--faults", "bad-range")
        st, h, body, _ = self.get(f"/v2/r/blobs/{DIGEST}", {"Range": "bytes=1024-"})
        self.assertEqual(st, 206)
        self.assertEqual(h["Content-Range"], f"bytes 10240-{len(BLOB) - 1}/{len(BLOB)}")
        self.assertEqual(body, BLOB[10240:])
        # whole GETs are not touched
        st, _, body, _ = self.get(f"/v2/r/blobs/{DIGEST}")
        self.assertEqual((st, body), (200, BLOB))

    def test_short_then_passthrough(self):
        self.start("--faults", "short")
        st, h, body, err = self.get(f"/v2/r/blobs/{DIGEST}")
        self.assertEqual((st, int(h["Content-Length"])), (200, len(BLOB)))
        self.assertIsInstance(err, http.client.IncompleteRead)
        self.assertEqual(body, BLOB[:len(BLOB) // 2])
        self.assertEqual(self.get(f"/v2/r/blobs/{DIGEST}")[2], BLOB)

    def test_hang(self):
        """hang: the first blob GET gets no answer, not even a status line,
        for --stall-seconds, then its connection closes; the next is
        answered"""
        self.start("--faults", "hang", "--stall-seconds", "0.6")
        c = socket.create_connection(("127.0.0.1", self.port))
        c.settimeout(5)
        t0 = time.monotonic()
        c.sendall(f"GET /v2/r/blobs/{DIGEST} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        raw = b""
        while chunk := c.recv(1 << 16):
            raw += chunk
        c.close()
        took = time.monotonic() - t0
        self.assertEqual(raw, b"")
        self.assertGreaterEqual(took, 0.5)
        self.assertLess(took, 4)
        self.assertEqual(self.get(f"/v2/r/blobs/{DIGEST}")[2], BLOB)
        self.assertEqual(len(self.logged("FAULT hang")), 1)

    def test_extra(self):
        self.start("--faults", "extra")
        c = socket.create_connection(("127.0.0.1", self.port))
        c.sendall(f"GET /v2/r/blobs/{DIGEST} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        raw = b""
        while chunk := c.recv(1 << 16):
            raw += chunk
        c.close()
        head, _, body = raw.partition(b"\r\n\r\n")
        self.assertIn(f"Content-Length: {len(BLOB) + (64 << 10)}".encode(), head)
        self.assertEqual(len(body), len(BLOB) + (128 << 10))
        self.assertEqual(body[:len(BLOB)], BLOB)

    def test_change(self):
        self.start("--faults", "change")
        one = self.get(f"/v2/r/blobs/{DIGEST}")[2]
        two = self.get(f"/v2/r/blobs/{DIGEST}", {"Range": "bytes=100-"})[2]
        half = len(BLOB) // 2
        self.assertEqual(one[:half], BLOB[:half])
        self.assertNotEqual(one[half:], BLOB[half:])
        self.assertEqual(len(one), len(BLOB))
        self.assertEqual(two[:half - 100], BLOB[100:half])
        self.assertNotEqual(two[half - 100:], one[half:])  # another change each time

    def test_reset_ranges(self):
        self.start("--faults", "reset-ranges")
        st, _, body, err = self.get(f"/v2/r/blobs/{DIGEST}", {"Range": "bytes=0-"})
        self.assertEqual(st, 206)
        self.assertIsInstance(err, ConnectionResetError)
        self.assertEqual(body, BLOB[:len(BLOB) // 2])
        self.assertEqual(self.get(f"/v2/r/blobs/{DIGEST}")[2], BLOB)

    def test_busy_ranges(self):
        self.start("--faults", "busy-ranges")
        st, h, body, _ = self.get(f"/v2/r/blobs/{DIGEST}", {"Range": "bytes=100-199"})
        self.assertEqual((st, h["Retry-After"], body), (429, "1", b""))
        # whole GETs are not touched, in the window too
        self.assertEqual(self.get(f"/v2/r/blobs/{DIGEST}")[:3:2], (200, BLOB))
        # after the window, the range as asked for
        time.sleep(3.1)
        st, h, body, _ = self.get(f"/v2/r/blobs/{DIGEST}", {"Range": "bytes=100-199"})
        self.assertEqual((st, h["Content-Range"], body), (206, f"bytes 100-199/{len(BLOB)}", BLOB[100:200]))
        self.stop()
        self.assertEqual(self.logged("FAULT"), [["FAULT", "busy-ranges", f"/v2/r/blobs/{DIGEST}"]])

    def test_trickle(self):
        self.start("--faults", "trickle")
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", f"/v2/r/blobs/{DIGEST}")
        r = c.getresponse()
        got = r.read(64 << 10)
        t0 = time.monotonic()
        got += r.read(2)
        self.assertGreater(time.monotonic() - t0, 0.9)
        self.assertEqual(got, BLOB[:len(got)])
        c.close()

    def test_redirect_expire(self):
        self.start("--faults", "redirect-expire", "--expire-bytes", "100KiB")
        st, h, _, _ = self.get(f"/v2/r/blobs/{DIGEST}")
        self.assertEqual(st, 307)
        loc = h["Location"]
        self.assertRegex(loc, rf"^http://127.0.0.1:{self.port + 1}/storage/[0-9a-f]+/v2/r/blobs/{DIGEST}$")
        path = loc.split(str(self.port + 1), 1)[1]
        st, _, body, err = self.get(path, port=self.port + 1)
        self.assertEqual(st, 200)
        self.assertEqual(body, BLOB[:100 << 10])
        self.assertIsNotNone(err)
        self.assertEqual(self.get(path, {"Range": f"bytes={100 << 10}-"}, port=self.port + 1)[0], 403)
        # a new redirect: a new budget
        path2 = self.get(f"/v2/r/blobs/{DIGEST}")[1]["Location"].split(str(self.port + 1), 1)[1]
        st, h, body, _ = self.get(path2, {"Range": f"bytes={100 << 10}-{150 << 10}"}, port=self.port + 1)
        self.assertEqual((st, body), (206, BLOB[100 << 10:(150 << 10) + 1]))
        self.stop()
        self.assertEqual(len(self.logged("DENY 403")), 1)
        self.assertEqual(len(self.logged("FAULT redirect-expire")), 1)
        sent = sum(int(l[2]) for l in self.logged("SENT") if l[3] == f"/v2/r/blobs/{DIGEST}")
        self.assertEqual(sent, (100 << 10) + (50 << 10) + 1)

    def test_token_expire(self):
        self.start("--faults", "token-expire", "--token-seconds", "1")
        st, h, _, _ = self.get("/v2/r/manifests/v1")
        self.assertEqual(st, 401)
        self.assertEqual(h["WWW-Authenticate"],
                         f'Bearer realm="http://127.0.0.1:{self.port}/token",service="faultreg",scope="repository:r:pull"')
        st, _, body, _ = self.get("/token?scope=repository:r:pull&service=faultreg")
        tok = json.loads(body)
        self.assertEqual(tok["expires_in"], 1)
        auth = {"Authorization": "Bearer " + tok["token"]}
        self.assertEqual(self.get("/v2/r/manifests/v1", auth)[2], MANIFEST)
        # a whole blob: half, then the end once the token has expired
        t0 = time.monotonic()
        st, _, body, err = self.get(f"/v2/r/blobs/{DIGEST}", auth)
        self.assertGreater(time.monotonic() - t0, 0.5)
        self.assertEqual((st, body), (200, BLOB[:len(BLOB) // 2]))
        self.assertIsInstance(err, http.client.IncompleteRead)
        st, h, _, _ = self.get(f"/v2/r/blobs/{DIGEST}", dict(auth, Range="bytes=10-"))
        self.assertEqual(st, 401)
        self.assertIn('error="invalid_token"', h["WWW-Authenticate"])

    def test_token_advertise(self):
        self.start("--faults", "token-expire", "--token-seconds", "0.5", "--token-advertise", "300")
        tok = json.loads(self.get("/token")[2])
        self.assertEqual(tok["expires_in"], 300)
        auth = {"Authorization": "Bearer " + tok["token"]}
        self.assertEqual(self.get("/v2/r/manifests/v1", auth)[0], 200)
        time.sleep(0.6)
        self.assertEqual(self.get("/v2/r/manifests/v1", auth)[0], 401)
        self.stop()
        self.assertEqual(self.logged("DENY"), [["DENY", "401", "/v2/r/manifests/v1", "expired-token"]])

    def test_big_manifest(self):
        self.start("--faults", "big-manifest@3GiB", "--big-pad")
        accept = {"Accept": "application/vnd.oci.image.manifest.v1+json"}
        st, h, body, _ = self.get("/v2/r/manifests/v1", accept)
        self.assertEqual(st, 200)
        doc = json.loads(body)
        self.assertEqual(doc["layers"][0]["size"], 3 << 30)
        digest = "sha256:" + hashlib.sha256(body).hexdigest()
        self.assertEqual(h["Docker-Content-Digest"], digest)
        self.assertEqual(self.get(f"/v2/r/manifests/{digest}", accept)[2], body)
        st, h, _, _ = self.get("/v2/r/manifests/v1", accept, method="HEAD")
        self.assertEqual(h["Docker-Content-Digest"], digest)
        # padded: the blob as declared (its end asked for, not 3 GiB)
        st, h, body, _ = self.get(f"/v2/r/blobs/{DIGEST}", {"Range": f"bytes={len(BLOB) - 2}-{len(BLOB) + 1}"})
        self.assertEqual((st, h["Content-Range"]), (206, f"bytes {len(BLOB) - 2}-{len(BLOB) + 1}/{3 << 30}"))
        self.assertEqual(body, BLOB[-2:] + b"\0\0")

    def test_big_manifest_blob_as_stored(self):
        self.start("--faults", "big-manifest")
        doc = json.loads(self.get("/v2/r/manifests/v1")[2])
        self.assertEqual(doc["layers"][0]["size"], len(BLOB) + (64 << 10))
        self.assertEqual(self.get(f"/v2/r/blobs/{DIGEST}")[2], BLOB)

    def test_timeline_reads_the_log(self):
        """What faultreg logs of each connection and response is what
        ab.timeline reads back: the requests, their bytes and Range, the
        client's address."""
        from ab import timeline
        self.start()
        self.get(f"/v2/r/blobs/{DIGEST}")
        self.get(f"/v2/r/blobs/{DIGEST}", {"Range": "bytes=100-199"})
        self.get(f"/v2/r/blobs/{SMALL_DIGEST}")
        self.stop()
        with open(self.log) as f:
            reqs = timeline.parse(f)
        self.assertEqual([(r["host"], r["bytes"], r["range"]) for r in reqs],
                         [("127.0.0.1", len(BLOB), None), ("127.0.0.1", len(BLOB), "bytes=100-199"),
                          ("127.0.0.1", len(SMALL), None)])
        self.assertEqual(len({r["conn"] for r in reqs}), 3)
        self.assertTrue(all(r["start"] <= r["end"] for r in reqs))


if __name__ == "__main__":
    unittest.main()
