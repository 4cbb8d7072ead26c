"""rouse_handler: the handler side of rouse-agent's IPC protocol, for Python 3.9+ (standard library only).

The protocol is specified in docs/handler-protocol.md (installed as
/usr/share/doc/rouse-agent/handler-protocol.md): frames of a 4-byte big-endian length and one UTF-8 JSON
object with "v": 1 and "type". This module frames, sends and receives them, passes descriptors
(SCM_RIGHTS) both ways, and gives each message as a plain dict; it does not enforce the rules (report a call
at once after a VoIP push, complete a background push in time): the agent does, and the handler decides.

    import rouse_handler
    agent = rouse_handler.connect()          # ROUSE_AGENT_FD when launched, else the socket
    agent.register("phone")
    for event in agent.events():
        if event["type"] == "push" and event.get("mustReport"):
            agent.report_call(event["pushID"], call_id)   # at once: the agent kills a handler that does not
"""

import array
import base64
import json
import os
import select
import socket
import struct
import time

__all__ = ["Agent", "AgentError", "connect", "PROTOCOL_VERSION", "MAX_FRAME_BYTES", "DEFAULT_SOCKET",
           "MEMORY_WARNING"]

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 64 * 1024
DEFAULT_SOCKET = "/run/rouse/agent.sock"
# The "memoryWarning" event's type (docs/handler-protocol.md, section 13): memory is short, free caches now; members
# "trigger" and "memoryBytes" (the handler's own charged memory), either may be absent. If the pressure persists,
# suspended handlers are terminated first, then running background ones.
MEMORY_WARNING = "memoryWarning"


class AgentError(Exception):
    """The connection failed, a frame was malformed, or the agent answered a request with "error".

    code: the protocol's error code ("malformedFrame", "badRequest", ...) or "connectionClosed", "protocol";
    detail: what was wrong, in words."""

    def __init__(self, code, detail):
        super().__init__("%s: %s" % (code, detail))
        self.code = code
        self.detail = detail


def connect(socket_path=None):
    """Connects to the agent: the inherited connection in ROUSE_AGENT_FD when the agent launched this process
    (made close-on-exec, so that children such as a softphone do not inherit it), else socket_path,
    ROUSE_AGENT_SOCKET or /run/rouse/agent.sock."""
    inherited = os.environ.get("ROUSE_AGENT_FD")
    if socket_path is None and inherited is not None and inherited.isdigit():
        fd = int(inherited)
        os.set_inheritable(fd, False)
        return Agent(socket.socket(fileno=fd))
    path = socket_path or os.environ.get("ROUSE_AGENT_SOCKET") or DEFAULT_SOCKET
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.connect(path)
    except OSError as error:
        sock.close()
        raise AgentError("connectionClosed", "connect %s: %s" % (path, error)) from None
    return Agent(sock)


