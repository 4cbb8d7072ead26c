/// A TLS setup or handshake failure, with OpenSSL's own message.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    /// What Rouse was doing.
    public let operation: String
    /// OpenSSL's error string (may be empty).
    public let detail: String

    public init(operation: String, detail: String) {
        self.operation = operation
        self.detail = detail
    }

    public var description: String { detail.isEmpty ? "TLS: \(operation)" : "TLS: \(operation): \(detail)" }
}
