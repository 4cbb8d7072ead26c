#!/usr/bin/python3
"""An example rouse-agent handler in Python on rouse_handler (used by the tests of the library).

Follows the rules: reports the call of a VoIP push at once, completes a background push, ends its call once the
call's session was activated, asks for an ambient audio session once registered. Logs one line per step to
--log (or stderr), then keeps running until the agent closes the connection (or freezes it).

With --voip-connect HOST:PORT it is a socket-woken VoIP handler (docs/voip-sockets.md): it connects there over
TCP, hands the connection to the agent (addVoIPSocket), asks for a 300 s keep-alive (refused: below iOS's minimum)
and a 600 s one, and then, woken by data on the connection, reads it itself: an INVITE is reported with the
wake's id (and answered "SIP/2.0 200 OK" on the connection), anything else answers voipWakeHandled. Relaunched for
data, it takes the connection back from the agent ("voipSocket" with "returned": true).

    example_handler.py --name NAME [--log FILE] [--voip-connect HOST:PORT]
"""
import argparse
import json
import socket
import sys
import time

import rouse_handler


def main():
    options = argparse.ArgumentParser()
    options.add_argument("--name", required=True)
    options.add_argument("--log")
    options.add_argument("--voip-connect")
    arguments = options.parse_args()
    output = open(arguments.log, "a", buffering=1) if arguments.log else sys.stderr

    def log(line):
        output.write("%s\n" % line)

    agent = rouse_handler.connect()

    def will_terminate(reason, seconds):
        # The agent stops this handler: hang up, say goodbye, and exit within the grace.
        log("willTerminate reason=%s seconds=%g" % (reason, seconds))
        for call_id in calls:
            agent.call_ended(call_id)
        log("closed at %.3f" % time.time())
        sys.exit(0)

    agent.on_will_terminate(will_terminate)
    agent.register(arguments.name)
    calls = []
    voip = None   # the watched connection
    for event in agent.events():
        kind = event["type"]
        if kind == "push" and event.get("mustReport"):
            # The PushKit rule: report first, everything else after.
            call_id = "call-" + event["pushID"]
            agent.report_call(event["pushID"], call_id)
            calls.append(call_id)
            log("reported push=%s call=%s payload=%s" % (event["pushID"], call_id,
                                                         json.dumps(agent.payload(event), sort_keys=True, separators=(",", ":"))))
        elif kind == "push" and event.get("pushType") == "background":
            agent.complete(event["pushID"], "newData")
            log("completed push=%s payload=%s" % (event["pushID"], json.dumps(agent.payload(event), sort_keys=True, separators=(",", ":"))))
        elif kind == rouse_handler.MEMORY_WARNING:
            log("memoryWarning memoryBytes=%s" % event.get("memoryBytes", -1))
        elif kind == "registered":
            log("registered handler=%s launchReason=%s" % (event["handler"], event["launchReason"]))
            if arguments.voip_connect is None:
                answer = agent.activate("chime", "ambient")
                log("activate session=%s event=%s" % (answer.get("session"), answer.get("event")))
            elif event["launchReason"] not in ("voipSocket", "keepAlive"):
                host, port = arguments.voip_connect.rsplit(":", 1)
                voip = socket.create_connection((host, int(port)))
                socket_id = agent.add_voip_socket(voip)
                log("voipSocket id=%d kind=stream returned=0 fd=yes" % socket_id)
                try:
                    agent.set_keep_alive(300)
                except rouse_handler.AgentError as error:
                    log("error requestID=2 %s %s" % (error.code, error.detail))
                agent.set_keep_alive(600)
                log("keepAliveSet seconds=600")
        elif kind == "voipSocket" and event.get("returned"):
            returned = agent.returned_socket(event)
            if returned is not None:
                if voip is not None:
                    voip.close()
                voip = returned
            log("voipSocket id=%d kind=%s returned=1 fd=%s" % (event["socketID"], event["kind"],
                                                                "yes" if voip is not None else "no"))
        elif kind == "voipSocketWake":
            wake = event["wakeID"]
            try:
                data = voip.recv(512, socket.MSG_DONTWAIT) if voip is not None else b""
            except BlockingIOError:
                data = b""
            first = data.split(b"\r\n")[0].decode("utf-8", "replace")
            log("wake id=%s mustReport=%d data=%s" % (wake, 1 if event.get("mustReport") else 0, first))
            if first.startswith("INVITE "):
                agent.report_call(wake, "socket-call")
                voip.sendall(b"SIP/2.0 200 OK\r\n\r\n")
                agent.call_ended("socket-call")
                log("reported wake=%s" % wake)
            else:
                agent.voip_wake_handled(wake)
                log("wakeHandled id=%s" % wake)
        elif kind == "keepAlive":
            agent.keep_alive_done(event["keepAliveID"])
            log("keepAlive id=%s" % event["keepAliveID"])
        elif kind == "activation":
            log("activation session=%s event=%s" % (event.get("session"), event.get("event")))
            if event.get("session") == "call" and event.get("event") == "callActivated":
                for call_id in calls:
                    agent.call_ended(call_id)
                    log("ended call=%s" % call_id)
                calls = []
        elif kind == "credentials":
            log("credentials topic=%s" % event["topic"])
        elif agent.time_changed(event) is not None:
            clock_step, time_zone = agent.time_changed(event)
            log("timeChanged clockStep=%d timeZone=%d" % (clock_step, time_zone))
        elif kind == "error":
            log("error requestID=%s %s %s" % (event.get("requestID", -1), event.get("error"), event.get("detail")))
        else:
            log("event %s" % kind)
    log("closed at %.3f" % time.time())


if __name__ == "__main__":
    main()