def encode_frame(message):
    """The bytes of one frame for message (a dict with "type"; "v" is added)."""
    body = dict(message)
    body["v"] = PROTOCOL_VERSION
    data = json.dumps(body, separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode("utf-8")
    if not 0 < len(data) <= MAX_FRAME_BYTES:
        raise AgentError("protocol", "frame of %d bytes (at most %d)" % (len(data), MAX_FRAME_BYTES))
    return struct.pack(">I", len(data)) + data


class Agent:
    """One connection to rouse-agent. Not thread-safe: use it from one thread (or lock around it)."""

    def __init__(self, sock):
        self._sock = sock
        self._buffer = bytearray()
        self._fds = []          # descriptors received, waiting for the frame that names them
        self._next_request = 1
        self._queued = []       # events read while waiting for an answer
        self._on_will_terminate = None

    def fileno(self):
        """The socket's descriptor, for select/poll loops: readable means call next_event(0)."""
        return self._sock.fileno()

    def close(self):
        """Closes the connection (the agent then treats the handler as gone) and unclaimed descriptors."""
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        self._sock.close()

    # Sending.

    def send(self, type_, request_id=None, fd=None, **members):
        """Sends one message: type_ and its members (None values are left out); fd: a descriptor passed with it
        (SCM_RIGHTS; addTransfer with descriptor=True)."""
        message = {k: v for k, v in members.items() if v is not None}
        message["type"] = type_
        if request_id is not None:
            message["requestID"] = request_id
        frame = encode_frame(message)
        try:
            if fd is None:
                self._sock.sendall(frame)
            else:
                sent = self._sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
                if sent < len(frame):
                    self._sock.sendall(frame[sent:])
        except OSError as error:
            raise AgentError("connectionClosed", "send: %s" % error) from None

    def request(self, type_, timeout=10.0, fd=None, **members):
        """Sends a message with a fresh requestID and returns the answer carrying it (events arriving
        meanwhile are kept for next_event); raises AgentError for an "error" answer or no answer in time."""
        request_id = self._next_request
        self._next_request += 1
        self.send(type_, request_id=request_id, fd=fd, **members)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AgentError("timeout", "no answer to %s within %.1f s" % (type_, timeout))
            event = self._read_event(left)
            if event is None:
                continue
            if event.get("requestID") == request_id:
                if event["type"] == "error":
                    raise AgentError(event.get("error", "error"), event.get("detail", ""))
                return event
            self._queued.append(event)

    def register(self, handler, preserves=False):
        """register: the first message; the agent answers "registered" (then "credentials", "reachability")."""
        self.send("register", handler=handler, preserves=True if preserves else None)

    def report_call(self, push_id, call_id, category=None, mode=None, options=None):
        """reportCall: the call a VoIP push announced (push_id None: an outgoing call). Send it as soon as the
        push arrives: after the push's "seconds" the agent kills the handler and counts a strike."""
        self.send("reportCall", pushID=push_id, callID=call_id, category=category, mode=mode, options=options)

    def call_ended(self, call_id, notify_others=None):
        """callEnded: the call is over (its call session ends; interrupted sessions may resume)."""
        self.send("callEnded", callID=call_id, notifyOthers=notify_others)

    def complete(self, push_id, result="newData"):
        """complete: a background push is processed; result "newData", "noData" or "failed"."""
        self.send("complete", pushID=push_id, result=result)

    def set_state(self, state):
        """setState: "active"/"inactive" (foreground) or "background"."""
        self.send("setState", state=state)

    def begin_task(self, name):
        """beginTask: returns the task's id (answer "taskBegun"); AgentError taskInvalid when no time is left."""
        return self.request("beginTask", taskName=name)["taskID"]

    def end_task(self, task_id):
        """endTask."""
        self.send("endTask", taskID=task_id)

    def activate(self, session, category, mode=None, options=None, role=None, accepts_delay=None):
        """activate: asks for an audio session; returns the "activation" answer (event granted/denied/delayed)."""
        return self.request("activate", session=session, category=category, mode=mode, options=options,
                            role=role, acceptsDelay=accepts_delay)

    def deactivate(self, session, notify_others=None):
        """deactivate: returns the "ok" answer."""
        return self.request("deactivate", session=session, notifyOthers=notify_others)

    # Socket-woken VoIP (docs/handler-protocol.md sections 6.12, 6.13, 7.14; docs/voip-sockets.md).

    def add_voip_socket(self, sock, timeout=10.0):
        """addVoIPSocket: hands the agent a copy of sock (a connected socket object or descriptor: the signalling
        connection to the registrar); while this handler is frozen or gone the agent watches it and wakes the
        handler when data arrives ("voipSocketWake"). Returns the answer's socketID; AgentError badDescriptor or
        tooManySockets when refused. The handler keeps its own descriptor and goes on using it."""
        fd = sock if isinstance(sock, int) else sock.fileno()
        return self.request("addVoIPSocket", timeout=timeout, fd=fd, descriptor=True)["socketID"]

    def remove_voip_socket(self, socket_id, timeout=10.0):
        """removeVoIPSocket: the agent stops watching socket_id and closes its copy."""
        return self.request("removeVoIPSocket", timeout=timeout, socketID=socket_id)

    def voip_wake_handled(self, wake_id, timeout=10.0):
        """voipWakeHandled: the data that woke the handler (wake_id) was not a call (OPTIONS, NOTIFY, a
        keep-alive answer); answers the wake instead of reportCall."""
        return self.request("voipWakeHandled", timeout=timeout, wakeID=wake_id)

    def set_keep_alive(self, seconds, timeout=10.0):
        """setKeepAlive: a "keepAlive" event at least every seconds (600 to 86400, as iOS's
        setKeepAliveTimeout:handler:), the handler thawed or launched for it with a short budget."""
        return self.request("setKeepAlive", timeout=timeout, seconds=seconds)

    def clear_keep_alive(self, timeout=10.0):
        """clearKeepAlive."""
        return self.request("clearKeepAlive", timeout=timeout)

    def restoration_finished(self, timeout=10.0):
        """restorationFinished: restoration is over for this launch (after answering "restoration", or at once when
        none came). A crash before it discards the preserved state at the next launch; after it, what the handler
        preserved is kept."""
        return self.request("restorationFinished", timeout=timeout)

    def on_will_terminate(self, callback):
        """Registers callback(reason, seconds), called when a "willTerminate" event is read (before it is returned):
        the agent stops this handler and kills it after seconds; hang up, save and exit (e.g. sys.exit(0)) in time.
        None unregisters."""
        self._on_will_terminate = callback

    @staticmethod
    def time_changed(event):
        """(clock_step, time_zone) for a "timeChanged" event (the wall clock stepped and/or the time zone changed:
        recompute wall-clock timers), None for any other event."""
        if event.get("type") != "timeChanged":
            return None
        return bool(event.get("clockStep")), bool(event.get("timeZone"))

    def keep_alive_done(self, keep_alive_id, timeout=10.0):
        """keepAliveDone: the keep-alive keep_alive_id is done (the handler may be frozen again)."""
        return self.request("keepAliveDone", timeout=timeout, keepAliveID=keep_alive_id)

    # Protected files (docs/handler-protocol.md section 10 and "Protected files in the client libraries").

    def write_protected(self, name, data, protection=None, handle=None, timeout=10.0):
        """protectedFile write: replaces the file name with data (bytes), sealed under protection ("none",
        "until-first-unlock", "complete", "complete-unless-open"); or, with handle (from open_protected), through
        that open file. AgentError protectedDataUnavailable while the class's key is not held (a "complete" file
        while the session is locked)."""
        self.request("protectedFile", timeout=timeout, op="write", name=name, protection=protection,
                     data=base64.b64encode(bytes(data)).decode("ascii"), handle=handle)

    def read_protected(self, name, handle=None, timeout=10.0):
        """protectedFile read: the content of the file name (bytes), or through the open file handle.
        AgentError notFound, protectedDataUnavailable."""
        answer = self.request("protectedFile", timeout=timeout, op="read", name=name, handle=handle)
        try:
            return base64.b64decode(answer.get("data", ""), validate=True)
        except (ValueError, TypeError):
            raise AgentError("protocol", "protectedFileReply without base64 data") from None

    def reclass_protected(self, name, protection, timeout=10.0):
        """protectedFile reclass: seals the file name again under protection (both classes' keys must be held)."""
        self.request("protectedFile", timeout=timeout, op="reclass", name=name, protection=protection)

    def remove_protected(self, name, timeout=10.0):
        """protectedFile remove (its open handles close)."""
        self.request("protectedFile", timeout=timeout, op="remove", name=name)

    def open_protected(self, name, create=False, timeout=10.0):
        """protectedFile open: opens the "complete-unless-open" file name (the session must be unlocked), or creates
        it empty when missing and create (possible while locked). Returns the handle: reads and writes naming it go
        on after the session locks, until close_protected or the end of this connection."""
        answer = self.request("protectedFile", timeout=timeout, op="open", name=name,
                              protection="complete-unless-open" if create else None)
        if not isinstance(answer.get("handle"), int):
            raise AgentError("protocol", "open answered without a handle")
        return answer["handle"]

    def close_protected(self, name, handle, timeout=10.0):
        """protectedFile close: the agent forgets the open file's key."""
        self.request("protectedFile", timeout=timeout, op="close", name=name, handle=handle)

    @staticmethod
    def returned_socket(event):
        """The socket object of a "voipSocket" event with "returned": true (a relaunched handler's watched
        connection, handed back with its unread data), or None. The caller owns it."""
        if event.get("type") != "voipSocket" or "fd" not in event:
            return None
        fd = event.pop("fd")
        return socket.socket(fileno=fd)

    # Receiving.

    def next_event(self, timeout=None):
        """The next message from the agent as a dict ("type" and its members), or None when timeout (seconds)
        passed first. A frame that came with a descriptor (transferTask with file=True, voipSocket with
        returned=True) has it under "fd": the caller owns and closes it. Raises AgentError("connectionClosed") when the agent closed."""
        event = self._queued.pop(0) if self._queued else self._read_event(timeout)
        if event is not None and event.get("type") == "willTerminate" and self._on_will_terminate is not None:
            self._on_will_terminate(event.get("reason", ""), float(event.get("seconds", 0)))
        return event

    def events(self):
        """Every message until the agent closes the connection."""
        while True:
            try:
                event = self.next_event()
            except AgentError as error:
                if error.code == "connectionClosed":
                    return
                raise
            if event is not None:
                yield event

    def pending_events(self, linger=0.0):
        """Every message already there, and those that arrive until linger seconds pass without one: call it
        before exiting (after the last callEnded or complete) and handle what it returns. A push that came while the
        handler was leaving is then answered, not left unread in the socket; one left unanswered at a clean exit
        comes back once at the next launch (docs/handler-protocol.md, section 15). Raises
        AgentError("connectionClosed") when the agent closed."""
        events = []
        event = self.next_event(linger)
        while event is not None:
            events.append(event)
            event = self.next_event(linger)
        return events

    def drain(self, handle, linger=0.0):
        """Hands every message already there (and those arriving within linger seconds of the last) to handle, one
        at a time; False when the agent closed the connection (a handler's select loop then ends)."""
        try:
            for event in self.pending_events(linger):
                handle(event)
        except AgentError:
            return False
        return True

    @staticmethod
    def payload(push):
        """A push's payload (base64 on the wire) decoded as JSON; None when it is not JSON."""
        try:
            return json.loads(base64.b64decode(push.get("payload", ""), validate=True))
        except (ValueError, TypeError):
            return None

    def _read_event(self, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            event = self._take_frame()
            if event is not None:
                return event
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            # A timeout of 0 still reads what has arrived (a poll), as select does.
            readable, _, _ = select.select([self._sock], [], [], left)
            if not readable:
                return None
            try:
                data, ancillary, _, _ = self._sock.recvmsg(65536, socket.CMSG_SPACE(4 * 4))
            except InterruptedError:
                continue
            except OSError as error:
                raise AgentError("connectionClosed", "receive: %s" % error) from None
            for level, kind, fds in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    received = array.array("i")
                    received.frombytes(fds[: len(fds) - (len(fds) % received.itemsize)])
                    for fd in received:
                        os.set_inheritable(fd, False)
                        self._fds.append(fd)
            if not data:
                raise AgentError("connectionClosed", "the agent closed the connection")
            self._buffer += data

    def _take_frame(self):
        if len(self._buffer) < 4:
            return None
        length = struct.unpack(">I", bytes(self._buffer[:4]))[0]
        if not 0 < length <= MAX_FRAME_BYTES:
            raise AgentError("malformedFrame", "frame length %d" % length)
        if len(self._buffer) < 4 + length:
            return None
        body = bytes(self._buffer[4:4 + length])
        del self._buffer[:4 + length]
        try:
            event = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            raise AgentError("malformedFrame", "not JSON: %s" % error) from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise AgentError("malformedFrame", "not a protocol object")
        if event.get("v") != PROTOCOL_VERSION:
            raise AgentError("unsupportedVersion", "frame of version %r" % (event.get("v"),))
        claims = (event["type"] == "transferTask" and event.get("file") is True) or \
            (event["type"] == "voipSocket" and event.get("returned") is True)
        if claims and self._fds:
            event["fd"] = self._fds.pop(0)
        return event


# Notifications (docs/handler-protocol.md, section 11): local notifications the agent shows through the desktop's
# notification server at their time, kept across agent restarts; a click arrives as a "notificationResponse"
# event (the handler launched for it). Module functions taking the Agent, also bound as its methods.

def schedule_notification(agent, identifier, title=None, body=None, subtitle=None, sound=None, thread_id=None,
                          interruption_level=None, user_info=None, fire_at=None, after_seconds=None,
                          repeat_seconds=None, timeout=10.0):
    """scheduleNotification: shows the notification identifier (replacing a pending one with that identifier)
    now, after_seconds from now, or at fire_at (UNIX milliseconds); repeat_seconds (>= 60) repeats it. user_info is
    JSON text handed back in the response. Returns the notification as scheduled (a dict, "fireAt" resolved);
    AgentError "tooManyPending" when 64 are pending already."""
    reply = agent.request(
        "scheduleNotification", timeout=timeout, identifier=identifier, title=title, body=body, subtitle=subtitle,
        sound=sound, threadID=thread_id, interruptionLevel=interruption_level, userInfo=user_info, fireAt=fire_at,
        afterSeconds=after_seconds, repeatSeconds=repeat_seconds)
    notifications = reply.get("notifications") or [None]
    return notifications[0]


def pending_notifications(agent, timeout=10.0):
    """listNotifications: the pending local notifications (dicts), the next to fire first."""
    return agent.request("listNotifications", timeout=timeout).get("notifications", [])


def cancel_notifications(agent, identifiers=None, timeout=10.0):
    """cancelNotifications: removes identifiers (None: every pending one); returns how many were pending."""
    reply = agent.request("cancelNotifications", timeout=timeout, identifiers=identifiers,
                          all=True if identifiers is None else None)
    return int(reply.get("detail") or 0)


Agent.schedule_notification = schedule_notification
Agent.pending_notifications = pending_notifications
Agent.cancel_notifications = cancel_notifications
