#!/usr/bin/env python3
"""An HTTPS file server for the background-transfer tests, on Python's standard library only: nobody here
wrote its HTTP. GET /files/<name> serves <root>/<name> with ETag and single `Range: bytes=N-` (honouring `If-Range`),
unless --no-range; PUT or POST /upload/<name> stores the body as <root>/uploads/<name>; GET /status/<code> answers
with that status; GET /redirect/<name> answers 302 to /files/<name>. Every request is logged as one JSON line to --log once it ends (method, path, range, status, bytes
sent or received, complete). --rate limits each response to that many bytes per second (to stop a download midway).
Prints `PORT <n>` when listening."""
import argparse, hashlib, json, os, ssl, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--root", required=True)
parser.add_argument("--cert", required=True)
parser.add_argument("--key", required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--no-range", action="store_true")
parser.add_argument("--rate", type=int, default=0)
parser.add_argument("--plain", action="store_true", help="no TLS")
args = parser.parse_args()
log_lock = threading.Lock()


def log(entry):
    with log_lock, open(args.log, "a") as out:
        out.write(json.dumps(entry, sort_keys=True) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def do_GET(self):
        entry = {"method": "GET", "path": self.path, "range": self.headers.get("Range"),
                 "ifRange": self.headers.get("If-Range"), "sent": 0, "complete": False}
        try:
            if self.path.startswith("/redirect/"):
                body = b"moved\n"
                self.send_response(302)
                self.send_header("Location", "/files/" + self.path[len("/redirect/"):])
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                entry.update(status=302, sent=len(body), complete=True)
                return
            if self.path.startswith("/status/"):
                code = int(self.path.split("/")[2])
                body = b"status %d\n" % code
                self.send_response(code)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                entry.update(status=code, sent=len(body), complete=True)
                return
            name = os.path.basename(self.path[len("/files/"):])
            path = os.path.join(args.root, name)
            if not self.path.startswith("/files/") or not os.path.isfile(path):
                self.send_error(404)
                entry["status"] = 404
                return
            size = os.path.getsize(path)
            etag = '"%d-%d"' % (size, int(os.path.getmtime(path)))
            start = 0
            requested = self.headers.get("Range")
            if_range = self.headers.get("If-Range")
            if requested and not args.no_range and (if_range is None or if_range == etag):
                if requested.startswith("bytes=") and requested.endswith("-"):
                    start = int(requested[len("bytes="):-1])
            if start > 0 and start < size:
                self.send_response(206)
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size))
                entry["status"] = 206
            else:
                start = 0
                self.send_response(200)
                entry["status"] = 200
            self.send_header("Content-Length", str(size - start))
            self.send_header("ETag", etag)
            self.send_header("Accept-Ranges", "none" if args.no_range else "bytes")
            self.end_headers()
            with open(path, "rb") as source:
                source.seek(start)
                chunk = 65536 if args.rate == 0 else max(1024, args.rate // 20)
                while True:
                    data = source.read(chunk)
                    if not data:
                        break
                    self.wfile.write(data)
                    entry["sent"] += len(data)
                    if args.rate:
                        time.sleep(len(data) / args.rate)
            entry["complete"] = True
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        finally:
            log(entry)

    def upload(self, method):
        entry = {"method": method, "path": self.path, "received": 0, "complete": False}
        try:
            length = int(self.headers.get("Content-Length", "0"))
            name = os.path.basename(self.path[len("/upload/"):])
            os.makedirs(os.path.join(args.root, "uploads"), exist_ok=True)
            digest = hashlib.sha256()
            with open(os.path.join(args.root, "uploads", name), "wb") as out:
                left = length
                while left > 0:
                    data = self.rfile.read(min(65536, left))
                    if not data:
                        break
                    out.write(data)
                    digest.update(data)
                    left -= len(data)
                    entry["received"] += len(data)
            body = b"stored\n"
            self.send_response(201)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            entry.update(status=201, sha256=digest.hexdigest(), complete=entry["received"] == length)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass
        finally:
            log(entry)

    def do_PUT(self):
        self.upload("PUT")

    def do_POST(self):
        self.upload("POST")


server = ThreadingHTTPServer((args.host, 0), Handler)
server.daemon_threads = True
if not args.plain:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.cert, args.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
print("PORT %d" % server.server_address[1], flush=True)
server.serve_forever()
