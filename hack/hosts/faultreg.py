#!/usr/bin/env python3
"""A misbehaving registry: an HTTP proxy in front of a real registry that
answers some blob downloads with faults, for tests of how pulls cope.

    faultreg.py --listen 10.199.0.1:5001 --upstream http://10.199.0.1:5000 \\
        --faults 503,429,reset,stall [--stall-seconds 3] [--log FILE]

--faults is the plan. Its one-shot faults are used up in order: the first
blob GETs get them, one each; every later request is passed through
untouched. With --min-size, only GETs of blobs at least that large (bytes)
take a fault, of either sort.
  503, 429, 500...  answer with that status (429 with Retry-After: 1)
  reset             send the headers and half the body, then reset the connection
  reset@F           break the response that carries the blob's byte at the fraction
                    F (reset@0.9: at 90% of the blob, in a whole-blob response or
                    in whichever range holds that byte) there
  stall, stall@F    send half the body (or up to F), wait --stall-seconds, then close
  short             a Content-Length of the whole answer, half the body, then a
                    clean close (FIN): a body cut short
  extra             a Content-Length 64 KiB more than the answer's bytes, the
                    answer and 64 KiB of other bytes, then 64 KiB more beyond the
                    Content-Length, then a clean close
  trickle           the first 64 KiB of the body, then 1 byte a second until the
                    client goes away
  hang              no answer at all: not even the status line, for
                    --stall-seconds, then the connection closes (a registry or
                    proxy that took the connection and never answers)
The other faults are modes: each applies to every blob GET of at least
--min-size (or to what the mode names), for as long as the proxy runs.
  ignore-range      a GET with Range is answered 200 with the whole blob
  bad-range         a GET with Range is answered 206 with other bytes than those
                    asked for, and a Content-Range that says which (a first byte
                    whose digits begin with those of the one asked for, where the
                    blob is large enough: "bytes 10240-" for "bytes=1024-")
  reset-ranges      every answer to a GET with Range is reset half way through its body
  busy-ranges       every GET with Range is answered 429 with Retry-After: 1 for
                    --busy-seconds (3) from the first one, as a rate limiter's
                    window sheds load; answered as the blob's after it
  change            every answer's bytes from the middle of the blob on differ
                    from the blob's (XORed with a value that changes from one
                    answer to the next); headers (ETag too) as for the blob
  redirect-expire   a blob GET at the registry URL is answered 307 to a second
                    listener (--storage-listen) at /storage/<token>/<path>, as a
                    registry redirects to signed storage URLs: a token serves at
                    most --expire-bytes of body, in any number of requests (the
                    answer that reaches the budget stops there with a clean
                    close), and for --expire-seconds; a request with a token
                    used up or expired gets 403, and the client must go back to
                    the registry URL for a new redirect
  token-expire      every /v2/ request needs a bearer token: without one 401 with
                    WWW-Authenticate: Bearer realm="http://<listen>/token"; the
                    token endpoint hands out tokens that expire after
                    --token-seconds (expires_in says so, or says
                    --token-advertise: a token revoked before the expiry it
                    announced); a request with an expired token gets 401 with
                    error="invalid_token", as a registry does. A blob GET without Range sends half its body,
                    waits until the token it came with has expired, then closes
                    cleanly, so that the client goes on with an expired token
  big-manifest[@SIZE]
                    an image manifest asked for by tag is rewritten so that its
                    largest layer is declared SIZE bytes (e.g. 3GiB; default the
                    blob's size + 64 KiB); the rewritten manifest has another
                    digest: it is served under that digest to a client that asks
                    for it, and the tag's HEAD gives that digest. The blob is
                    served as stored, unless --big-pad: then it is served as
                    declared, the blob and zeros up to SIZE, at any speed the
                    client takes
--conn-rate caps the body of every response at that rate per connection, as a
CDN that limits each connection does.
Each fault is logged as a line "FAULT <kind> <path>" (a mode: each answer it
changes; redirect-expire: each answer that uses up a token's budget;
token-expire: each blob answer cut until its token expired), and every blob
response as "SENT <status> <body bytes> <path> <range asked for, or ->
<connection>" (the bytes written before the client went away, if it did; the
storage listener's answers under the blob's registry path), so a test can
count what the registry sent. Refusals are logged as "DENY <status> <path>
<reason>" (an expired token or storage URL), tokens handed out as "TOKEN <n>"
and redirects as "REDIRECT <path>". Every blob GET is also logged when it
arrives and when its response ends, as "BLOB <start|end> <unix time, s>
<connection> <blob GETs open then> <path>": <connection> numbers the TCP
connections in the order they were accepted, so a test sees how many
connections the client opened and used at once; each connection, when
accepted, as "CONN <unix time, s> <connection> <client address>". A summary of
the requests and connections seen goes to the log when the proxy ends
(SIGTERM): the largest number of blob downloads in flight at once, of TCP
connections open at once (idle ones included) and of connections with a blob
response open at once, the connections accepted and those that carried a blob
GET."""
import argparse
import hashlib
import http.client
import http.server
import json
import math
import os
import re
import secrets
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ab import units  # noqa: E402  hack/ab/units.py: the one parser of sizes, rates and durations


