#!/usr/bin/env python3
"""A misbehaving registry: an HTTP proxy in front of a real registry that
answers some blob downloads with faults, for tests of how pulls cope.

    faultreg.py --listen 10.199.0.1:5001 --upstream http://10.199.0.1:5000 \\
        --faults 503,429,reset,stall [--stall-seconds 3] [--log FILE]

--faults is the plan: the first blob GETs get these faults, one each, in
order; every later request is passed through untouched.
  503, 429, 500...  answer with that status (429 with Retry-After: 1)
  reset             send the headers and half the body, then reset the connection
  stall             send half the body, wait --stall-seconds, then close
Each fault is logged as a line "FAULT <kind> <path>"; a summary of the
requests seen, with the largest number of blob downloads in flight at once,
goes to the log when the proxy ends (SIGTERM)."""
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
    def __init__(self, faults):
        self.faults = list(faults)
        self.lock = threading.Lock()
        self.seen = {"blob": 0, "other": 0, "faults": 0}
        self.active = 0
        self.peak = 0

    def enter(self):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)

    def leave(self):
        with self.lock:
            self.active -= 1

    def next_fault(self):
        with self.lock:
            self.seen["blob"] += 1
            if self.faults:
                self.seen["faults"] += 1
                return self.faults.pop(0)
            return None


def make_handler(upstream, plan, stall_s, log):
    up = urllib.parse.urlsplit(upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            pass

        def handle_one_request(self):
            # A TLS client hello: answer in plain HTTP, as Go servers do, so
            # that clients fall back to http for an insecure registry.
            if self.rfile.peek(1)[:1] == b"\x16":
                self.wfile.write(b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
                self.close_connection = True
                return
            super().handle_one_request()

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
            if body_limit is None:
                self.wfile.write(body)
                return
            self.wfile.write(body[:body_limit])
            self.wfile.flush()
            if stall:
                time.sleep(stall_s)
            # reset: close with SO_LINGER 0, which sends RST
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True

        def do_HEAD(self):
            plan.seen["other"] += 1
            self._forward()

        def do_GET(self):
            if "/blobs/" not in self.path:
                plan.seen["other"] += 1
                return self._forward()
            plan.enter()
            try:
                self._blob()
            finally:
                plan.leave()

        def _blob(self):
            fault = plan.next_fault()
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
            # reset or stall: half the blob, then the connection breaks
            size = self._blob_size()
            self._forward(body_limit=max(1, size // 2), stall=(fault == "stall"))

        def _blob_size(self):
            conn = http.client.HTTPConnection(up.hostname, up.port or 80, timeout=60)
            conn.request("HEAD", self.path)
            r = conn.getresponse()
            r.read()
            return int(r.getheader("Content-Length") or 2)

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--listen", required=True, help="address:port to listen on")
    p.add_argument("--upstream", required=True, help="the real registry, e.g. http://10.199.0.1:5000")
    p.add_argument("--faults", default="", help="comma-separated plan, e.g. 503,429,reset,stall")
    p.add_argument("--stall-seconds", type=float, default=3.0)
    p.add_argument("--log", help="log file (default stderr)")
    a = p.parse_args()
    faults = [f.strip() for f in a.faults.split(",") if f.strip()]
    for f in faults:
        if not (f in ("reset", "stall") or (f.isdigit() and 400 <= int(f) <= 599)):
            p.error(f"--faults: unknown fault {f!r}: use an HTTP status 400-599, reset or stall")
    log = open(a.log, "a") if a.log else sys.stderr
    host, port = a.listen.rsplit(":", 1)
    plan = Plan(faults)
    srv = http.server.ThreadingHTTPServer((host, int(port)), make_handler(a.upstream, plan, a.stall_seconds, log))
    srv.daemon_threads = True

    def stop(*_):
        log.write(f"SUMMARY blob_requests={plan.seen['blob']} other_requests={plan.seen['other']} "
                  f"faults={plan.seen['faults']} unused_faults={len(plan.faults)} max_concurrent_blobs={plan.peak}\n")
        log.flush()
        threading.Thread(target=srv.shutdown).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    srv.serve_forever()


if __name__ == "__main__":
    main()
