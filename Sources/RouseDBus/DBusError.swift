import Glibc
import RouseSystem

/// Why a D-Bus operation failed: a call of sd-bus that returned a negative errno, an error reply from the peer
/// (its D-Bus error name and message, kept verbatim), a message we could not read as expected, a connection that
/// was closed before the answer came, or libsystemd (sd-bus) that could not be loaded.
package struct DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable {
        case call(String, errno: Int32)
        case reply(name: String, message: String)
        case unexpected(String)
        case closed
        case timedOut
        case libraryLoad(String)
    }

    let code: Code

    init(_ code: Code) { self.code = code }

    /// sd-bus's `call` returned `-errno`.
    static func call(_ call: String, _ result: Int32) -> DBusError { DBusError(.call(call, errno: -result)) }

    /// A message did not hold what its interface promises (a wrong signature, a missing property).
    static func unexpected(_ what: String) -> DBusError { DBusError(.unexpected(what)) }

    /// libsystemd could not be loaded (`dlopen`) or lacks a function Rouse calls; the loader's text.
    static func libraryLoad(_ why: String) -> DBusError { DBusError(.libraryLoad(why)) }

    /// The connection was closed with the operation still pending.
    package static let closed = DBusError(.closed)

    /// The peer's error name (`org.freedesktop.DBus.Error.ServiceUnknown` …), when this is an error reply.
    package var name: String? {
        if case .reply(let name, _) = code { return name }
        return nil
    }

    /// The errno of a failed sd-bus call, when this is one.
    package var errno: Int32? {
        if case .call(_, let errno) = code { return errno }
        return nil
    }

    package var description: String {
        switch code {
        case .call(let call, let errno): "\(call): \(Errno(rawValue: errno)) (errno \(errno))"
        case .reply(let name, let message): "\(name): \(message)"
        case .unexpected(let what): "unexpected D-Bus message: \(what)"
        case .closed: "the D-Bus connection was closed"
        case .timedOut: "no reply in time"
        case .libraryLoad(let why): "sd-bus is not available: \(why)"
        }
    }
}