# one-shot faults that the proxy answers itself, from the blob's bytes
OWN_FAULTS = ("short", "extra", "trickle")
# one-shot faults that send nothing
SILENT_FAULTS = ("hang",)
# modes: they apply to every blob GET of at least --min-size
MODES = ("ignore-range", "bad-range", "reset-ranges", "busy-ranges", "change", "redirect-expire", "token-expire", "big-manifest")
EXTRA = 64 << 10      # extra: bytes beyond the answer, within and beyond Content-Length
TRICKLE_AFTER = 64 << 10  # trickle: bytes sent at full speed first
BUSY_WINDOW = 3.0     # busy-ranges: --busy-seconds' default


class Plan:
    def __init__(self, faults, min_size=0, modes=None):
        self.faults = list(faults)
        self.min_size = min_size
        # mode -> its parameter (big-manifest: the declared size, or None)
        self.modes = dict(modes or {})
        self.lock = threading.Lock()
        self.sizes = {}      # upstream path -> the blob's stored size
        self.blobs = {}      # upstream path -> the blob's bytes (modes only)
        self.changes = 0     # change: answers changed so far
        self.busy_since = None  # busy-ranges: time.time() of the first GET with Range
        self.tokens = {}     # token-expire: bearer token -> expiry (time.time())
        self.storage = {}    # redirect-expire: URL token -> [bytes left, expiry]
        self.manifests = {}  # big-manifest: digest -> (body, media type)
        self.big = {}        # big-manifest: layer digest -> declared size
        self.seen = {"blob": 0, "other": 0, "faults": 0}
        self.active = 0
        self.peak = 0
        # TCP connections: accepted, open now and at most, and those that
        # carried a blob GET (all, and with a blob response open now)
        self.conns = 0
        self.open_conns = 0
        self.peak_conns = 0
        self.blob_conns = set()
        self.blob_conns_open = {}
        self.peak_blob_conns = 0

    def connected(self):
        with self.lock:
            self.conns += 1
            self.open_conns += 1
            self.peak_conns = max(self.peak_conns, self.open_conns)
            return self.conns

    def disconnected(self):
        with self.lock:
            self.open_conns -= 1

    def enter(self, conn, path, log):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.blob_conns.add(conn)
            self.blob_conns_open[conn] = self.blob_conns_open.get(conn, 0) + 1
            self.peak_blob_conns = max(self.peak_blob_conns, len(self.blob_conns_open))
            log.write(f"BLOB start {time.time():.6f} {conn} {self.active} {path}\n")
            log.flush()

    def leave(self, conn, path, log):
        with self.lock:
            self.active -= 1
            self.blob_conns_open[conn] -= 1
            if not self.blob_conns_open[conn]:
                del self.blob_conns_open[conn]
            log.write(f"BLOB end {time.time():.6f} {conn} {self.active} {path}\n")
            log.flush()

    def next_fault(self, applies=lambda fault: True):
        """The next fault of the plan if applies(it) says it is for this
        request (which then uses it up), else None."""
        with self.lock:
            self.seen["blob"] += 1
            if self.faults and applies(self.faults[0]):
                self.seen["faults"] += 1
                return self.faults.pop(0)
            return None


