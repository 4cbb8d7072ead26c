#!/usr/bin/python3
"""A socket-woken SIP handler for rouse-agent (docs/softphone.md, "The socket-woken model"), on rouse_handler.

The handler owns the phone's signalling connection: one TCP connection to the registrar, handed to the agent as
its VoIP socket (addVoIPSocket), so that the agent can watch it while the phone is frozen. The SIP stack (baresip,
started by this handler, in its cgroup) does not talk to the registrar itself: its account's outbound proxy is
this handler's local TCP port, and the handler relays SIP messages between the two connections. That keeps
the watched socket the real one (the registrar sends the INVITE on it) without reaching into baresip's
descriptors, and it works with any SIP stack that has an outbound proxy setting. The registrar must send requests
back over the phone's connection (the standard NAT handling for TCP clients: nathelper's add_contact_alias /
handle_ruri_alias in the Kamailio recipe).

While frozen:
  - an INVITE on the connection wakes the handler (voipSocketWake): it reports the call with the wake's id
    (the PushKit rule: at once), then relays the INVITE to baresip, which answers (answermode=auto);
  - other traffic (OPTIONS, NOTIFY) is relayed and the wake answered with voipWakeHandled;
  - a keepAlive (at least every 600 s): the handler re-sends baresip's last REGISTER (fresh branch, next CSeq) on
    the connection, so that the binding and the connection stay alive, then sends keepAliveDone. baresip's own
    REGISTERs have their CSeq moved past the handler's on the way out (and back on their answers).
After the call's BYE is answered: callEnded (the handler and baresip are frozen again).

    rouse-sip-bridge.py --name phone --registrar 127.0.0.1:5060 --listen 5064 --baresip /usr/bin/baresip \
        --baresip-config DIR [--keep-alive 600] [--log FILE]

Logs one JSON object per line (event, t = wall-clock ms) to --log.
"""
import argparse
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time

import rouse_handler

MAX_MESSAGE = 64 * 1024


def now_ms():
    return time.time() * 1000.0


