#!/usr/bin/env python3
"""A misbehaving HTTP server for ggufmap's remote tests (Python 3 stdlib only).

nginx serves files correctly; this serves them wrongly, on purpose, one way per
path prefix, so that every fault ggufmap must survive is one request away:

  /ok/F          Range honoured (the reference)
  /norange/F     Range ignored: 200 and the whole file, written until the
                 client hangs up (bytes written are logged)
  /truncated/F   206 whose body stops after 64 bytes, connection closed
  /badrange/F    206 with a Content-Range 100 bytes off
  /416/F         always 416
  /429/F         429 with Retry-After: 1 the first time, then /ok/F
  /500/F         always 500
  /stall/F       headers, then silence
  /silent/F      no answer at all
  /loop/F        302 to itself
  /hub/F         needs "Authorization: Bearer TOKEN" (401 otherwise), then
                 302 to http://127.0.0.2:PORT/cdn/F
  /cdn/F         a CDN: refuses with 400 any request that carries a token
  /huge/N        a 2**62-byte file whose header claims N tensors
  /tiny/N        the same header as a 24-byte file
  /drip/F        206 and its headers, then the body at 2 bytes a second
  /bigheader/F   an answer with a 150 KB header line (libcurl's limit: 100 KB)
  /longloc/N     302 to a Location of N bytes (a path of 'a's, then /ok/...)
  /esc/F         302 to http://HOST/esc2/ESC[31mF (a terminal colour in a URL)
  /esc2/ESC[31mF  the file F (Range honoured)
  /noetag/F      Range honoured, no ETag, a fixed Last-Modified; 304 to an
                 If-Modified-Since of that date
  /lmchange/F    no ETag, and a Last-Modified that changes at every request
  /dots/P        404, logging the path as received (dot segments kept?)

F names a file in the folder served.  Usage:
  fault_server.py ROOT PORT_FILE TOKEN LOG
binds 127.0.0.1 and 127.0.0.2 on one free port, writes the port to PORT_FILE,
and logs one line per request to LOG ("PATH range=R auth=yes|no -> STATUS").
"""
import os
import re
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT, PORT_FILE, TOKEN, LOG = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
log_lock = threading.Lock()
seen = set()  # paths of /429/ already answered 429
LAST_MODIFIED = "Wed, 21 Oct 2015 07:28:00 GMT"
lm_counter = [0]


def log(line):
    with log_lock:
        with open(LOG, "a") as f:
            f.write(line + "\n")


