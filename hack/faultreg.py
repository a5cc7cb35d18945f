#!/usr/bin/env python3
"""A misbehaving registry: an HTTP proxy in front of a real registry that
answers some blob downloads with faults, for tests of how pulls cope.

    faultreg.py --listen 10.199.0.1:5001 --upstream http://10.199.0.1:5000 \\
        --faults 503,429,reset,stall [--stall-seconds 3] [--log FILE]

--faults is the plan: the first blob GETs get these faults, one each, in
order; every later request is passed through untouched. With --min-size,
only GETs of blobs at least that large (bytes) take a fault.
  503, 429, 500...  answer with that status (429 with Retry-After: 1)
  reset             send the headers and half the body, then reset the connection
  reset@F           break the response that carries the blob's byte at the fraction
                    F (reset@0.9: at 90% of the blob, in a whole-blob response or
                    in whichever range holds that byte) there
  stall, stall@F    send half the body (or up to F), wait --stall-seconds, then close
--conn-rate caps the body of every response at that rate per connection, as a
CDN that limits each connection does.
Each fault is logged as a line "FAULT <kind> <path>", and every blob response
as "SENT <status> <body bytes> <path> <range asked for, or ->" (the bytes
written before the client went away, if it did), so a test can count what
the registry sent. Every blob GET is also logged when it arrives and when
its response ends, as "BLOB <start|end> <unix time, s> <connection> <blob
GETs open then> <path>": <connection> numbers the TCP connections in the
order they were accepted, so a test sees how many connections the client
opened and used at once. A summary of the requests and connections seen
goes to the log when the proxy ends (SIGTERM): the largest number of blob
downloads in flight at once, of TCP connections open at once (idle ones
included) and of connections with a blob response open at once, the
connections accepted and those that carried a blob GET."""
import argparse
import http.client
import http.server
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse


class Plan:
    def __init__(self, faults, min_size=0):
        self.faults = list(faults)
        self.min_size = min_size
        self.lock = threading.Lock()
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


def make_handler(upstream, plan, stall_s, log, conn_rate=0):
    up = urllib.parse.urlsplit(upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def setup(self):
            super().setup()
            self.conn_id = plan.connected()

        def finish(self):
            try:
                super().finish()
            finally:
                plan.disconnected()

        def handle_one_request(self):
            # A TLS client hello: answer in plain HTTP, as Go servers do, so
            # that clients fall back to http for an insecure registry.
            if self.rfile.peek(1)[:1] == b"\x16":
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
                log.write(f"SENT {status} {n} {self.path} {self.headers.get('Range') or '-'}\n")
                log.flush()

        def _forward(self, body_limit=None, stall=False):
            conn = http.client.HTTPConnection(up.hostname, up.port or 80, timeout=60)
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length) if length else None
            # header by header: a client may send several Accept lines
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
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
            blob = "/blobs/" in self.path
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

        def do_HEAD(self):
            plan.seen["other"] += 1
            self._forward()

        def do_GET(self):
            if "/blobs/" not in self.path:
                plan.seen["other"] += 1
                return self._forward()
            plan.enter(self.conn_id, self.path, log)
            try:
                self._blob()
            finally:
                plan.leave(self.conn_id, self.path, log)

        def _blob(self):
            if plan.min_size and plan.faults and self._blob_size() < plan.min_size:
                with plan.lock:
                    plan.seen["blob"] += 1
                return self._forward()
            size = first = None
            if any("@" in f for f in plan.faults[:1]):
                size = self._blob_size()
                first, last = self._range(size)

            def applies(fault):
                # reset@F and stall@F break the response that carries the
                # blob's byte at F (a whole blob or one of its ranges)
                if "@" not in fault:
                    return True
                if size is None:
                    return False
                at = int(size * float(fault.partition("@")[2]))
                return first <= at <= last

            fault = plan.next_fault(applies)
            if fault is None:
                return self._forward()
            log.write(f"FAULT {fault} {self.path}\n")
            log.flush()
            if fault.isdigit():
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
                limit = self._blob_size() // 2
            self._forward(body_limit=max(1, limit), stall=(kind == "stall"))

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

        def _blob_size(self):
            conn = http.client.HTTPConnection(up.hostname, up.port or 80, timeout=60)
            conn.request("HEAD", self.path)
            r = conn.getresponse()
            r.read()
            return int(r.getheader("Content-Length") or 2)

    return Handler


def parse_rate(p, v):
    """bytes per second from "8mbit", "500kbit", "1gbit" or bits per second; 0 if empty"""
    if not v:
        return 0
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "bit": 1}
    for u, f in units.items():
        if v.lower().endswith(u):
            try:
                r = float(v[: -len(u)]) * f / 8
            except ValueError:
                break
            if r > 0:
                return r
            break
    p.error(f"--conn-rate: {v!r} is not a rate: use e.g. 8mbit, 500kbit")


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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", required=True, help="address:port to listen on")
    p.add_argument("--upstream", required=True, help="the real registry, e.g. http://10.199.0.1:5000")
    p.add_argument("--faults", default="", help="comma-separated plan, e.g. 503,429,reset,stall")
    p.add_argument("--min-size", type=int, default=0, help="only blobs of at least this many bytes take a fault")
    p.add_argument("--stall-seconds", type=float, default=3.0)
    p.add_argument("--conn-rate", default="", help="cap each connection's response bodies, e.g. 8mbit (a CDN's per-connection cap)")
    p.add_argument("--log", help="log file (default stderr)")
    a = p.parse_args()
    faults = [f.strip() for f in a.faults.split(",") if f.strip()]
    for f in faults:
        if not (valid_break(f) or (f.isdigit() and 400 <= int(f) <= 599)):
            p.error(f"--faults: unknown fault {f!r}: use an HTTP status 400-599, reset[@F] or stall[@F] (0 < F < 1)")
    log = open(a.log, "a") if a.log else sys.stderr
    host, port = a.listen.rsplit(":", 1)
    plan = Plan(faults, a.min_size)
    srv = Server((host, int(port)), make_handler(a.upstream, plan, a.stall_seconds, log, parse_rate(p, a.conn_rate)))

    def stop(*_):
        log.write(f"SUMMARY blob_requests={plan.seen['blob']} other_requests={plan.seen['other']} "
                  f"faults={plan.seen['faults']} unused_faults={len(plan.faults)} max_concurrent_blobs={plan.peak} "
                  f"connections={plan.conns} max_open_connections={plan.peak_conns} "
                  f"blob_connections={len(plan.blob_conns)} max_blob_connections={plan.peak_blob_conns}\n")
        log.flush()
        threading.Thread(target=srv.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    srv.serve_forever()


if __name__ == "__main__":
    main()
