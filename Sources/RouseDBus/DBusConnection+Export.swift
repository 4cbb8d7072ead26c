import CRouseSystemd
import CSystemd

/// A method call received by an exported object.
package struct DBusMethodCall: Sendable, Equatable {
    /// The caller's unique name.
    package var sender: String
    /// The object called.
    package var path: String
    /// The interface named by the caller (may be empty: D-Bus lets a caller omit it).
    package var interface: String
    /// The method.
    package var member: String
    /// Its arguments.
    package var arguments: [DBusValue]

    /// A call (what the bus delivers; tests make their own).
    package init(sender: String, path: String, interface: String, member: String, arguments: [DBusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// What an exported object answers.
package enum DBusMethodReply: Sendable, Equatable {
    /// A method return with these values.
    case values([DBusValue])
    /// An error reply (`org.freedesktop.DBus.Error.InvalidArgs`, or the service's own name).
    case error(name: String, message: String)
    /// Not this object's: sd-bus answers `UnknownMethod` (or another handler of the path does).
    case notHandled
}

/// The `userdata` of an exported object.
final class ExportBox {
    let handler: @Sendable (DBusMethodCall) -> DBusMethodReply
    init(handler: @escaping @Sendable (DBusMethodCall) -> DBusMethodReply) { self.handler = handler }
}

let methodCalled: sd_bus_message_handler_t = { message, userdata, _ in
    guard let message, let userdata else { return 0 }
    let box = Unmanaged<ExportBox>.fromOpaque(userdata).takeUnretainedValue()
    var type: UInt8 = 0
    guard rouse_sd_bus_message_get_type(message, &type) >= 0, type == 1 else { return 0 }  // SD_BUS_MESSAGE_METHOD_CALL
    func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
    let reply: DBusMethodReply
    do throws(DBusError) {
        let arguments = try DBusMessageCoding.readAll(message)
        reply = box.handler(
            DBusMethodCall(
                sender: text(rouse_sd_bus_message_get_sender(message)),
                path: text(rouse_sd_bus_message_get_path(message)),
                interface: text(rouse_sd_bus_message_get_interface(message)),
                member: text(rouse_sd_bus_message_get_member(message)),
                arguments: arguments))
    } catch {
        reply = .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "\(error)")
    }
    return answer(message, with: reply)
}

/// Sends `reply` to the method call `message` (nothing when the caller asked for no reply); the handler's return
/// value for sd-bus: 0 for ``DBusMethodReply/notHandled``, else 1.
func answer(_ message: OpaquePointer, with reply: DBusMethodReply) -> Int32 {
    if case .notHandled = reply { return 0 }
    // `NO_REPLY_EXPECTED` (a NoReply method such as `Distributor1.Unregister`): sd-bus refuses to make a reply.
    if rouse_sd_bus_message_get_expect_reply(message) == 0 { return 1 }
    switch reply {
    case .notHandled:
        return 0
    case .error(let name, let text):
        var error = sd_bus_error()
        _ = rouse_sd_bus_error_set(&error, name, text)
        defer { rouse_sd_bus_error_free(&error) }
        _ = rouse_sd_bus_reply_method_error(message, &error)
        return 1
    case .values(let values):
        var answer: OpaquePointer?
        guard rouse_sd_bus_message_new_method_return(message, &answer) >= 0, let answer else { return -12 }  // ENOMEM
        defer { rouse_sd_bus_message_unref(answer) }
        do throws(DBusError) {
            try DBusMessageCoding.append(values, to: answer)
        } catch {
            var failure = sd_bus_error()
            _ = rouse_sd_bus_error_set(&failure, "org.freedesktop.DBus.Error.Failed", "\(error)")
            defer { rouse_sd_bus_error_free(&failure) }
            _ = rouse_sd_bus_reply_method_error(message, &failure)
            return 1
        }
        _ = rouse_sd_bus_send(nil, answer, nil)
        return 1
    }
}

extension DBusConnection {
    /// Answers method calls on the object `path` with `handler` (on the loop; it must not block): the small export
    /// facility a D-Bus service (the UnifiedPush distributor) is built on. The handler answers every interface of
    /// the path it knows, `org.freedesktop.DBus.Introspectable.Introspect` included (with its XML as `.string`), and
    /// says ``DBusMethodReply/notHandled`` for the rest.
    package func export(path: String, _ handler: @escaping @Sendable (DBusMethodCall) -> DBusMethodReply)
        async throws(DBusError) -> DBusRegistration
    {
        try await onLoop { () throws(DBusError) in
            let handle = try self.handle()
            let box = ExportBox(handler: handler)
            var slot: OpaquePointer?
            let added = rouse_sd_bus_add_object(
                handle, &slot, path, methodCalled, Unmanaged.passUnretained(box).toOpaque())
            if added < 0 { throw DBusError.call("sd_bus_add_object", added) }
            return DBusRegistration(id: self.keep(Registration(slot: slot, box: box)), connection: self)
        }
    }
}
