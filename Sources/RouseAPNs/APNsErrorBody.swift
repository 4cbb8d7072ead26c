/// The JSON body of an APNs error response, or the debug data of an APNs GOAWAY:
/// `{"reason": "...", "timestamp": <ms>}` ("timestamp" only with 410).
public struct APNsErrorBody: Sendable, Hashable {
    /// The reason, kept verbatim even when unknown.
    public var reason: APNsReason
    /// For 410: "the last time at which APNs confirmed that the device token was no longer valid for the
    /// topic", UNIX milliseconds.
    public var timestamp: Int64?

    /// A body.
    public init(reason: APNsReason, timestamp: Int64? = nil) {
        self.reason = reason
        self.timestamp = timestamp
    }

    /// Bodies longer than this are not parsed (APNs bodies are tens of bytes).
    public static let maxLength = 4096

    /// Parses a response body or GOAWAY debug data; `nil` when it is not a JSON object with a string
    /// `reason` (GOAWAY debug data may be plain text, e.g. "Maximum active streams violated…").
    public static func parse(_ bytes: [UInt8]) -> APNsErrorBody? {
        guard bytes.count <= maxLength, let object = FlatJSONObject.parse(bytes),
            let reason = object.string("reason")
        else { return nil }
        return APNsErrorBody(reason: APNsReason(rawValue: reason), timestamp: object.integer("timestamp"))
    }

    /// The body as APNs writes it.
    public var bytes: [UInt8] { JSONText.errorBody(reason: reason, timestamp: timestamp) }
}
