import CRouseSystemd
import CSystemd
import RouseEventLoop

/// A method call an exported object answers later (``DBusConnection/export(path:deferring:)``): a service whose
/// answer needs a round trip of its own (the UnifiedPush distributor's `Register` waits for the gateway) keeps it and
/// calls ``send(_:)`` once. One never answered is answered `org.freedesktop.DBus.Error.Failed` when released, so the
/// caller is not left waiting for its timeout and the message is freed.
package final class DBusDeferredReply: @unchecked Sendable {  // `message` is touched on the connection's loop only
    // (and in deinit, when nothing else holds the object).
    private var message: OpaquePointer?
    private let connection: DBusConnection

    init(message: OpaquePointer, connection: DBusConnection) {
        self.message = rouse_sd_bus_message_ref(message)
        self.connection = connection
    }

    /// Sends `reply` (``DBusMethodReply/notHandled`` counts as an error); later calls do nothing.
    package func send(_ reply: DBusMethodReply) {
        connection.loop.execute { [self] in
            guard let message = take() else { return }
            connection.answerDeferred(message, with: reply)
        }
    }

    /// The message, taken (nil once answered).
    func take() -> OpaquePointer? {
        defer { message = nil }
        return message
    }

    deinit {
        guard let message else { return }
        let connection = connection
        nonisolated(unsafe) let unanswered = message
        connection.loop.execute {
            connection.answerDeferred(
                unanswered, with: .error(name: "org.freedesktop.DBus.Error.Failed", message: "not answered"))
        }
    }
}

/// The `userdata` of a deferring export.
final class DeferredExportBox {
    let handler: @Sendable (DBusMethodCall, DBusDeferredReply) -> DBusMethodReply?
    weak var connection: DBusConnection?
    init(handler: @escaping @Sendable (DBusMethodCall, DBusDeferredReply) -> DBusMethodReply?) {
        self.handler = handler
    }
}

let deferredMethodCalled: sd_bus_message_handler_t = { message, userdata, _ in
    guard let message, let userdata else { return 0 }
    let box = Unmanaged<DeferredExportBox>.fromOpaque(userdata).takeUnretainedValue()
    guard let connection = box.connection else { return 0 }
    var type: UInt8 = 0
    guard rouse_sd_bus_message_get_type(message, &type) >= 0, type == 1 else { return 0 }  // SD_BUS_MESSAGE_METHOD_CALL
    func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
    let arguments: [DBusValue]
    do throws(DBusError) {
        arguments = try DBusMessageCoding.readAll(message)
    } catch {
        return answer(message, with: .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "\(error)"))
    }
    let call = DBusMethodCall(
        sender: text(rouse_sd_bus_message_get_sender(message)), path: text(rouse_sd_bus_message_get_path(message)),
        interface: text(rouse_sd_bus_message_get_interface(message)),
        member: text(rouse_sd_bus_message_get_member(message)),
        arguments: arguments)
    let later = DBusDeferredReply(message: message, connection: connection)
    guard let reply = box.handler(call, later) else { return 1 }
    if let taken = later.take() { rouse_sd_bus_message_unref(taken) }
    return answer(message, with: reply)
}

extension DBusConnection {
    /// Answers method calls on the object `path` with `handler` (on the loop; it must not block), which either
    /// answers at once or returns nil and answers later through the ``DBusDeferredReply`` it was given.
    /// ``DBusMethodReply/notHandled`` at once leaves the call to sd-bus (`UnknownMethod`).
    package func export(
        path: String, deferring handler: @escaping @Sendable (DBusMethodCall, DBusDeferredReply) -> DBusMethodReply?
    ) async throws(DBusError) -> DBusRegistration {
        try await onLoop { () throws(DBusError) in
            let handle = try self.handle()
            let box = DeferredExportBox(handler: handler)
            box.connection = self
            var slot: OpaquePointer?
            let added = rouse_sd_bus_add_object(
                handle, &slot, path, deferredMethodCalled, Unmanaged.passUnretained(box).toOpaque())
            if added < 0 { throw DBusError.call("sd_bus_add_object", added) }
            return DBusRegistration(id: self.keep(Registration(slot: slot, box: box)), connection: self)
        }
    }

    /// On the loop: answers a deferred call (when the bus is still open), then frees its message.
    func answerDeferred(_ message: OpaquePointer, with reply: DBusMethodReply) {
        if (try? handle()) != nil {
            let failed = DBusMethodReply.error(name: "org.freedesktop.DBus.Error.Failed", message: "not handled")
            _ = answer(message, with: reply == .notHandled ? failed : reply)
            drive()
        }
        rouse_sd_bus_message_unref(message)
    }

    /// Sends a method call for which no reply is wanted (`NO_REPLY_EXPECTED`: a UnifiedPush version-1 connector's
    /// `Message`, `NewEndpoint`, `Unregistered`, annotated NoReply). The bus starts `destination` first when it is
    /// activatable. Fails only when the message could not be queued.
    package func send(
        destination: String, path: String, interface: String, member: String, arguments: [DBusValue] = []
    ) async throws(DBusError) {
        try await onLoop { () throws(DBusError) in
            let handle = try self.handle()
            var message: OpaquePointer?
            let made = rouse_sd_bus_message_new_method_call(handle, &message, destination, path, interface, member)
            guard made >= 0, let message else { throw DBusError.call("sd_bus_message_new_method_call", made) }
            defer { rouse_sd_bus_message_unref(message) }
            _ = rouse_sd_bus_message_set_expect_reply(message, 0)
            try DBusMessageCoding.append(arguments, to: message)
            let sent = rouse_sd_bus_send(handle, message, nil)
            if sent < 0 { throw DBusError.call("sd_bus_send", sent) }
            self.drive()
        }
    }
}
