import CRouseSystemd
import CSystemd
import Glibc
import RouseClock
import RouseEventLoop
import Synchronization

/// Which bus to connect to.
package enum DBusBus: Sendable, Equatable, CustomStringConvertible {
    /// The system bus (`/run/dbus/system_bus_socket`, or `DBUS_SYSTEM_BUS_ADDRESS`): logind, UPower.
    case system
    /// The user's session bus (`DBUS_SESSION_BUS_ADDRESS`, or `$XDG_RUNTIME_DIR/bus`): the notification server.
    case session
    /// A bus at this address (`unix:path=…`): the tests' private `dbus-daemon`.
    case address(String)

    package var description: String {
        switch self {
        case .system: "system"
        case .session: "session"
        case .address(let address): address
        }
    }
}

/// One connection to a D-Bus bus through sd-bus, on an ``EventLoop``: the bus's descriptor waits in the loop's
/// `epoll` with the events `sd_bus_get_events` asks for, and its next deadline (`sd_bus_get_timeout`: a call's reply
/// timeout) is a loop timer on the loop's ``RouseClock``. With nothing pending the loop sleeps: no timer, no wake-up.
///
/// The `sd_bus` handle is confined to the loop's thread (sd-bus is not thread-safe); every public method hops there.
/// Signal handlers and exported methods are called on that thread and must not block.
package final class DBusConnection: @unchecked Sendable {  // Mutable state is loop-confined (see above).
    let loop: EventLoop
    private let ownsLoop: Bool
    private var bus: OpaquePointer?
    private var fd: Int32 = -1
    private var interest: UInt32 = 0
    private var timer: UInt64?
    private var timerDeadline: UInt64 = .max
    private var processing = false
    private var pendingCalls: [ObjectIdentifier: PendingCall] = [:]
    private var slots: [UInt64: Registration] = [:]
    private var nextSlot: UInt64 = 1
    private var disconnectHandlers: [@Sendable (DBusError) -> Void] = []
    /// The bus this connection was made to.
    package let busKind: DBusBus
    /// The unique name the bus gave this connection (`:1.42`), once connected.
    package private(set) var uniqueName = ""

    /// Connects to `bus`. On `loop` when given (it must be running), else on a loop of its own named `rouse-dbus`
    /// with timers on `clock`. Fails when the bus cannot be reached.
    package static func connect(
        _ bus: DBusBus, loop: EventLoop? = nil, clock: any RouseClock = SystemClock()
    ) async throws(DBusError) -> DBusConnection {
        let chosen: EventLoop
        let owns = loop == nil
        if let loop {
            chosen = loop
        } else {
            do {
                chosen = try EventLoop(name: "rouse-dbus", clock: clock)
            } catch {
                throw DBusError.unexpected("event loop: \(error)")
            }
            chosen.start()
        }
        let connection = DBusConnection(loop: chosen, ownsLoop: owns, bus: bus)
        do {
            try await connection.onLoop { () throws(DBusError) in try connection.open() }
            // The Hello reply carries the unique name: a Ping of the bus itself waits for it.
            _ = try await connection.call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                interface: "org.freedesktop.DBus.Peer", member: "Ping")
            try await connection.onLoop { () throws(DBusError) in
                var name: UnsafePointer<CChar>?
                if let handle = connection.bus, rouse_sd_bus_get_unique_name(handle, &name) >= 0, let name {
                    connection.uniqueName = String(cString: name)
                }
            }
        } catch {
            await connection.close()
            throw error
        }
        return connection
    }

    private init(loop: EventLoop, ownsLoop: Bool, bus: DBusBus) {
        self.loop = loop
        self.ownsLoop = ownsLoop
        self.busKind = bus
    }

    deinit {
        assert(bus == nil, "a DBusConnection must be closed before it is released")
    }

    /// On the loop: opens the bus and registers its descriptor.
    private func open() throws(DBusError) {
        loop.assertInLoop()
        if let why = rouse_sd_load() { throw DBusError.libraryLoad(String(cString: why)) }
        var handle: OpaquePointer?
        var result: Int32
        switch busKind {
        case .system: result = rouse_sd_bus_open_system(&handle)
        case .session: result = rouse_sd_bus_open_user(&handle)
        case .address(let address):
            result = rouse_sd_bus_new(&handle)
            if result >= 0, let handle {
                result = rouse_sd_bus_set_address(handle, address)
                if result >= 0 { result = rouse_sd_bus_set_bus_client(handle, 1) }
                if result >= 0 { result = rouse_sd_bus_start(handle) }
            }
        }
        guard result >= 0, let handle else {
            if let handle { rouse_sd_bus_close_unref(handle) }
            throw DBusError.call("sd_bus_open (\(busKind))", result)
        }
        bus = handle
        let descriptor = rouse_sd_bus_get_fd(handle)
        guard descriptor >= 0 else { throw DBusError.call("sd_bus_get_fd", descriptor) }
        fd = descriptor
        interest = EventLoop.readable
        do {
            try loop.register(descriptor, events: interest, handler: Driver(self))
        } catch {
            fd = -1
            throw DBusError.unexpected("epoll: \(error)")
        }
        drive()
    }

    /// Closes the connection: pending calls fail with ``DBusError/closed``, subscriptions and exported objects end;
    /// a loop of its own is stopped. Idempotent.
    package func close() async {
        try? await onLoop { () throws(DBusError) in self.closeOnLoop(DBusError.closed, notify: false) }
        if ownsLoop { loop.stopAndWait() }
    }

    /// How many times the connection's loop woke (tests and benchmarks: an idle connection must not wake it).
    package var wakeUps: UInt64 { loop.wakeUps.load(ordering: .relaxed) }

    /// Calls `handler` (on the loop) once the bus drops the connection (dbus-daemon ended, the socket closed).
    package func onDisconnect(_ handler: @escaping @Sendable (DBusError) -> Void) {
        loop.execute { [self] in disconnectHandlers.append(handler) }
    }

    private func closeOnLoop(_ error: DBusError, notify: Bool) {
        loop.assertInLoop()
        guard let handle = bus else { return }
        if fd >= 0 { loop.unregister(fd) }
        fd = -1
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        for registration in slots.values { rouse_sd_bus_slot_unref(registration.slot) }
        slots = [:]
        let calls = pendingCalls.values
        pendingCalls = [:]
        rouse_sd_bus_close_unref(handle)
        bus = nil
        for call in calls { call.complete(.failure(error)) }
        if notify { for handler in disconnectHandlers { handler(error) } }
    }

    // MARK: The loop's side

    /// Runs `body` on the loop's thread and returns its result.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () throws(DBusError) -> T) async throws(DBusError) -> T {
        if loop.inLoop { return try body() }
        let result: Result<T, DBusError> = await withCheckedContinuation { continuation in
            loop.execute {
                do throws(DBusError) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// The bus handle, or ``DBusError/closed``.
    func handle() throws(DBusError) -> OpaquePointer {
        loop.assertInLoop()
        guard let bus else { throw DBusError.closed }
        return bus
    }

    /// Lets sd-bus read, write and dispatch what it can, then asks it what to wait for next: the descriptor's events
    /// and the next deadline. Called after the descriptor was ready, after a timer, and after each send.
    func drive() {
        loop.assertInLoop()
        guard let handle = bus, !processing else { return }
        processing = true
        while true {
            let result = rouse_sd_bus_process(handle, nil)
            if result < 0 {
                processing = false
                closeOnLoop(DBusError.call("sd_bus_process", result), notify: true)
                return
            }
            if result == 0 { break }
        }
        processing = false
        guard bus != nil else { return }
        let wanted = rouse_sd_bus_get_events(handle)
        var events: UInt32 = 0
        if wanted >= 0 {
            if Int16(truncatingIfNeeded: wanted) & Int16(POLLIN) != 0 { events |= EPOLLIN.rawValue }
            if Int16(truncatingIfNeeded: wanted) & Int16(POLLOUT) != 0 { events |= EPOLLOUT.rawValue }
        }
        if events != interest, fd >= 0 {
            interest = events
            loop.modify(fd, events: events)
        }
        var deadline: UInt64 = .max
        if rouse_sd_bus_get_timeout(handle, &deadline) < 0 { deadline = .max }
        armTimer(deadline)
    }

    /// A loop timer for sd-bus's deadline (microseconds of `CLOCK_MONOTONIC`, `UINT64_MAX` for none).
    private func armTimer(_ deadline: UInt64) {
        guard deadline != timerDeadline else { return }
        if let timer { loop.cancelTimer(timer) }
        timer = nil
        timerDeadline = deadline
        guard deadline != .max else { return }
        let now = SystemClock().now.nanoseconds / 1000
        let delay = Duration.microseconds(deadline > now ? deadline - now : 0)
        timer = loop.schedule(after: delay) { [self] in
            timer = nil
            timerDeadline = .max
            drive()
        }
    }

    /// Called by `drive` when a reply for `call` arrived.
    func finished(_ call: PendingCall) { pendingCalls[ObjectIdentifier(call)] = nil }

    /// Keeps `call` until its reply.
    func track(_ call: PendingCall) { pendingCalls[ObjectIdentifier(call)] = call }

    /// Keeps `slot` (a match, an exported object) until ``cancel(_:)``; returns its id.
    func keep(_ registration: Registration) -> UInt64 {
        defer { nextSlot += 1 }
        slots[nextSlot] = registration
        return nextSlot
    }

    /// Ends a subscription or an export.
    func cancel(_ id: UInt64) {
        guard let registration = slots.removeValue(forKey: id) else { return }
        rouse_sd_bus_slot_unref(registration.slot)
    }

    /// The loop's handler of the bus's descriptor.
    private final class Driver: EventLoopFDHandler {
        weak var connection: DBusConnection?
        init(_ connection: DBusConnection) { self.connection = connection }
        func handleEvents(_ events: UInt32) { connection?.drive() }
    }
}

/// A match or an exported object: its sd-bus slot, and the box its callbacks get as `userdata` (kept alive here).
final class Registration {
    let slot: OpaquePointer?
    let box: AnyObject
    init(slot: OpaquePointer?, box: AnyObject) {
        self.slot = slot
        self.box = box
    }
}