def huge_header(n_tensors):
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, 0)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, headers=(), body=b""):
        log(f"{self.path} range={self.headers.get('Range', '-')} "
            f"auth={'yes' if self.headers.get('Authorization') else 'no'} -> {status}")
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        if not any(k.lower() == "content-length" for k, _ in headers):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def wanted_range(self, size):
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        if not m:
            return None
        first = int(m.group(1))
        last = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
        return first, last

    def read_part(self, name, first, last):
        if name.startswith("huge/") or name.startswith("tiny/"):
            head = huge_header(int(name.split("/")[1]))
            data = head[first:last + 1]
            return data + b"\0" * (last + 1 - first - len(data))
        with open(os.path.join(ROOT, name), "rb") as f:
            f.seek(first)
            return f.read(last + 1 - first)

    def size_of(self, name):
        if name.startswith("huge/"):
            return 2 ** 62
        if name.startswith("tiny/"):
            return 24
        return os.path.getsize(os.path.join(ROOT, name))

    def serve_ranged(self, name, shift=0, truncate=False, validator=("ETag", '"fault-1"')):
        size = self.size_of(name)
        r = self.wanted_range(size)
        if r is None or r[0] >= size:
            return self.answer(416, [("Content-Range", f"bytes */{size}")])
        first, last = r
        body = self.read_part(name, first, last)
        headers = [("Content-Range", f"bytes {first + shift}-{last + shift}/{size}"), validator]
        if truncate:
            log(f"{self.path} range={self.headers.get('Range')} -> 206 truncated")
            self.send_response(206)
            for k, v in headers + [("Content-Length", str(len(body)))]:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body[:64])
            self.wfile.flush()
            self.close_connection = True
            return
        self.answer(206, headers, body)

    def serve_whole(self, name):
        size = self.size_of(name)
        log(f"{self.path} range={self.headers.get('Range', '-')} -> 200 (Range ignored)")
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.end_headers()
        sent = 0
        try:
            with open(os.path.join(ROOT, name), "rb") as f:
                while sent < size:
                    chunk = f.read(65536) or b"\0" * min(65536, size - sent)
                    self.wfile.write(chunk)
                    sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        log(f"{self.path} norange wrote {sent} of {size} bytes")
        self.close_connection = True

    def do_GET(self):
        if self.path.startswith("/esc2/"):
            return self.serve_ranged(self.path[len("/esc2/"):].replace("\x1b[31m", "").replace("%1B[31m", ""))
        if self.path.startswith("/dots/"):
            return self.answer(404)  # answer() logs the path as it came
        m = re.fullmatch(r"/([a-z0-9]+)/(.+)", self.path)
        if not m:
            return self.answer(404)
        kind, name = m.groups()
        auth = self.headers.get("Authorization")
        if kind in ("ok", "huge", "tiny"):
            return self.serve_ranged(name if kind == "ok" else f"{kind}/{name}")
        if kind == "norange":
            return self.serve_whole(name)
        if kind == "truncated":
            return self.serve_ranged(name, truncate=True)
        if kind == "badrange":
            return self.serve_ranged(name, shift=100)
        if kind == "416":
            return self.answer(416, [("Content-Range", f"bytes */{self.size_of(name)}")])
        if kind == "429":
            if self.path not in seen:
                seen.add(self.path)
                return self.answer(429, [("Retry-After", "1")])
            return self.serve_ranged(name)
        if kind == "500":
            return self.answer(500)
        if kind == "stall":
            log(f"{self.path} -> 206 stalled")
            self.send_response(206)
            self.send_header("Content-Range", f"bytes 0-65535/{self.size_of(name)}")
            self.send_header("Content-Length", "65536")
            self.end_headers()
            self.wfile.flush()
            time.sleep(60)
            self.close_connection = True
            return
        if kind == "silent":
            log(f"{self.path} -> (no answer)")
            time.sleep(60)
            self.close_connection = True
            return
        if kind == "loop":
            return self.answer(302, [("Location", self.path)])
        if kind == "hub":
            if auth != f"Bearer {TOKEN}":
                return self.answer(401)
            port = self.server.server_address[1]
            return self.answer(302, [("Location", f"http://127.0.0.2:{port}/cdn/{name}")])
        if kind == "cdn":
            if auth:
                return self.answer(400, body=b"a token reached the CDN\n")
            return self.serve_ranged(name)
        if kind == "drip":
            return self.drip(name)
        if kind == "bigheader":
            return self.answer(206, [("X-Big", "a" * 150000)])
        if kind == "longloc":
            return self.answer(302, [("Location", "/" + "a" * int(name) + "/ok/spm.gguf")])
        if kind == "esc":
            host = self.headers.get("Host", "127.0.0.1")
            return self.answer(302, [("Location", f"http://{host}/esc2/\x1b[31m{name}")])
        if kind == "noetag":
            if self.headers.get("If-Modified-Since") == LAST_MODIFIED:
                return self.answer(304, [("Last-Modified", LAST_MODIFIED)])
            return self.serve_ranged(name, validator=("Last-Modified", LAST_MODIFIED))
        if kind == "lmchange":
            lm_counter[0] += 1
            return self.serve_ranged(name, validator=("Last-Modified", f"Wed, 21 Oct 2015 07:{lm_counter[0] % 60:02d}:00 GMT"))
        return self.answer(404)

    def drip(self, name):
        size = self.size_of(name)
        log(f"{self.path} -> 206 dripping")
        self.send_response(206)
        self.send_header("Content-Range", f"bytes 0-65535/{size}")
        self.send_header("Content-Length", "65536")
        self.end_headers()
        try:
            with open(os.path.join(ROOT, name), "rb") as f:
                data = f.read(65536)
            for i in range(0, len(data), 2):
                self.wfile.write(data[i:i + 2])
                self.wfile.flush()
                time.sleep(1)
        except (BrokenPipeError, ConnectionResetError):
            pass
        log(f"{self.path} drip ended")
        self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        # A client hanging up on a body it no longer needs is the point of
        # several faults, not an error of the server.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


def main():
    first = Server(("127.0.0.1", 0), Handler)
    port = first.server_address[1]
    second = Server(("127.0.0.2", port), Handler)
    for s in (first, second):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    with open(PORT_FILE + ".tmp", "w") as f:
        f.write(f"{port}\n")
    os.rename(PORT_FILE + ".tmp", PORT_FILE)
    threading.Event().wait()


if __name__ == "__main__":
    main()
