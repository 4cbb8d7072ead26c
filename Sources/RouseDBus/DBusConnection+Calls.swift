import CRouseSystemd
import CSystemd
import RouseEventLoop

/// A method call waiting for its reply; the `userdata` sd-bus hands back to ``callReplied``.
final class PendingCall {
    private var completion: ((Result<[DBusValue], DBusError>) -> Void)?
    weak var connection: DBusConnection?

    init(connection: DBusConnection, _ completion: @escaping (Result<[DBusValue], DBusError>) -> Void) {
        self.connection = connection
        self.completion = completion
    }

    /// Resumes the waiter, once.
    func complete(_ result: Result<[DBusValue], DBusError>) {
        let completion = self.completion
        self.completion = nil
        completion?(result)
    }

    /// A reply's values, or its error (`org.freedesktop.DBus.Error.*`: no reply, unknown service …).
    static func result(of message: OpaquePointer?) -> Result<[DBusValue], DBusError> {
        guard let message else { return .failure(.unexpected("a reply without a message")) }
        if rouse_sd_bus_message_is_method_error(message, nil) > 0 {
            let error = rouse_sd_bus_message_get_error(message)
            let name = error?.pointee.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed"
            let text = error?.pointee.message.map { String(cString: $0) } ?? ""
            return .failure(DBusError(.reply(name: name, message: text)))
        }
        do throws(DBusError) {
            return .success(try DBusMessageCoding.readAll(message))
        } catch {
            return .failure(error)
        }
    }
}

/// sd-bus's callback for a method reply (or the error reply it makes itself on a timeout).
let callReplied: sd_bus_message_handler_t = { message, userdata, _ in
    guard let userdata else { return 0 }
    let call = Unmanaged<PendingCall>.fromOpaque(userdata).takeUnretainedValue()
    call.connection?.finished(call)
    call.complete(PendingCall.result(of: message))
    return 1
}

extension DBusConnection {
    /// Calls `member` of `interface` on the object `path` of `destination` and returns the reply's values. The bus
    /// starts `destination` first when it is activatable and not running (`autoStart`, D-Bus activation). Fails with
    /// the peer's error (``DBusError/name``), or with `org.freedesktop.DBus.Error.NoReply` after `timeout`.
    package func call(
        destination: String, path: String, interface: String, member: String, arguments: [DBusValue] = [],
        timeout: Duration = .seconds(25), autoStart: Bool = true
    ) async throws(DBusError) -> [DBusValue] {
        let result: Result<[DBusValue], DBusError> = await withCheckedContinuation { continuation in
            let start: @Sendable () -> Void = { [self] in
                let pending = PendingCall(connection: self) { continuation.resume(returning: $0) }
                do throws(DBusError) {
                    let handle = try handle()
                    var message: OpaquePointer?
                    let made = rouse_sd_bus_message_new_method_call(
                        handle, &message, destination, path, interface, member)
                    guard made >= 0, let message else { throw DBusError.call("sd_bus_message_new_method_call", made) }
                    defer { rouse_sd_bus_message_unref(message) }
                    _ = rouse_sd_bus_message_set_auto_start(message, autoStart ? 1 : 0)
                    try DBusMessageCoding.append(arguments, to: message)
                    let microseconds = UInt64(max(1, timeout.wholeMicroseconds))
                    let sent = rouse_sd_bus_call_async(
                        handle, nil, message, callReplied, Unmanaged.passUnretained(pending).toOpaque(), microseconds)
                    if sent < 0 { throw DBusError.call("sd_bus_call_async", sent) }
                    track(pending)
                    drive()
                } catch {
                    pending.complete(.failure(error))
                }
            }
            if loop.inLoop { start() } else { loop.execute(start) }
        }
        return try result.get()
    }

    /// The value of `property` of `interface` on `path` of `destination` (`org.freedesktop.DBus.Properties.Get`).
    package func property(destination: String, path: String, interface: String, _ property: String)
        async throws(DBusError) -> DBusValue
    {
        let values = try await call(
            destination: destination, path: path, interface: "org.freedesktop.DBus.Properties", member: "Get",
            arguments: [.string(interface), .string(property)])
        guard let value = values.first else { throw DBusError.unexpected("Properties.Get returned nothing") }
        return value.unwrapped
    }

    /// Every property of `interface` on `path` of `destination` (`org.freedesktop.DBus.Properties.GetAll`).
    package func properties(destination: String, path: String, interface: String) async throws(DBusError)
        -> [String: DBusValue]
    {
        let values = try await call(
            destination: destination, path: path, interface: "org.freedesktop.DBus.Properties", member: "GetAll",
            arguments: [.string(interface)])
        guard let dictionary = values.first?.stringKeyed else {
            throw DBusError.unexpected("Properties.GetAll returned \(values.map(\.signature))")
        }
        return dictionary
    }

    /// Asks the bus for the well-known `name` (`RequestName`); true when this connection is its primary owner
    /// afterwards, false when it was queued or the name is taken.
    package func requestName(_ name: String, replaceExisting: Bool = false, queue: Bool = false)
        async throws(DBusError) -> Bool
    {
        var flags: UInt32 = 0
        if replaceExisting { flags |= 2 }  // DBUS_NAME_FLAG_REPLACE_EXISTING
        if !queue { flags |= 4 }  // DBUS_NAME_FLAG_DO_NOT_QUEUE
        let reply = try await call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
            member: "RequestName", arguments: [.string(name), .uint32(flags)])
        // 1: primary owner; 4: already the owner.
        return reply.first?.uint32 == 1 || reply.first?.uint32 == 4
    }

    /// The unique name owning `name`, nil when nobody does.
    package func nameOwner(_ name: String) async throws(DBusError) -> String? {
        do throws(DBusError) {
            let reply = try await call(
                destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                member: "GetNameOwner", arguments: [.string(name)], autoStart: false)
            return reply.first?.string
        } catch  where error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
            return nil
        }
    }
}

extension Duration {
    /// Whole microseconds, 0 when not positive.
    var wholeMicroseconds: Int64 {
        let (seconds, attoseconds) = components
        let total = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        return max(0, total)
    }
}
