/// Why a push failed without an APNs answer, or why a sender could not be set up.
public struct SendError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Sendable, Hashable {
        case connect
        case transport
        case deadline
        case shutdown
        case goAway
        case tooManyResends
        case configuration
        case credentials
    }

    private let code: Code
    /// What exactly happened (peer, libcurl text, GOAWAY reason …).
    public let detail: String

    private init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// No connection to APNs could be made (DNS, TCP, TLS, proxy).
    public static func connect(_ detail: String) -> SendError { SendError(.connect, detail) }
    /// The connection or stream failed after the request was sent.
    public static func transport(_ detail: String) -> SendError { SendError(.transport, detail) }
    /// The push's deadline passed.
    public static func deadline(_ detail: String) -> SendError { SendError(.deadline, detail) }
    /// The sender was shut down first.
    public static let shutdown = SendError(.shutdown, "the sender was shut down")
    /// The server closed the connection with GOAWAY and a reason that retrying will not fix.
    public static func goAway(_ detail: String) -> SendError { SendError(.goAway, detail) }
    /// The push was refused unprocessed too many times in a row.
    public static func tooManyResends(_ detail: String) -> SendError { SendError(.tooManyResends, detail) }
    /// The sender's configuration is invalid.
    public static func configuration(_ detail: String) -> SendError { SendError(.configuration, detail) }
    /// A key or certificate could not be read or used.
    public static func credentials(_ detail: String) -> SendError { SendError(.credentials, detail) }

    /// A short machine-readable kind: `connect`, `transport`, `deadline`, `shutdown`, `goAway`,
    /// `tooManyResends`, `configuration`, `credentials`.
    public var kind: String { code.rawValue }

    /// Same kind (details may differ).
    public func isKind(_ other: SendError) -> Bool { code == other.code }

    /// Errors are equal when their kinds are (details are for people).
    public static func == (lhs: SendError, rhs: SendError) -> Bool { lhs.code == rhs.code }
    /// Hashes the kind.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// `kind: detail`.
    public var description: String { detail.isEmpty ? code.rawValue : "\(code.rawValue): \(detail)" }
}