def make_handler(upstream, plan, stall_s, log, conn_rate=0, opts=None):
    up = urllib.parse.urlsplit(upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def setup(self):
            super().setup()
            self.conn_id = plan.connected()
            with plan.lock:
                log.write(f"CONN {time.time():.6f} {self.conn_id} {self.client_address[0]}\n")
                log.flush()

        def finish(self):
            try:
                super().finish()
            finally:
                plan.disconnected()

        def handle_one_request(self):
            # A TLS client hello: answer in plain HTTP, as Go servers do, so
            # that clients fall back to http for an insecure registry.
            try:
                first = self.rfile.peek(1)[:1]
            except ConnectionResetError:  # an idle connection the client reset
                self.close_connection = True
                return
            if first == b"\x16":
                self.wfile.write(b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
                self.close_connection = True
                return
            super().handle_one_request()

        def _write(self, data):
            """The body, at most --conn-rate on this connection. Returns the
            bytes written: all, or those before the client went away (a
            client may stop reading a blob it asked for whole once other
            streams fetch the rest), which are sent all the same."""
            start, step = time.monotonic(), (16 << 10) if conn_rate else (256 << 10)
            n = 0
            try:
                while n < len(data):
                    n += self.wfile.write(data[n:n + step])
                    if conn_rate:
                        time.sleep(max(0, start + n / conn_rate - time.monotonic()))
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            return n

        def _sent(self, status, n):
            with plan.lock:
                log.write(f"SENT {status} {n} {self.up_path} {self.headers.get('Range') or '-'} {self.conn_id}\n")
                log.flush()

        def _log(self, line):
            with plan.lock:
                log.write(line + "\n")
                log.flush()

        def _forward(self, body_limit=None, stall=False):
            conn = http.client.HTTPConnection(up.hostname, up.port or 80, timeout=60)
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length else None
            # header by header: a client may send several Accept lines
            conn.putrequest(self.command, self.up_path, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", up.netloc)
            for k, v in self.headers.items():
                if k.lower() not in ("host", "connection"):
                    conn.putheader(k, v)
            conn.endheaders(data)
            r = conn.getresponse()
            body = r.read()
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() in ("connection", "transfer-encoding", "content-length"):
                    continue
                if k.lower() == "location" and v.startswith(upstream):
                    v = v[len(upstream):]
                self.send_header(k, v)
            if self.command == "HEAD":
                self.send_header("Content-Length", r.getheader("Content-Length") or "0")
                self.end_headers()
                return
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            blob = "/blobs/" in self.up_path
            if body_limit is None:
                n = self._write(body)
                if blob:
                    self._sent(r.status, n)
                return
            part = body[:body_limit]
            n = self._write(part)
            if blob:
                self._sent(r.status, n)
            if n < len(part):
                return  # the client went away before the fault
            self.wfile.flush()
            if stall:
                time.sleep(stall_s)
            else:
                # let the client read what was sent, so that it sees the
                # reset itself (ECONNRESET), not a body cut short
                time.sleep(0.5)
            # reset: close with SO_LINGER 0, which sends RST (and no FIN
            # before it: see Server.shutdown_request)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with plan.lock:
                self.server.resets.add(self.connection)
            self.close_connection = True

        def _reply(self, status, body=b"", headers=()):
            """A short answer of the proxy's own."""
            self.send_response(status)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self):
            self.up_path = self.path
            plan.seen["other"] += 1
            if self._auth() or self._manifest():
                return
            digest = self.path.rsplit("/", 1)[-1]
            if "/blobs/" in self.path and opts.big_pad and digest in plan.big:
                # the blob as declared
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Docker-Content-Digest", digest)
                self.send_header("Content-Length", str(plan.big[digest]))
                self.end_headers()
                return
            self._forward()

        def do_POST(self):
            self.up_path = self.path
            if self.path.startswith("/token") and "token-expire" in plan.modes:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                return self._token()
            plan.seen["other"] += 1
            self._forward()

        def do_GET(self):
            self.up_path = self.path
            if self.path.startswith("/token") and "token-expire" in plan.modes:
                return self._token()
            storage = None
            if self.path.startswith("/storage/") and "redirect-expire" in plan.modes:
                storage, _, rest = self.path[len("/storage/"):].partition("/")
                self.up_path = "/" + rest
            elif self._auth():
                return
            if "/blobs/" not in self.up_path:
                plan.seen["other"] += 1
                if self._manifest():
                    return
                return self._forward()
            plan.enter(self.conn_id, self.up_path, log)
            try:
                self._blob(storage)
            finally:
                plan.leave(self.conn_id, self.up_path, log)

        # token-expire: a bearer token flow

        def _token(self):
            t = secrets.token_hex(16)
            life = opts.token_seconds
            with plan.lock:
                plan.tokens[t] = time.time() + life
                n = len(plan.tokens)
            self._log(f"TOKEN {n}")
            body = json.dumps({"token": t, "access_token": t, "expires_in": opts.token_advertise,
                               "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode()
            self._reply(200, body, [("Content-Type", "application/json")])

        def _auth(self):
            """With token-expire, answers a /v2/ request that has no valid
            token (True); else False."""
            if "token-expire" not in plan.modes or not self.path.startswith("/v2"):
                return False
            h = self.headers.get("Authorization") or ""
            t = h[len("Bearer "):].strip() if h.startswith("Bearer ") else ""
            now = time.time()
            with plan.lock:
                exp = plan.tokens.get(t)
            if t and exp is not None and exp > now:
                return False
            challenge = f'Bearer realm="http://{opts.listen}/token",service="faultreg"'
            m = re.match(r"/v2/(.+)/(manifests|blobs|tags)/", self.path)
            if m:
                challenge += f',scope="repository:{m.group(1)}:pull"'
            if t:
                # as a registry answers an expired or unknown token
                challenge += ',error="invalid_token"'
                self._log(f"DENY 401 {self.path} {'expired' if exp is not None else 'unknown'}-token")
            if "/blobs/" in self.path:
                self._sent(401, 0)
            self._reply(401, b'{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}',
                        [("Content-Type", "application/json"), ("WWW-Authenticate", challenge)])
            return True

        # big-manifest: a manifest that declares a layer larger than it is

        def _manifest(self):
            """With big-manifest, answers a manifest request by tag or by
            the rewritten manifest's digest (True); else False."""
            if "big-manifest" not in plan.modes:
                return False
            m = re.fullmatch(r"/v2/(.+)/manifests/([^/?]+)", self.path)
            if not m:
                return False
            ref = m.group(2)
            if ref.startswith("sha256:"):
                with plan.lock:
                    got = plan.manifests.get(ref)
                if got is None:
                    return False
                body, mt = got
            else:
                conn = http.client.HTTPConnection(up.hostname, up.port or 80, timeout=60)
                conn.putrequest("GET", self.path, skip_host=True, skip_accept_encoding=True)
                conn.putheader("Host", up.netloc)
                for k, v in self.headers.items():
                    if k.lower() == "accept":
                        conn.putheader(k, v)
                conn.endheaders()
                r = conn.getresponse()
                orig = r.read()
                mt = r.getheader("Content-Type") or ""
                if r.status != 200:
                    return False
                doc = json.loads(orig)
                layers = doc.get("layers") or []
                if not layers:
                    return False
                layer = max(layers, key=lambda d: d.get("size", 0))
                declared = plan.modes["big-manifest"] or layer["size"] + (64 << 10)
                with plan.lock:
                    plan.big[layer["digest"]] = declared
                layer["size"] = declared
                body = json.dumps(doc, indent=3).encode()
                digest = "sha256:" + hashlib.sha256(body).hexdigest()
                with plan.lock:
                    plan.manifests[digest] = (body, mt)
                self._log(f"FAULT big-manifest {self.path}")
            digest = "sha256:" + hashlib.sha256(body).hexdigest()
            self.send_response(200)
            self.send_header("Content-Type", mt)
            self.send_header("Docker-Content-Digest", digest)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            return True

        def _blob(self, storage=None):
            size = None
            if (plan.faults or plan.modes) and plan.min_size:
                size = self._size()
                if size < plan.min_size:
                    with plan.lock:
                        plan.seen["blob"] += 1
                    return self._forward()
            if "redirect-expire" in plan.modes and storage is None:
                with plan.lock:
                    plan.seen["blob"] += 1
                return self._redirect()
            first = None
            if any("@" in f for f in plan.faults[:1]):
                size = self._size()
                first, last = self._range(size)

            def applies(fault):
                # reset@F and stall@F break the response that carries the
                # blob's byte at F (a whole blob or one of its ranges)
                if "@" not in fault:
                    return True
                if first is None:
                    return False
                at = int(size * float(fault.partition("@")[2]))
                return first <= at <= last

            fault = plan.next_fault(applies)
            if fault is not None:
                self._log(f"FAULT {fault} {self.up_path}")
            if fault is None or fault in OWN_FAULTS:
                return self._answer(fault, storage)
            if fault == "hang":
                # until the client gives up or the time is out
                self.connection.settimeout(stall_s)
                try:
                    self.connection.recv(1)
                except (TimeoutError, OSError):
                    pass
                self.close_connection = True
                return
            if fault.isdigit():
                if "/blobs/" in self.up_path:
                    self._sent(int(fault), 0)
                self.send_response(int(fault))
                if fault == "429":
                    self.send_header("Retry-After", "1")
                self.send_header("Content-Type", "application/json")
                msg = b'{"errors":[{"code":"UNAVAILABLE","message":"fault injected"}]}'
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)
                return
            # reset or stall: half the body (or up to the blob's byte at F),
            # then the connection breaks
            kind, _, frac = fault.partition("@")
            if frac:
                limit = int(size * float(frac)) - first
            else:
                limit = self._size() // 2
            self._forward(body_limit=max(1, limit), stall=(kind == "stall"))

        # redirect-expire: blobs from a storage listener, by expiring URL

        def _redirect(self):
            t = secrets.token_hex(8)
            with plan.lock:
                plan.storage[t] = [opts.expire_bytes, time.time() + opts.expire_seconds]
            self._log(f"REDIRECT {self.up_path}")
            self._sent(307, 0)
            self._reply(307, headers=[("Location", f"http://{opts.storage_listen}/storage/{t}{self.up_path}")])

        def _storage_budget(self, token):
            """The bytes the storage URL's token may still send, or None
            (answered 403) if it has expired or is used up."""
            with plan.lock:
                got = plan.storage.get(token)
                left = got[0] if got and got[1] > time.time() else 0
            if left > 0:
                return left
            self._log(f"DENY 403 {self.up_path} expired-url")
            self._sent(403, 0)
            self._reply(403, b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>",
                        [("Content-Type", "application/xml")])
            return None

        def _answer(self, fault, storage):
            """A blob GET answered from the blob's bytes, with the one-shot
            fault (short, extra, trickle; or None) and the modes that apply;
            passed through if none does."""
            m = plan.modes
            rng = self.headers.get("Range")
            digest = self.up_path.rsplit("/", 1)[-1]
            pad = opts.big_pad and digest in plan.big
            token_cut = "token-expire" in m and not rng and self._size() >= plan.min_size
            if rng and "busy-ranges" in m:
                with plan.lock:
                    if plan.busy_since is None:
                        plan.busy_since = time.time()
                    busy = time.time() - plan.busy_since < opts.busy_seconds
                if busy:
                    self._log(f"FAULT busy-ranges {self.up_path}")
                    self._sent(429, 0)
                    return self._reply(429, headers=[("Retry-After", "1")])
            ranged = rng and any(k in m for k in ("ignore-range", "bad-range", "reset-ranges", "busy-ranges"))
            if fault is None and not (ranged or "change" in m or storage or pad or token_cut):
                return self._forward()
            budget = None
            if storage is not None:
                budget = self._storage_budget(storage)
                if budget is None:
                    return
            data = self._data()
            size = plan.big[digest] if pad else len(data)
            first, last = self._range(size)
            if first > last or first >= size:
                self._sent(416, 0)
                return self._reply(416, headers=[("Content-Range", f"bytes */{size}")])
            status = 206 if rng else 200
            cr = f"bytes {first}-{last}/{size}" if rng else None
            length = last - first + 1
            cut = how = None
            extra = 0
            xor = 0
            if rng and "ignore-range" in m:
                self._log(f"FAULT ignore-range {self.up_path}")
                status, cr, first, last = 200, None, 0, size - 1
                length = size
            elif rng and "bad-range" in m:
                self._log(f"FAULT bad-range {self.up_path}")
                first = self._other_first(first, last)
                cr = f"bytes {first}-{last}/{size}"
                length = last - first + 1
            if rng and "reset-ranges" in m:
                self._log(f"FAULT reset-ranges {self.up_path}")
                cut, how = max(1, length // 2), "reset"
            if "change" in m:
                with plan.lock:
                    plan.changes += 1
                    xor = plan.changes % 255 + 1
                self._log(f"FAULT change {self.up_path}")
            if fault == "short":
                cut, how = max(1, length // 2), "close"
            elif fault == "extra":
                extra = EXTRA
            if token_cut:
                self._log(f"FAULT token-expire {self.up_path}")
                cut, how = max(1, length // 2), "token"
            if budget is not None and budget < (cut or length):
                self._log(f"FAULT redirect-expire {self.up_path}")
                cut, how = budget, "close"
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Docker-Content-Digest", digest)
            self.send_header("ETag", f'"{digest}"')
            self.send_header("Accept-Ranges", "bytes")
            if cr:
                self.send_header("Content-Range", cr)
            self.send_header("Content-Length", str(length + extra))
            self.end_headers()
            stop = length if cut is None else min(cut, length)
            n = self._stream(self._chunks(data, size, first, first + stop, xor), trickle=(fault == "trickle"))
            if storage is not None:
                with plan.lock:
                    plan.storage[storage][0] -= n
            if extra and n == stop:
                # the extra bytes: within the Content-Length, then beyond it
                n += self._stream(iter([b"\xa5" * (2 * extra)]))
            self._sent(status, n)
            if n < stop or cut is None:
                if extra:
                    self.close_connection = True
                return
            self.wfile.flush()
            if how == "token":
                with plan.lock:
                    exp = plan.tokens.get((self.headers.get("Authorization") or "")[len("Bearer "):].strip(), 0)
                time.sleep(max(0, exp - time.time()) + 0.2)
            if how == "reset":
                time.sleep(0.5)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                with plan.lock:
                    self.server.resets.add(self.connection)
            self.close_connection = True

        def _other_first(self, first, last):
            """bad-range: another first byte than the one asked for, one
            whose digits begin with its digits where it can."""
            for f in (first * 10, first + 1, first - 1):
                if 0 <= f <= last and f != first:
                    return f
            return first

        def _chunks(self, data, size, start, end, xor):
            """The served bytes [start, end): the blob's, zeros beyond them
            (big-manifest with --big-pad), XORed from the middle on (change)."""
            step = (16 << 10) if conn_rate else (256 << 10)
            table = bytes(b ^ xor for b in range(256)) if xor else None
            zeros = bytes(step)
            at = start
            while at < end:
                n = min(step, end - at)
                if at >= len(data):
                    chunk = zeros[:n]
                else:
                    chunk = data[at:min(at + n, len(data))]
                if table is not None and at + len(chunk) > size // 2:
                    k = max(0, size // 2 - at)
                    chunk = chunk[:k] + chunk[k:].translate(table)
                yield chunk
                at += len(chunk)

        def _stream(self, chunks, trickle=False):
            """Writes the chunks (at --conn-rate; trickle: 1 byte a second
            after TRICKLE_AFTER); returns the bytes written before the client
            went away, if it did."""
            start, n = time.monotonic(), 0
            try:
                for chunk in chunks:
                    i = 0
                    while i < len(chunk):
                        if trickle and n >= TRICKLE_AFTER:
                            w = self.wfile.write(chunk[i:i + 1])
                            self.wfile.flush()
                            time.sleep(1)
                        elif trickle:
                            w = self.wfile.write(chunk[i:i + TRICKLE_AFTER - n])
                        else:
                            w = self.wfile.write(chunk[i:])
                        i += w
                        n += w
                        if conn_rate:
                            time.sleep(max(0, start + n / conn_rate - time.monotonic()))
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            return n

        def _upstream(self, method):
            """The upstream registry's answer to METHOD of this blob."""
            conn = http.client.HTTPConnection(up.hostname, up.port or 80, timeout=60)
            conn.request(method, self.up_path)
            return conn.getresponse()

        def _data(self):
            """The blob's stored bytes (kept: blobs of tests are small)."""
            with plan.lock:
                data = plan.blobs.get(self.up_path)
            if data is None:
                r = self._upstream("GET")
                data = r.read()
                if r.status != 200:
                    raise OSError(f"upstream answered {r.status} for {self.up_path}")
                with plan.lock:
                    plan.blobs[self.up_path] = data
            return data

        def _range(self, size):
            """The first and last byte of the blob this GET asks for."""
            v = (self.headers.get("Range") or "").strip()
            if v.startswith("bytes=") and "," not in v:
                a, _, b = v[len("bytes="):].partition("-")
                try:
                    first = int(a) if a else size - int(b)
                    last = int(b) if a and b else size - 1
                    return first, min(last, size - 1)
                except ValueError:
                    pass
            return 0, size - 1

        def _size(self):
            """The blob's size: as stored, or as declared (big-manifest
            with --big-pad)."""
            digest = self.up_path.rsplit("/", 1)[-1]
            if opts.big_pad and digest in plan.big:
                return plan.big[digest]
            with plan.lock:
                size = plan.sizes.get(self.up_path)
            if size is None:
                r = self._upstream("HEAD")
                r.read()
                size = int(r.getheader("Content-Length") or 2)
                with plan.lock:
                    plan.sizes[self.up_path] = size
            return size

    return Handler


def parse_rate(p, v):
    """bytes per second from "8mbit", "500kbit", "1gbit" or a plain number
    of bits per second (ab.units); 0 if empty"""
    if not v:
        return 0
    try:
        r = units.rate(v, plain=True) / 8
    except ValueError as e:
        p.error(f"--conn-rate: {e}")
    if r <= 0:
        p.error(f"--conn-rate: {v!r}: want a rate above 0, e.g. 8mbit")
    return r


class Server(http.server.ThreadingHTTPServer):
    """Closes a connection to reset without the shutdown(SHUT_WR) that
    socketserver sends first: a FIN would let the client see a short body
    (an EOF) instead of the reset."""
    daemon_threads = True

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.resets = set()

    def shutdown_request(self, request):
        if request in self.resets:
            self.resets.discard(request)
            self.close_request(request)
            return
        super().shutdown_request(request)


def valid_break(f):
    kind, at, frac = f.partition("@")
    if kind not in ("reset", "stall"):
        return False
    if not at:
        return True
    try:
        return 0 < float(frac) < 1
    except ValueError:
        return False


def parse_size(v):
    """bytes from "3GiB", "64KiB", "1MB" or a plain number of bytes
    (ab.units); None if not a size"""
    try:
        return units.size(v.strip(), plain=True)
    except ValueError:
        return None


def option(kind, plain):
    """An argparse type: a size or duration (ab.units), a bare number in
    plain (bytes, seconds); argparse names the option in its error."""
    def convert(v):
        try:
            x = units.parse(kind, v, plain)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return int(x) if kind == "size" else float(x)
    convert.__name__ = kind
    return convert


def parse_faults(p, spec):
    """The one-shot faults (in order) and the modes of --faults."""
    faults, modes = [], {}
    for f in (f.strip() for f in spec.split(",")):
        if not f:
            continue
        kind, at, arg = f.partition("@")
        if valid_break(f) or (f.isdigit() and 400 <= int(f) <= 599) or f in OWN_FAULTS + SILENT_FAULTS:
            faults.append(f)
        elif kind in MODES and (not at or kind == "big-manifest"):
            if kind in modes:
                p.error(f"--faults: {kind} given twice")
            modes[kind] = None
            if at:
                modes[kind] = parse_size(arg)
                if not modes[kind]:
                    p.error(f"--faults: {f!r}: big-manifest@SIZE takes a size, e.g. 3GiB, or a number of bytes")
        else:
            p.error(f"--faults: unknown fault {f!r}: use an HTTP status 400-599, reset[@F] or stall[@F] "
                    f"(0 < F < 1), {', '.join(OWN_FAULTS + SILENT_FAULTS)}, or the modes {', '.join(MODES[:-1])}, big-manifest[@SIZE]")
    return faults, modes


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", required=True, help="address:port to listen on")
    p.add_argument("--upstream", required=True, help="the real registry, e.g. http://10.199.0.1:5000")
    p.add_argument("--faults", default="", help="comma-separated plan, e.g. 503,429,reset,stall")
    p.add_argument("--min-size", type=option("size", "B"), default=0,
                   help="only blobs of at least this size take a fault, e.g. 1MiB, or a number of bytes")
    p.add_argument("--stall-seconds", type=option("duration", "s"), default=3.0,
                   help="stall: how long, e.g. 500ms, or a number of seconds (default 3)")
    p.add_argument("--busy-seconds", type=option("duration", "s"), default=BUSY_WINDOW,
                   help=f"busy-ranges: the window of 429s, e.g. 8, or 1500ms (default {BUSY_WINDOW:g})")
    p.add_argument("--conn-rate", default="", help="cap each connection's response bodies, e.g. 8mbit, or a number of "
                   "bits per second (a CDN's per-connection cap)")
    p.add_argument("--storage-listen", help="redirect-expire: the storage listener, address:port (default: --listen's port + 1)")
    p.add_argument("--expire-bytes", default="1MiB", help="redirect-expire: the body bytes one storage URL serves, "
                   "e.g. 100KiB, or a number of bytes (default 1MiB)")
    p.add_argument("--expire-seconds", type=option("duration", "s"), default=30.0,
                   help="redirect-expire: how long a storage URL lasts, e.g. 30s, or a number of seconds (default 30)")
    p.add_argument("--token-seconds", type=option("duration", "s"), default=3.0,
                   help="token-expire: how long a token lasts, e.g. 3s, or a number of seconds (default 3)")
    p.add_argument("--token-advertise", type=int, help="token-expire: the expires_in handed out with a token "
                   "(default: --token-seconds, rounded up): more is a token revoked before its announced expiry")
    p.add_argument("--big-pad", action="store_true", help="big-manifest: serve the layer as declared (zeros after the blob)")
    p.add_argument("--log", help="log file (default stderr)")
    a = p.parse_args()
    faults, modes = parse_faults(p, a.faults)
    host, port = a.listen.rsplit(":", 1)
    a.storage_listen = a.storage_listen or f"{host}:{int(port) + 1}"
    a.expire_bytes = parse_size(a.expire_bytes)
    if not a.expire_bytes:
        p.error("--expire-bytes: want a size of at least 1 byte, e.g. 1MiB, or a number of bytes")
    if a.expire_seconds <= 0 or a.token_seconds <= 0:
        p.error("--expire-seconds and --token-seconds must be more than 0")
    if a.token_advertise is None:
        a.token_advertise = math.ceil(a.token_seconds)
    if a.token_advertise < 1:
        p.error("--token-advertise must be at least 1 (s)")
    if a.big_pad and "big-manifest" not in modes:
        p.error("--big-pad needs the big-manifest fault")
    log = open(a.log, "a") if a.log else sys.stderr
    plan = Plan(faults, a.min_size, modes)
    handler = make_handler(a.upstream, plan, a.stall_seconds, log, parse_rate(p, a.conn_rate), a)
    srvs = [Server((host, int(port)), handler)]
    if "redirect-expire" in modes:
        shost, sport = a.storage_listen.rsplit(":", 1)
        srvs.append(Server((shost, int(sport)), handler))
        threading.Thread(target=srvs[1].serve_forever, daemon=True).start()

    def stop(*_):
        log.write(f"SUMMARY blob_requests={plan.seen['blob']} other_requests={plan.seen['other']} "
                  f"faults={plan.seen['faults']} unused_faults={len(plan.faults)} max_concurrent_blobs={plan.peak} "
                  f"connections={plan.conns} max_open_connections={plan.peak_conns} "
                  f"blob_connections={len(plan.blob_conns)} max_blob_connections={plan.peak_blob_conns}\n")
        log.flush()
        for srv in srvs:
            threading.Thread(target=srv.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    srvs[0].serve_forever()


if __name__ == "__main__":
    main()
