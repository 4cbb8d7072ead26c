import CRouseSystemd
import CSystemd
import RouseEventLoop

/// A signal received: who sent it, from which object, and its values.
package struct DBusSignal: Sendable, Equatable {
    /// The sender's unique name.
    package var sender: String
    /// The object that emitted it.
    package var path: String
    /// Its interface.
    package var interface: String
    /// Its name.
    package var member: String
    /// Its values.
    package var arguments: [DBusValue]
}

/// Which signals a subscription receives; nil members match anything. The sender is left to the path and interface
/// (sd-bus compares a match's sender with the message's unique name, so a well-known name would never match).
package struct DBusMatch: Sendable, Equatable {
    /// The emitting object, or nil for any.
    package var path: String?
    /// The interface, or nil for any.
    package var interface: String?
    /// The signal's name, or nil for any.
    package var member: String?

    /// A match.
    package init(path: String? = nil, interface: String? = nil, member: String? = nil) {
        self.path = path
        self.interface = interface
        self.member = member
    }
}

/// A subscription or an exported object; ``cancel()`` ends it (so does closing the connection).
package struct DBusRegistration: Sendable {
    let id: UInt64
    let connection: DBusConnection

    /// Ends it.
    package func cancel() async {
        try? await connection.onLoop { () throws(DBusError) in connection.cancel(id) }
    }
}

/// The `userdata` of a match: the handler, and the install waiter.
final class SignalBox {
    let handler: @Sendable (DBusSignal) -> Void
    var installed: PendingCall?
    /// The registration's id, once kept.
    var id: UInt64 = 0
    init(handler: @escaping @Sendable (DBusSignal) -> Void) { self.handler = handler }
}

let signalArrived: sd_bus_message_handler_t = { message, userdata, _ in
    guard let message, let userdata else { return 0 }
    let box = Unmanaged<SignalBox>.fromOpaque(userdata).takeUnretainedValue()
    // A signal we cannot read is dropped (a peer's garbage must not end the connection).
    guard let arguments = try? DBusMessageCoding.readAll(message) else { return 0 }
    func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
    box.handler(
        DBusSignal(
            sender: text(rouse_sd_bus_message_get_sender(message)), path: text(rouse_sd_bus_message_get_path(message)),
            interface: text(rouse_sd_bus_message_get_interface(message)),
            member: text(rouse_sd_bus_message_get_member(message)),
            arguments: arguments))
    return 0
}

let matchInstalled: sd_bus_message_handler_t = { message, userdata, _ in
    guard let userdata else { return 0 }
    let box = Unmanaged<SignalBox>.fromOpaque(userdata).takeUnretainedValue()
    let installed = box.installed
    box.installed = nil
    installed?.complete(PendingCall.result(of: message))
    return 1
}

extension DBusConnection {
    /// Calls `handler` (on the loop) for each signal matching `match`, from when this returns: the bus has added
    /// the match rule by then (`AddMatch` answered).
    package func subscribe(_ match: DBusMatch, _ handler: @escaping @Sendable (DBusSignal) -> Void)
        async throws(DBusError) -> DBusRegistration
    {
        let result: Result<DBusRegistration, DBusError> = await withCheckedContinuation { continuation in
            let start: @Sendable () -> Void = { [self] in
                let box = SignalBox(handler: handler)
                box.installed = PendingCall(connection: self) { [box] result in
                    continuation.resume(returning: result.map { _ in DBusRegistration(id: box.id, connection: self) })
                }
                do throws(DBusError) {
                    let handle = try handle()
                    var slot: OpaquePointer?
                    let added = rouse_sd_bus_match_signal_async(
                        handle, &slot, nil, match.path, match.interface, match.member, signalArrived, matchInstalled,
                        Unmanaged.passUnretained(box).toOpaque())
                    if added < 0 { throw DBusError.call("sd_bus_match_signal_async", added) }
                    box.id = keep(Registration(slot: slot, box: box))
                    drive()
                } catch {
                    box.installed?.complete(.failure(error))
                }
            }
            if loop.inLoop { start() } else { loop.execute(start) }
        }
        return try result.get()
    }

    /// Emits a signal from the object `path`.
    package func emit(path: String, interface: String, member: String, arguments: [DBusValue] = [])
        async throws(DBusError)
    {
        try await onLoop { () throws(DBusError) in
            let handle = try self.handle()
            var message: OpaquePointer?
            let made = rouse_sd_bus_message_new_signal(handle, &message, path, interface, member)
            guard made >= 0, let message else { throw DBusError.call("sd_bus_message_new_signal", made) }
            defer { rouse_sd_bus_message_unref(message) }
            try DBusMessageCoding.append(arguments, to: message)
            let sent = rouse_sd_bus_send(handle, message, nil)
            if sent < 0 { throw DBusError.call("sd_bus_send", sent) }
            self.drive()
        }
    }
}
