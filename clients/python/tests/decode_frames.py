"""decode_frames: reads frame bodies (one JSON object per line) on stdin, passes each through a socketpair to
rouse_handler as the agent would, and prints the decoded message as one JSON object per line (a line the module
refuses prints {"refused": "..."}). Used by HandlerLibraryTests to check the module against every example of
docs/handler-protocol.md."""
import json
import os
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import rouse_handler  # noqa: E402

for line in sys.stdin.buffer:
    body = line.rstrip(b"\n")
    if not body:
        continue
    ours, theirs = socket.socketpair()
    ours.sendall(struct.pack(">I", len(body)) + body)
    agent = rouse_handler.Agent(theirs)
    try:
        event = agent.next_event(1.0)
        print(json.dumps(event if event is not None else {"refused": "timeout"}))
    except rouse_handler.AgentError as error:
        print(json.dumps({"refused": str(error)}))
    agent.close()
    ours.close()