class Stream:
    """One TCP connection carrying SIP: complete messages out of the bytes (Content-Length framing, RFC 3261 §18.3;
    CRLF keep-alives, RFC 5626 §4.4.1, are passed through as they are)."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""

    def messages(self):
        out = []
        while True:
            if self.buffer.startswith(b"\r\n"):
                out.append(b"\r\n")
                self.buffer = self.buffer[2:]
                continue
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_MESSAGE:
                    raise ValueError("SIP header over %d bytes" % MAX_MESSAGE)
                return out
            head = self.buffer[:end]
            match = re.search(rb"(?im)^(?:content-length|l)[ \t]*:[ \t]*(\d+)[ \t]*$", head)
            length = int(match.group(1)) if match else 0
            if length > MAX_MESSAGE:
                raise ValueError("Content-Length %d over %d" % (length, MAX_MESSAGE))
            total = end + 4 + length
            if len(self.buffer) < total:
                return out
            out.append(self.buffer[:total])
            self.buffer = self.buffer[total:]

    def read(self):
        """Reads what is there; False at end of stream."""
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return True
        if not data:
            return False
        self.buffer += data
        return True


def header(message, name):
    match = re.search(rb"(?im)^" + name + rb"[ \t]*:[ \t]*(.*?)[ \t]*\r?$", message)
    return match.group(1).decode("utf-8", "replace") if match else ""


def call_id(message):
    return header(message, rb"(?:call-id|i)")


def cseq(message):
    parts = header(message, rb"cseq").split()
    return (int(parts[0]), parts[1]) if len(parts) == 2 and parts[0].isdigit() else (0, "")


def set_cseq(message, number, method):
    return re.sub(rb"(?im)^cseq[ \t]*:.*?\r$", b"CSeq: %d %s\r" % (number, method.encode()), message, count=1)


def main():
    options = argparse.ArgumentParser()
    options.add_argument("--name", required=True)
    options.add_argument("--registrar", required=True, help="HOST:PORT of the registrar's TCP listener")
    options.add_argument("--listen", type=int, required=True, help="local TCP port baresip uses as outbound proxy")
    options.add_argument("--baresip", default="/usr/bin/baresip")
    options.add_argument("--baresip-config", required=True)
    options.add_argument("--keep-alive", type=float, default=600)
    options.add_argument("--log")
    arguments = options.parse_args()
    output = open(arguments.log, "a", buffering=1) if arguments.log else sys.stderr

    def log(event, **members):
        members.update(event=event, t=round(now_ms(), 3))
        output.write(json.dumps(members, sort_keys=True) + "\n")

    agent = rouse_handler.connect()
    agent.register(arguments.name)
    upstream = None      # Stream to the registrar (the watched socket)
    downstream = None    # Stream from baresip
    listener = None
    phone = None
    owed_wake = None     # a voipSocketWake not answered yet
    calls = {}           # Call-ID -> reported
    ending = set()       # Call-IDs whose BYE was relayed, waiting for its 200
    last_register = None  # baresip's last REGISTER (bytes)
    offset = 0           # keep-alive REGISTERs sent: baresip's CSeq numbers are moved past them
    keep_alive = None    # (keepAliveID, CSeq) of the refresh in flight
    refreshes = 0
    answered_wakeless = []   # when a call was reported before its wake was read

    def start_phone():
        nonlocal listener, phone
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", arguments.listen))
        listener.listen(4)
        phone = subprocess.Popen([arguments.baresip, "-f", arguments.baresip_config],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 close_fds=True)
        log("baresipStarted", pid=phone.pid)

    def connect_upstream():
        nonlocal upstream
        host, port = arguments.registrar.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=5)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        upstream = Stream(sock)
        socket_id = agent.add_voip_socket(sock)
        log("voipSocketAdded", socketID=socket_id, local=sock.getsockname()[1])
        agent.set_keep_alive(arguments.keep_alive)
        log("keepAliveSet", seconds=arguments.keep_alive)

    def answer_wake(callid=None):
        nonlocal owed_wake
        if owed_wake is None:
            return
        if callid is not None:
            agent.report_call(owed_wake, callid)
            log("reported", wake=owed_wake, callID=callid)
        else:
            agent.voip_wake_handled(owed_wake)
            log("wakeHandled", wake=owed_wake)
        owed_wake = None

    def from_registrar(message):
        nonlocal keep_alive
        if message == b"\r\n" or downstream is None and not message.startswith(b"SIP/2.0"):
            if message != b"\r\n":
                log("dropped", reason="no phone connection", first=message[:40].decode("utf-8", "replace"))
            return
        number, method = cseq(message)
        if message.startswith(b"SIP/2.0 "):
            if keep_alive is not None and method == "REGISTER" and number == keep_alive[1]:
                status = message[8:11].decode()
                if status >= "200":
                    refreshes_done(status)
                return
            if method == "REGISTER" and offset:
                message = set_cseq(message, number - offset, method)
            if downstream is not None:
                downstream.sock.sendall(message)
            return
        callid = call_id(message)
        if message.startswith(b"INVITE ") and not re.search(rb"(?im)^(?:to|t)[ \t]*:.*;[ \t]*tag=", message):
            if callid not in calls:
                if owed_wake is not None:
                    answer_wake(callid)
                else:
                    # Awake, or thawed with the wake message not read yet (the agent thaws, then sends it): a report
                    # without a wake id answers every owed wake (docs/voip-sockets.md), so report at once.
                    agent.report_call(None, callid)
                    answered_wakeless.append(time.monotonic())
                    log("reported", wake=None, callID=callid)
                calls[callid] = True
        elif message.startswith(b"BYE "):
            ending.add(callid)
        downstream.sock.sendall(message)

    def refreshes_done(status):
        nonlocal keep_alive, refreshes
        refreshes += 1
        log("reRegistered", status=int(status), keepAlive=keep_alive[0], refreshes=refreshes)
        if keep_alive[0] is not None:
            agent.keep_alive_done(keep_alive[0])
        keep_alive = None

    def from_phone(message):
        nonlocal last_register
        if message == b"\r\n":
            upstream.sock.sendall(message)
            return
        number, method = cseq(message)
        callid = call_id(message)
        if message.startswith(b"REGISTER "):
            if offset:
                message = set_cseq(message, number + offset, method)
            last_register = message
            log("register", cseq=number + offset)
        elif message.startswith(b"SIP/2.0 200") and method == "BYE" and callid in ending:
            ending.discard(callid)
            calls.pop(callid, None)
            upstream.sock.sendall(message)
            agent.call_ended(callid)
            log("callEnded", callID=callid)
            return
        elif message.startswith(b"BYE "):
            ending.add(callid)
        upstream.sock.sendall(message)

    def refresh(keep_alive_id):
        """The keep-alive: baresip's REGISTER again, with a fresh branch and the next CSeq."""
        nonlocal keep_alive, offset, last_register
        if last_register is None or upstream is None:
            log("refreshSkipped", reason="no REGISTER yet")
            if keep_alive_id is not None:
                agent.keep_alive_done(keep_alive_id)
            return
        number, method = cseq(last_register)
        offset += 1
        message = set_cseq(last_register, number + 1, method)
        message = re.sub(rb"(?i)(branch=)[^;\r\n]*", b"\\1z9hG4bK-rouse-keepalive-%d" % offset, message, count=1)
        keep_alive = (keep_alive_id, number + 1)
        last_register = message
        upstream.sock.sendall(message)

    def handle(event):
        nonlocal owed_wake, upstream
        kind = event["type"]
        if kind == "registered":
            log("registered", launchReason=event.get("launchReason"))
        elif kind == "voipSocket" and event.get("returned"):
            sock = agent.returned_socket(event)
            if sock is not None:
                sock.setblocking(False)
                upstream = Stream(sock)
                log("voipSocketReturned", socketID=event.get("socketID"))
        elif kind == "voipSocketWake":
            log("wake", wake=event["wakeID"], mustReport=event.get("mustReport"))
            if answered_wakeless and time.monotonic() - answered_wakeless[-1] < 2.0:
                answered_wakeless.clear()   # its call was reported already, without the id: answered
            elif event.get("mustReport"):
                owed_wake = event["wakeID"]
        elif kind == "voipSocketChanged":
            log("socketChanged", kind=event.get("kind"))
        elif kind == "keepAlive":
            log("keepAlive", id=event["keepAliveID"], seconds=event.get("seconds"))
            refresh(event["keepAliveID"])
        elif kind == "error":
            log("agentError", error=event.get("error"), detail=event.get("detail"))

    def stop(*_):
        raise SystemExit(0)   # unwinds to the finally below, which stops baresip
    signal.signal(signal.SIGTERM, stop)
    try:
        # The registration events come first (registered, credentials, a returned socket for a relaunch).
        wait_until = time.monotonic() + 0.2
        while time.monotonic() < wait_until:
            event = agent.next_event(0.05)
            if event is not None:
                handle(event)
        if upstream is None:
            connect_upstream()
        start_phone()
        while True:
            watched = [agent, upstream.sock, listener] + ([downstream.sock] if downstream else [])
            try:
                readable, _, _ = select.select(watched, [], [], 1.0 if owed_wake else None)
            except InterruptedError:
                continue
            if agent in readable:
                event = agent.next_event(0)
                while event is not None:
                    handle(event)
                    event = agent.next_event(0)
            if listener in readable:
                sock, _ = listener.accept()
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if downstream is not None:
                    downstream.sock.close()
                downstream = Stream(sock)
                log("phoneConnected")
            if upstream.sock in readable:
                if not upstream.read():
                    log("registrarClosed")
                    break
                for message in upstream.messages():
                    from_registrar(message)
            if downstream is not None and downstream.sock in readable:
                if not downstream.read():
                    log("phoneClosed")
                    downstream.sock.close()
                    downstream = None
                else:
                    for message in downstream.messages():
                        from_phone(message)
            if owed_wake is not None and upstream.sock not in readable:
                more, _, _ = select.select([upstream.sock], [], [], 0.05)
                if not more:
                    answer_wake(None)   # what woke it was not a call (OPTIONS, NOTIFY, a CRLF keep-alive)
    except rouse_handler.AgentError as error:
        log("agentClosed", detail=str(error))
    except (OSError, ValueError) as error:
        log("failed", detail=str(error))
    finally:
        if phone is not None and phone.poll() is None:
            phone.terminate()
            try:
                phone.wait(5)
            except subprocess.TimeoutExpired:
                phone.kill()
        log("exit")


if __name__ == "__main__":
    main()
