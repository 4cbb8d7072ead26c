#!/usr/bin/python3
"""An example rouse-agent handler in Python on rouse_handler (used by the tests of the library).

Follows the rules: reports the call of a VoIP push at once, completes a background push, ends its call once the
call's session was activated, asks for an ambient audio session once registered. Logs one line per step to
--log (or stderr), then keeps running until the agent closes the connection (or freezes it).

    example_handler.py --name NAME [--log FILE]
"""
import argparse
import json
import sys
import time

import rouse_handler


def main():
    options = argparse.ArgumentParser()
    options.add_argument("--name", required=True)
    options.add_argument("--log")
    arguments = options.parse_args()
    output = open(arguments.log, "a", buffering=1) if arguments.log else sys.stderr

    def log(line):
        output.write("%s\n" % line)

    agent = rouse_handler.connect()
    agent.register(arguments.name)
    calls = []
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
        elif kind == "registered":
            log("registered handler=%s launchReason=%s" % (event["handler"], event["launchReason"]))
            answer = agent.activate("chime", "ambient")
            log("activate session=%s event=%s" % (answer.get("session"), answer.get("event")))
        elif kind == "activation":
            log("activation session=%s event=%s" % (event.get("session"), event.get("event")))
            if event.get("session") == "call" and event.get("event") == "callActivated":
                for call_id in calls:
                    agent.call_ended(call_id)
                    log("ended call=%s" % call_id)
                calls = []
        elif kind == "credentials":
            log("credentials topic=%s" % event["topic"])
        elif kind == "error":
            log("error %s %s" % (event.get("error"), event.get("detail")))
        else:
            log("event %s" % kind)
    log("closed at %.3f" % time.time())


if __name__ == "__main__":
    main()
