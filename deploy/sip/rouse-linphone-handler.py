#!/usr/bin/python3
"""rouse-linphone-handler: a push-woken SIP softphone on liblinphone (RFC 8599), for rouse-agent, on rouse_handler.

The softphone is linphone-daemon (Debian's linphone-cli, liblinphone 5.1): headless, auto-answer, commands on its
stdin, call events on its stdout. Its REGISTER carries the VoIP push token the standard way, RFC 8599's Contact
URI parameters (pn-provider=apns;pn-prid=<token>:voip;pn-param=<team>.<topic>), so the proxy learns the token
from the REGISTER itself (kamailio-rouse-push.cfg stores it): no out-of-band upload as with baresip.

The agent launches this handler for a VoIP push (the proxy holds the INVITE and sent the push). As iOS requires
(docs/handler-protocol.md, section 5):
  1. it reports the call at once (reportCall, the Call-ID from the push's payload), even for a push that owes no
     report (taken while the previous call ended): the agent must know a call is active, or it freezes the phone;
  2. it writes linphone's configuration: the template (--linphone-config, ending in its [proxy_0] section) plus
     `contact_uri_parameters` built from the `credentials` token of the .voip topic the agent sent at
     registration, and starts linphone-daemon, which REGISTERs (RFC 8599: a UA re-REGISTERs on each push); the
     proxy then forwards the INVITE and linphone answers (--auto-answer);
  3. when the call is released, it tells linphone to quit (it un-REGISTERs), waits for it, THEN sends callEnded
     and exits (a handler with nothing open is frozen within a second, with linphone in its cgroup). A push that
     came meanwhile (the proxy's next INVITE, while linphone was quitting) was delivered to this process: it is
     taken (step 1 again) instead of being dropped with the exit; so is one that arrives within
     EXIT_LINGER_SECONDS of callEnded (rouse_handler's pending_events). One that comes later still is not lost:
     the agent hands a push unanswered at a clean exit once more, to a new launch (docs/handler-protocol.md, 15).
A call not established within --call-timeout seconds of the push is given up the same way.

--awake runs the same softphone without the agent (the always-registered phone of S0, and the first REGISTER
that teaches the proxy the token): --token and --topic give what `credentials` would; SIGTERM or SIGINT quits
linphone (which un-REGISTERs) and exits.

    rouse-linphone-handler.py --name phone --linphone-config TEMPLATE --state-dir DIR --team TEAMID
                              [--linphone /usr/bin/linphone-daemon] [--log FILE]
                              [--awake --token HEX --topic BUNDLE.voip]
linphone-daemon's configuration and log are kept in --state-dir (linphonerc, linphone.log).
Log: one JSON object per line (event, wall-clock ms `t`, and what it concerns), as rouse-sip-handler.py's.

Settings in the template that a headless liblinphone 5.1 needs (docs/softphone.md, "linphone"): [storage]
uri=null (without a database path it can open, linphone_core_start() fails before it applies its SIP
transports: no listening point, no REGISTER).
"""
import argparse
import json
import os
import re
import select
import signal
import subprocess
import sys
import time

import rouse_handler

TOKEN = re.compile(r"^[0-9a-fA-F]{16,200}$")
TOPIC = re.compile(r"^[A-Za-z0-9.-]{1,200}$")
CLOSING_SECONDS = 0.3   # after a call: un-REGISTER, then quit this much later
EXIT_LINGER_SECONDS = 0.25  # after callEnded: messages arriving within this are taken before exiting


class Stopped(Exception):
    """SIGTERM or SIGINT in --awake mode."""


def now_ms():
    return int(time.time() * 1000)


