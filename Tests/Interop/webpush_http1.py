#!/usr/bin/env python3
"""Raw HTTP/1.1 over TLS against the gateway's WebPush listener: what real senders and proxies put on the wire
(chunked bodies with extensions and trailers, Expect: 100-continue, keep-alive, pipelining) and hostile framing.

    webpush_http1.py PORT CAFILE SUBSCRIPTION_ID

Prints one JSON object: {"keepalive": [[name, status, ...], ...], "pipelined": [statuses],
"hostile": [[name, status, body, closed], ...]}. Standard library only.
"""
import json
import socket
import ssl
import sys

PORT, CAFILE, SUB = int(sys.argv[1]), sys.argv[2], sys.argv[3]
CTX = ssl.create_default_context(cafile=CAFILE)
CTX.set_alpn_protocols(["http/1.1"])


def connect():
    s = CTX.wrap_socket(socket.create_connection(("127.0.0.1", PORT), timeout=15), server_hostname="localhost")
    assert s.selected_alpn_protocol() == "http/1.1", s.selected_alpn_protocol()
    return s, s.makefile("rb")


def read_response(f):
    """(status, headers dict, body) of one response; None when the connection closed first."""
    line = f.readline()
    if not line:
        return None
    status = int(line.split(b" ")[1])
    headers = {}
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        name, _, value = h.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    body = f.read(int(headers.get("content-length", "0")))
    return status, headers, body.decode(errors="replace")


def closed(s, f):
    try:
        s.settimeout(5)
        return f.read(1) == b""
    except (ConnectionError, ssl.SSLError):
        return True


def head(extra, path=None):
    return (f"POST {path or '/wp/' + SUB} HTTP/1.1\r\nHost: localhost\r\nTTL: 60\r\n" + extra + "\r\n").encode()


def chunked(data, sizes):
    out, i = b"", 0
    for n in sizes:
        out += b"%x;ext=\"a;b\"\r\n" % n + data[i:i + n] + b"\r\n"
        i += n
    assert i == len(data)
    return out + b"0\r\nX-Trailer: ignored\r\n\r\n"


def main():
    result = {"keepalive": [], "pipelined": [], "hostile": []}
    # One keep-alive connection: what real senders do, one request after the other.
    s, f = connect()

    def exchange(name, data):
        s.sendall(data)
        r = read_response(f)
        result["keepalive"].append([name, r[0] if r else 0, r[1].get("ttl", "") if r else "", r[2] if r else ""])

    body = bytes(range(256)) * 16  # 4096 bytes
    exchange("chunked 4096", head("Transfer-Encoding: chunked\r\n") + chunked(body, [1000, 3000, 96]))
    exchange("chunked 4097", head("Transfer-Encoding: chunked\r\n") + chunked(body + b"x", [4097]))
    # Expect: 100-continue: the body is sent only after the interim answer.
    s.sendall(head("Expect: 100-continue\r\nContent-Length: 3000\r\n"))
    interim = read_response(f)
    s.sendall(body[:3000])
    final = read_response(f)
    result["keepalive"].append(["expect", interim[0] if interim else 0, final[0] if final else 0, ""])
    exchange("urgency twice", head("Urgency: low\r\nUrgency: high\r\nContent-Length: 1\r\n") + b"a")
    exchange("ttl huge", (head("Content-Length: 1\r\n").replace(b"TTL: 60", b"TTL: 99999999999999999999999")) + b"a")
    exchange("topic 33", head("Topic: " + "a" * 33 + "\r\nContent-Length: 1\r\n") + b"a")
    exchange("topic 32", head("Topic: " + "a" * 32 + "\r\nContent-Length: 1\r\n") + b"a")
    exchange("topic not base64url", head("Topic: a+b/c=\r\nContent-Length: 1\r\n") + b"a")
    s.close()

    # Pipelining: 20 requests in one write, answered in order on the same connection.
    s, f = connect()
    one = head("Content-Length: 1\r\n") + b"p"
    s.sendall(one * 19 + head("Content-Length: 1\r\nConnection: close\r\n") + b"p")
    for _ in range(20):
        r = read_response(f)
        result["pipelined"].append(r[0] if r else 0)
    s.close()

    # Hostile framing: each on its own connection, each answered with a precise error and the connection closed.
    te = "Transfer-Encoding: chunked\r\n"
    cases = [
        ("chunk size overflow", head(te) + b"ffffffffffffffffff\r\n"),
        ("chunk size over the limit", head(te) + b"4001\r\n"),
        ("negative chunk size", head(te) + b"-1\r\na\r\n0\r\n\r\n"),
        ("chunk size not hex", head(te) + b"0x10\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n"),
        ("chunk data longer than its size", head(te) + b"2\r\nabc\r\n0\r\n\r\n"),
        ("chunk line bare LF", head(te) + b"1\na\r\n0\r\n\r\n"),
        ("chunk line without end", head(te) + b"1;" + b"e" * 2000),
        ("trailer without colon", head(te) + b"1\r\na\r\n0\r\nnot a field\r\n\r\n"),
        ("truncated chunk", head(te) + b"10\r\nabc"),
        ("negative content-length", head("Content-Length: -1\r\n") + b"a"),
        ("overflowing content-length", head("Content-Length: 99999999999999999999999\r\n") + b"a"),
        ("content-length and chunked", head("Content-Length: 1\r\n" + te) + b"1\r\na\r\n0\r\n\r\n"),
        ("chunked not last", head("Transfer-Encoding: chunked, identity\r\n") + b"1\r\na\r\n0\r\n\r\n"),
        ("gzip", head("Transfer-Encoding: gzip, chunked\r\n") + b"1\r\na\r\n0\r\n\r\n"),
    ]
    for name, data in cases:
        s, f = connect()
        s.sendall(data)
        r = read_response(f)
        result["hostile"].append([name, r[0] if r else 0, r[2].strip() if r else "", closed(s, f)])
        s.close()
    print(json.dumps(result))


main()
