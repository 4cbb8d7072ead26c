#!/usr/bin/python3
"""rouse-sip-handler: a push-woken SIP softphone for rouse-agent, in Python on rouse_handler.

The agent launches it for a VoIP push (the SIP proxy holds the INVITE and sent the push, see
kamailio-rouse-push.cfg). It follows iOS's rules (docs/handler-protocol.md, section 5):
  1. reports the call at once (reportCall, the Call-ID from the push's payload) — before anything slow;
  2. starts baresip (headless, auto-answer: its account says answermode=auto), which REGISTERs; the proxy then
     forwards the INVITE and baresip answers;
  3. when the call closes (baresip's CALL_CLOSED on its ctrl_tcp socket), quits baresip (which un-REGISTERs)
     and waits for it, THEN sends callEnded and exits: a handler with nothing open is frozen within a second,
     and baresip, in the handler's cgroup, must not freeze still registered. A push that arrives meanwhile or
     within EXIT_LINGER_SECONDS of callEnded is taken (a new baresip) rather than left unread with the exit.
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

EXIT_LINGER_SECONDS = 0.25  # after callEnded: messages arriving within this are taken before exiting


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
    state = {"phone": None, "calls": [], "give_up_at": None, "established": False}   # calls: reported, not ended

    def take(event):
        """One message from the agent."""
        if event["type"] == "push" and event.get("pushType") == "voip":
            payload = agent.payload(event) or {}
            call = (payload.get("call") or {}).get("id") or ("push-" + event["pushID"])
            # First: the deadline is the agent's. Reported even when no report is owed (a push taken while ending the
            # previous call): the agent then knows a call is active and does not freeze the new phone mid-call.
            agent.report_call(event["pushID"], call)
            state["calls"].append(call)
            log("reported", push=event["pushID"], call=call, sentAt=payload.get("sentAt"),
                mustReport=bool(event.get("mustReport")))
            if state["phone"] is None:
                state["phone"] = Baresip(arguments.baresip, arguments.baresip_config, arguments.ctrl)
                log("baresip", ppid=state["phone"].process.pid)
            state["give_up_at"] = time.monotonic() + arguments.call_timeout
        elif event["type"] == "registered":
            log("registered", launchReason=event.get("launchReason"))
        elif event["type"] == "error":
            log("error", code=event.get("error"), detail=event.get("detail"))

    def drain(linger=0.0):
        """Takes every message already there (and those arriving within linger seconds of the last); False when
        the agent closed the connection."""
        return agent.drain(take, linger)

    while True:
        phone = state["phone"]
        waiting = [agent] + ([phone] if phone else [])
        give_up_at = state["give_up_at"]
        timeout = None if give_up_at is None else max(0, give_up_at - time.monotonic())
        readable, _, _ = select.select(waiting, [], [], timeout)
        finished = False
        if agent in readable and not drain():
            break
        if phone is not None and phone in readable:
            events = phone.events()
            if events is None:
                finished = True
            for item in events or []:
                kind = item.get("type")
                if kind in ("REGISTER_OK", "CALL_INCOMING", "CALL_ESTABLISHED", "CALL_CLOSED"):
                    log(kind, param=item.get("param"), peer=item.get("peeruri"))
                if kind in ("CALL_ESTABLISHED", "CALL_CLOSED"):
                    state["established"] = True
                    state["give_up_at"] = None
                if kind == "CALL_CLOSED":
                    finished = True
        if state["give_up_at"] is not None and time.monotonic() >= state["give_up_at"] and not state["established"]:
            log("gaveUp")
            finished = True
        if finished:
            if state["phone"] is not None:
                state["phone"].quit()                        # un-REGISTERs, then exits
                log("baresipQuit")
            for call in state["calls"]:
                agent.call_ended(call)                       # only now: nothing open => frozen soon
                log("callEnded", call=call)
            state.update(phone=None, calls=[], give_up_at=None, established=False)
            # A push that came meanwhile is taken (a new phone) rather than left unread with the exit; one after the
            # last look is handed again at a new launch (docs/handler-protocol.md, section 15).
            if not drain(EXIT_LINGER_SECONDS) or state["phone"] is None:
                break
            log("nextCall")
    agent.close()


if __name__ == "__main__":
    main()
