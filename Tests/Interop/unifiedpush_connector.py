#!/usr/bin/env python3
"""A UnifiedPush app (connector) for the agent's distributor tests, on dbus-fast (Debian's python3-dbus-fast).

    unifiedpush_connector.py serve NAME VERSION DIR
        what the app's .service file runs (D-Bus activation): own NAME, serve org.unifiedpush.Connector<VERSION> at
        /org/unifiedpush/Connector, append each call to DIR/NAME.events (one JSON object a line); exit after
        UP_IDLE seconds (default 3) without a call, as NeoChat and Tokodon do after 5 s, or when the bus goes.
    unifiedpush_connector.py register NAME VERSION DIR TOKEN [--vapid K] [--description D] [--service S]
        own NAME and serve as above, then register: introspect the distributor, use Distributor2 when its XML names
        it and VERSION is 2, else Distributor1; print the reply as JSON ({"success":…,"reason":…}); stay until the
        NewEndpoint call came (at most 10 s) when the registration succeeded.
    unifiedpush_connector.py unregister NAME VERSION DIR TOKEN
        own NAME, call Unregister, stay until Unregistered came (at most 10 s).

When DIR/NAME.mode holds "no-id", Message answers {} (no id: the distributor must not acknowledge); with "error",
Message answers a D-Bus error; with "hang", Message never answers (the distributor's reply timeout); with
"fail-endpoint", NewEndpoint answers an error (an app that no longer works: the 30-day rule's ping fails).
Each Message record carries "mono", CLOCK_MONOTONIC in nanoseconds when the call reached the app (rouse-bench webpush
compares it with its send time on the same machine); a serving app appends {"call": "Exit"} when it exits.
Run by the system python3 (dbus-fast from Debian); the connection address is DBUS_STARTER_ADDRESS (activation) or
DBUS_SESSION_BUS_ADDRESS.
"""
import asyncio
import base64
import json
import os
import sys
import time

from dbus_fast import BusType, DBusError, ErrorType, Message, NameFlag, Variant
from dbus_fast.aio import MessageBus
from dbus_fast.service import ServiceInterface, method

DISTRIBUTOR = "org.unifiedpush.Distributor.rouse"
DISTRIBUTOR_PATH = "/org/unifiedpush/Distributor"
CONNECTOR_PATH = "/org/unifiedpush/Connector"


class App:
    def __init__(self, name, directory):
        self.name = name
        self.directory = directory
        self.activity = asyncio.Event()
        self.seen = {}
        # Message calls being answered (Connector2's are asynchronous): an exit waits for them.
        self.calls = 0
        self.answered = asyncio.Event()

    async def drained(self, seconds):
        """Waits (at most `seconds`: a "hang" call never ends) until no Message call is being answered."""
        deadline = time.monotonic() + seconds
        while self.calls > 0 and time.monotonic() < deadline:
            self.answered.clear()
            try:
                await asyncio.wait_for(self.answered.wait(), deadline - time.monotonic())
            except asyncio.TimeoutError:
                pass

    def record(self, call, **fields):
        entry = {"call": call, **fields}
        with open(os.path.join(self.directory, self.name + ".events"), "a") as f:
            f.write(json.dumps(entry) + "\n")
        self.seen.setdefault(call, asyncio.Event()).set()
        self.activity.set()

    def mode(self):
        try:
            with open(os.path.join(self.directory, self.name + ".mode")) as f:
                return f.read().strip()
        except FileNotFoundError:
            return ""


class Connector2(ServiceInterface):
    def __init__(self, app):
        super().__init__("org.unifiedpush.Connector2")
        self.app = app

    @method()
    async def Message(self, args: "a{sv}") -> "a{sv}":
        self.app.calls += 1
        try:
            return await self.message(args)
        finally:
            self.app.calls -= 1
            self.app.answered.set()

    async def message(self, args):
        mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        token = args["token"].value
        message = bytes(args["message"].value)
        ident = args["id"].value if "id" in args else None
        self.app.record("Message", token=token, message=base64.b64encode(message).decode(), id=ident, mono=mono)
        mode = self.app.mode()
        if mode == "error":
            raise DBusError(ErrorType.FAILED, "this app fails its messages")
        if mode == "hang":
            await asyncio.Future()
        if ident is None or mode == "no-id":
            return {}
        return {"id": Variant("s", ident)}

    @method()
    def NewEndpoint(self, args: "a{sv}") -> "a{sv}":
        self.app.record("NewEndpoint", token=args["token"].value, endpoint=args["endpoint"].value)
        if self.app.mode() == "fail-endpoint":
            raise DBusError(ErrorType.FAILED, "this app is broken")
        return {}

    @method()
    def Unregistered(self, args: "a{sv}") -> "a{sv}":
        self.app.record("Unregistered", token=args["token"].value)
        return {}