class Linphone:
    """A linphone-daemon process: commands on its stdin, events ("Event: LinphoneCall…") on its stdout."""

    def __init__(self, path, template, state_dir, parameters):
        os.makedirs(state_dir, mode=0o700, exist_ok=True)
        config = os.path.join(state_dir, "linphonerc")
        with open(template) as source:
            text = source.read()
        if parameters:
            text = text.rstrip("\n") + "\ncontact_uri_parameters=" + parameters + "\n"
        with open(config, "w") as out:
            out.write(text)
        self.process = subprocess.Popen(
            [path, "--config", config, "--log", os.path.join(state_dir, "linphone.log"), "--auto-answer",
             "--disable-stats-events"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
        os.set_blocking(self.process.stdout.fileno(), False)
        self.buffer = b""

    def fileno(self):
        return self.process.stdout.fileno()

    def events(self):
        """The call states that arrived (call when readable); None at end of stream."""
        try:
            data = os.read(self.fileno(), 65536)
        except BlockingIOError:
            return []
        if not data:
            return None
        self.buffer += data
        lines = self.buffer.split(b"\n")
        self.buffer = lines.pop()
        return [line[7:].decode(errors="replace").strip() for line in lines if line.startswith(b"Event: ")]

    def command(self, line):
        """Writes one command line to linphone-daemon (ignored when it is gone)."""
        try:
            self.process.stdin.write(line.encode() + b"\n")
            self.process.stdin.flush()
        except OSError:
            pass

    def quit(self):
        """Asks linphone to quit (it un-REGISTERs), waits up to 5 s, then kills it."""
        try:
            self.process.stdin.write(b"quit\n")
            self.process.stdin.flush()
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()


def push_parameters(token, topic, team):
    """RFC 8599's Contact URI parameters for APNs VoIP pushes, as Linphone iOS sends them; "" when not known."""
    if not token or not topic or not TOKEN.match(token) or not TOPIC.match(topic) or not TOPIC.match(team):
        return ""
    return "pn-provider=apns;pn-prid=%s:voip;pn-param=%s.%s" % (token, team, topic)


def main():
    options = argparse.ArgumentParser()
    options.add_argument("--name", default="phone")
    options.add_argument("--linphone", default="/usr/bin/linphone-daemon")
    options.add_argument("--linphone-config", required=True)
    options.add_argument("--state-dir", required=True)
    options.add_argument("--team", required=True)
    options.add_argument("--call-timeout", type=float, default=15)
    options.add_argument("--log")
    options.add_argument("--awake", action="store_true")
    options.add_argument("--token")
    options.add_argument("--topic")
    arguments = options.parse_args()
    output = open(arguments.log, "a", buffering=1) if arguments.log else sys.stderr

    def log(event, **members):
        members.update(event=event, t=now_ms(), pid=os.getpid())
        output.write(json.dumps(members, sort_keys=True) + "\n")

    def start(token, topic):
        phone = Linphone(arguments.linphone, arguments.linphone_config, arguments.state_dir,
                         push_parameters(token, topic, arguments.team))
        log("linphone", ppid=phone.process.pid, pushParameters=bool(push_parameters(token, topic, arguments.team)))
        return phone

    if arguments.awake:
        def stop(*_):
            raise Stopped()
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        phone = start(arguments.token, arguments.topic)
        try:
            while True:
                select.select([phone], [], [])
                events = phone.events()
                if events is None:
                    break
                for state in events:
                    log(state)
        except Stopped:
            pass
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        phone.quit()
        log("linphoneQuit")
        return

    agent = rouse_handler.connect()
    agent.register(arguments.name)
    voip = {}               # topic -> token, from the agent's credentials
    # calls: the call ids reported for the running phone; later: those of pushes taken while it was closing (its
    # un-REGISTER on the way: the proxy pushes again), started on a new phone once it quit.
    # incoming, active: calls the running phone received, and those not yet released.
    state = {"phone": None, "calls": [], "later": [], "give_up_at": None, "established": False, "closing_at": None,
             "incoming": 0, "active": 0}

    def start_for(topic):
        state["phone"] = start(voip.get(topic), topic)
        state.update(incoming=0, active=0)
        state["give_up_at"] = time.monotonic() + arguments.call_timeout

    def take(event):
        """One message from the agent."""
        if event["type"] == "push" and event.get("pushType") == "voip":
            payload = agent.payload(event) or {}
            call = (payload.get("call") or {}).get("id") or ("push-" + event["pushID"])
            # First: the deadline is the agent's. Reported even when no report is owed (a push taken while ending the
            # previous call): the agent then knows a call is active and does not freeze the new phone mid-call.
            agent.report_call(event["pushID"], call)
            log("reported", push=event["pushID"], call=call, sentAt=payload.get("sentAt"),
                mustReport=bool(event.get("mustReport")))
            if state["phone"] is None:
                state["calls"].append(call)
                start_for(event.get("topic") or "")
            elif state["closing_at"] is not None:
                state["later"].append((call, event.get("topic") or ""))
            else:
                state["calls"].append(call)
        elif event["type"] == "credentials" and str(event.get("topic", "")).endswith(".voip"):
            voip[event["topic"]] = event.get("token")
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
        deadlines = [d for d in (state["give_up_at"], state["closing_at"]) if d is not None]
        timeout = None if not deadlines else max(0, min(deadlines) - time.monotonic())
        readable, _, _ = select.select(waiting, [], [], timeout)
        finished = False
        if agent in readable and not drain():
            break
        if phone is not None and phone in readable:
            events = phone.events()
            if events is None:
                finished = True
            for call_state in events or []:
                log(call_state)
                if call_state == "LinphoneCallIncomingReceived":
                    state["incoming"] += 1
                    state["active"] += 1
                    state["closing_at"] = None
                    if state["incoming"] > len(state["calls"]):
                        log("nextCallOnPhone")     # the caller's next INVITE reached it before its un-REGISTER
                if call_state in ("LinphoneCallConnected", "LinphoneCallStreamsRunning"):
                    state["established"] = True
                    state["give_up_at"] = None
                if call_state in ("LinphoneCallReleased", "LinphoneCallError"):
                    state["active"] = max(0, state["active"] - 1)
                if call_state in ("LinphoneCallReleased", "LinphoneCallError") and state["active"] == 0 \
                        and state["closing_at"] is None:
                    # Un-REGISTER first, quit a moment later: an INVITE that comes meanwhile is answered by this
                    # phone; one after the un-REGISTER is a new push (taken below, on a new phone).
                    phone.command("unregister ALL")
                    state["closing_at"] = time.monotonic() + CLOSING_SECONDS
        now = time.monotonic()
        if state["give_up_at"] is not None and now >= state["give_up_at"] and not state["established"]:
            log("gaveUp")
            finished = True
        if state["closing_at"] is not None and now >= state["closing_at"]:
            finished = True
        if finished:
            if state["phone"] is not None:
                state["phone"].quit()                        # un-REGISTERs (if not yet), then exits
                log("linphoneQuit")
            for call in state["calls"]:
                agent.call_ended(call)                       # only now: nothing open => frozen soon
                log("callEnded", call=call)
            later = state["later"]
            state.update(phone=None, calls=[], later=[], give_up_at=None, established=False, closing_at=None,
                         incoming=0, active=0)
            for call, topic in later:
                state["calls"].append(call)
                if state["phone"] is None:
                    start_for(topic)
            # A push delivered while linphone was quitting, or just after callEnded: take it rather than exit with
            # it unanswered (one that comes after the last look is handed again at a new launch: the agent's rule).
            if not drain(EXIT_LINGER_SECONDS) or state["phone"] is None:
                break
            log("nextCall")
    agent.close()


if __name__ == "__main__":
    main()
