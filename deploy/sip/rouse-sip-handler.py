#!/usr/bin/python3
"""rouse-sip-handler: a push-woken SIP softphone for rouse-agent, in Python on rouse_handler.

The agent launches it for a VoIP push (the SIP proxy holds the INVITE and sent the push, see
kamailio-rouse-push.cfg). It follows iOS's rules (docs/handler-protocol.md, section 5):
  1. reports the call at once (reportCall, the Call-ID from the push's payload) — before anything slow;
  2. starts baresip (headless, auto-answer: its account says answermode=auto), which REGISTERs; the proxy then
     forwards the INVITE and baresip answers;
  3. when the call closes (baresip's CALL_CLOSED on its ctrl_tcp socket), quits baresip (which un-REGISTERs)
     and waits for it, THEN sends callEnded and exits: a handler with nothing open is frozen within a second,
     and baresip, in the handler's cgroup, must not freeze still registered.
A call not established within --call-timeout seconds of the push is given up the same way.

    rouse-sip-handler.py --name phone --baresip-config DIR --ctrl 127.0.0.1:4444 [--baresip /usr/bin/baresip]
                         [--log FILE]
Log: one JSON object per line (event, wall-clock ms `t`, and what it concerns).
"""
import argparse
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

import rouse_handler


def now_ms():
    return int(time.time() * 1000)


class Baresip:
    """A baresip process and its ctrl_tcp connection (netstrings of JSON)."""

    def __init__(self, path, config, ctrl):
        self.process = subprocess.Popen([path, "-f", config], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
        host, port = ctrl.rsplit(":", 1)
        deadline = time.monotonic() + 5
        while True:
            try:
                self.sock = socket.create_connection((host, int(port)), timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.005)
        self.sock.setblocking(False)
        self.buffer = b""

    def fileno(self):
        return self.sock.fileno()

    def events(self):
        """The events that arrived (call when readable); [] at end of stream."""
        try:
            data = self.sock.recv(65536)
        except BlockingIOError:
            return []
        if not data:
            return None
        self.buffer += data
        out = []
        while b":" in self.buffer:
            length, rest = self.buffer.split(b":", 1)
            if not length.isdigit() or len(rest) < int(length) + 1:
                break
            body, self.buffer = rest[:int(length)], rest[int(length) + 1:]
            try:
                out.append(json.loads(body))
            except ValueError:
                pass
        return out

    def quit(self):
        """Asks baresip to quit (it un-REGISTERs), waits up to 5 s, then kills it."""
        body = json.dumps({"command": "quit", "params": "", "token": "q"}).encode()
        try:
            self.sock.setblocking(True)
            self.sock.sendall(b"%d:%s," % (len(body), body))
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.sock.close()


def main():
    options = argparse.ArgumentParser()
    options.add_argument("--name", required=True)
    options.add_argument("--baresip", default="/usr/bin/baresip")
    options.add_argument("--baresip-config", required=True)
    options.add_argument("--ctrl", default="127.0.0.1:4444")
    options.add_argument("--call-timeout", type=float, default=15)
    options.add_argument("--log")
    arguments = options.parse_args()
    output = open(arguments.log, "a", buffering=1) if arguments.log else sys.stderr

    def log(event, **members):
        members.update(event=event, t=now_ms(), pid=os.getpid())
        output.write(json.dumps(members, sort_keys=True) + "\n")

    agent = rouse_handler.connect()
    agent.register(arguments.name)
    phone = None
    calls = []              # call ids reported, not yet ended
    give_up_at = None
    established = False
    while True:
        waiting = [agent] + ([phone] if phone else [])
        timeout = None if give_up_at is None else max(0, give_up_at - time.monotonic())
        readable, _, _ = select.select(waiting, [], [], timeout)
        finished = False
        if agent in readable:
            try:
                event = agent.next_event(0)
            except rouse_handler.AgentError:
                break
            while event is not None:
                if event["type"] == "push" and event.get("pushType") == "voip":
                    payload = agent.payload(event) or {}
                    call = (payload.get("call") or {}).get("id") or ("push-" + event["pushID"])
                    if event.get("mustReport"):
                        agent.report_call(event["pushID"], call)   # first: the deadline is the agent's
                    calls.append(call)
                    log("reported", push=event["pushID"], call=call, sentAt=payload.get("sentAt"),
                        mustReport=bool(event.get("mustReport")))
                    if phone is None:
                        phone = Baresip(arguments.baresip, arguments.baresip_config, arguments.ctrl)
                        log("baresip", ppid=phone.process.pid)
                    give_up_at = time.monotonic() + arguments.call_timeout
                elif event["type"] == "registered":
                    log("registered", launchReason=event.get("launchReason"))
                elif event["type"] == "error":
                    log("error", code=event.get("error"), detail=event.get("detail"))
                event = agent.next_event(0)
        if phone is not None and phone in readable:
            events = phone.events()
            if events is None:
                finished = True
            for item in events or []:
                kind = item.get("type")
                if kind in ("REGISTER_OK", "CALL_INCOMING", "CALL_ESTABLISHED", "CALL_CLOSED"):
                    log(kind, param=item.get("param"), peer=item.get("peeruri"))
                if kind in ("CALL_ESTABLISHED", "CALL_CLOSED"):
                    established = True
                    give_up_at = None
                if kind == "CALL_CLOSED":
                    finished = True
        if give_up_at is not None and time.monotonic() >= give_up_at and not established:
            log("gaveUp")
            finished = True
        if finished:
            if phone is not None:
                phone.quit()                                 # un-REGISTERs, then exits
                log("baresipQuit")
            for call in calls:
                agent.call_ended(call)                       # only now: nothing open => frozen soon
                log("callEnded", call=call)
            break
    agent.close()


if __name__ == "__main__":
    main()