class Connector1(ServiceInterface):
    def __init__(self, app):
        super().__init__("org.unifiedpush.Connector1")
        self.app = app

    @method()
    def Message(self, token: "s", message: "ay", ident: "s"):
        mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        self.app.record("Message", token=token, message=base64.b64encode(bytes(message)).decode(), id=ident, mono=mono)

    @method()
    def NewEndpoint(self, token: "s", endpoint: "s"):
        self.app.record("NewEndpoint", token=token, endpoint=endpoint)

    @method()
    def Unregistered(self, token: "s"):
        self.app.record("Unregistered", token=token)


async def connect():
    address = os.environ.get("DBUS_STARTER_ADDRESS") or os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    bus = MessageBus(bus_address=address) if address else MessageBus(bus_type=BusType.SESSION)
    return await bus.connect()


async def own(name, version, directory, replace=False):
    # An activated instance may still run (idle): the app started by hand replaces it, as a new start would.
    app = App(name, directory)
    bus = await connect()
    bus.export(CONNECTOR_PATH, Connector2(app) if version == 2 else Connector1(app))
    await bus.request_name(name, NameFlag.REPLACE_EXISTING if replace else NameFlag.ALLOW_REPLACEMENT)
    return app, bus


async def idle_exit(app, bus):
    idle = float(os.environ.get("UP_IDLE", "3"))
    disconnected = asyncio.ensure_future(bus.wait_for_disconnect())
    while True:
        app.activity.clear()
        woke = asyncio.ensure_future(app.activity.wait())
        done, _ = await asyncio.wait({woke, disconnected}, timeout=idle, return_when=asyncio.FIRST_COMPLETED)
        if disconnected in done or not done:
            woke.cancel()
            return


async def wait_for(app, call, seconds):
    event = app.seen.setdefault(call, asyncio.Event())
    try:
        await asyncio.wait_for(event.wait(), seconds)
    except asyncio.TimeoutError:
        pass


async def distributor(bus, version):
    introspection = await bus.introspect(DISTRIBUTOR, DISTRIBUTOR_PATH)
    names = [interface.name for interface in introspection.interfaces]
    proxy = bus.get_proxy_object(DISTRIBUTOR, DISTRIBUTOR_PATH, introspection)
    if version == 2 and "org.unifiedpush.Distributor2" in names:
        return 2, proxy.get_interface("org.unifiedpush.Distributor2")
    return 1, proxy.get_interface("org.unifiedpush.Distributor1")


async def register(name, version, directory, token, options):
    app, bus = await own(name, version, directory, replace=True)
    used, interface = await distributor(bus, version)
    service = options.get("--service", name)
    description = options.get("--description", "")
    if used == 2:
        args = {"service": Variant("s", service), "token": Variant("s", token)}
        if description:
            args["description"] = Variant("s", description)
        if "--vapid" in options:
            args["vapid"] = Variant("s", options["--vapid"])
        reply = await interface.call_register(args)
        result = {key: value.value for key, value in reply.items()}
    else:
        success, reason = await interface.call_register(service, token, description)
        result = {"success": success, "reason": reason}
    result["version"] = used
    print(json.dumps(result), flush=True)
    if result.get("success") == "REGISTRATION_SUCCEEDED":
        await wait_for(app, "NewEndpoint", 10)
    bus.disconnect()


async def unregister(name, version, directory, token):
    app, bus = await own(name, version, directory, replace=True)
    used, interface = await distributor(bus, version)
    if used == 2:
        await interface.call_unregister({"token": Variant("s", token)})
    else:
        await bus.send(Message(destination=DISTRIBUTOR, path=DISTRIBUTOR_PATH, interface="org.unifiedpush.Distributor1",
                               member="Unregister", signature="s", body=[token]))
    await wait_for(app, "Unregistered", 10)
    print(json.dumps({"unregistered": "Unregistered" in app.seen and app.seen["Unregistered"].is_set()}), flush=True)
    bus.disconnect()


async def serve(name, version, directory):
    app, bus = await own(name, version, directory)
    await idle_exit(app, bus)
    # An exit that drops no call: the name is given up first (a call after that starts a new instance, by D-Bus
    # activation), and the calls the bus routed here before it (read ahead of ReleaseName's reply: one connection keeps
    # its order) are answered before the connection goes. Exiting at the idle deadline with a Message in hand would
    # leave the distributor a NoReply for a message it had delivered (seen: AgentUnifiedPushTests under load).
    if bus.connected:
        try:
            await bus.release_name(name)
        except Exception:
            pass
        await app.drained(5)
    bus.disconnect()
    app.record("Exit")


def main(argv):
    if len(argv) >= 5:
        command, name, version, directory = argv[1], argv[2], int(argv[3]), argv[4]
        rest = argv[5:]
        if command == "serve":
            return asyncio.run(serve(name, version, directory))
        if command == "register" and rest:
            options = dict(zip(rest[1::2], rest[2::2]))
            return asyncio.run(register(name, version, directory, rest[0], options))
        if command == "unregister" and rest:
            return asyncio.run(unregister(name, version, directory, rest[0]))
    sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
