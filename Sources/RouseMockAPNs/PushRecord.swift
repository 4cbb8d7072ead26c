import RouseAPNs

/// One request the mock saw, as tests and the admin endpoint read it.
public struct PushRecord: Sendable {
    /// What became of the request.
    public enum Outcome: Sendable, Hashable {
        /// 200.
        case accepted
        /// An error response with this reason.
        case rejected(APNsReason)
        /// Not processed because of a fault (`refusedStream`, `goAway`, `tcpReset`, `blackhole`): the client
        /// may safely retry it.
        case unprocessed(String)
    }

    /// Position in the mock's record sequence (1-based, never reused, survives `clearRecords`).
    public var sequence: Int
    /// When the request was handled.
    public var time: APNsTime
    /// The kernel's connection id.
    public var connectionID: UInt64
    /// The HTTP/2 stream id.
    public var streamID: Int32
    /// `:method`.
    public var method: String
    /// `:path`.
    public var path: String
    /// The device token from the path, if the path had one.
    public var deviceToken: String?
    /// The request headers in wire order.
    public var headers: [(name: String, value: String)]
    /// The request body.
    public var payload: [UInt8]
    /// The answered status (nil when unprocessed).
    public var status: Int?
    /// Accepted, rejected (with reason) or unprocessed.
    public var outcome: Outcome
    /// The `apns-id` sent back (echoed or generated).
    public var apnsID: String?
    /// The `apns-unique-id` sent back (sandbox only).
    public var apnsUniqueID: String?

    /// The reason, for rejected requests.
    public var reason: APNsReason? {
        if case .rejected(let reason) = outcome { return reason }
        return nil
    }

    /// `headers` with the provider token's signature removed: the records are served on the admin endpoint (no
    /// authentication) and printed by `--json`, and a signed JWT is a credential for an hour on real APNs. The
    /// header and claims stay (`bearer <header>.<claims>.<redacted>`) so tests still see the key id, team and `iat`;
    /// an `authorization` value of any other form becomes `<redacted>`.
    public static func redacted(_ headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
        var cache: RedactionCache?
        return redacted(headers, cache: &cache)
    }

    /// The last `authorization` value a connection sent and its redacted form: a provider sends the same token for
    /// up to an hour, so its redaction (two splits and a new string, per request) is made once per token.
    struct RedactionCache: Sendable {
        var value: String
        var redacted: String
    }

    /// `redacted(_:)`, reusing `cache` when the `authorization` value is the one redacted last (and updating it).
    static func redacted(_ headers: [(name: String, value: String)], cache: inout RedactionCache?)
        -> [(name: String, value: String)]
    {
        // Nothing to redact (no authorization header): the same array, shared, not a copy.
        guard let index = headers.firstIndex(where: { isAuthorization($0.name) }) else { return headers }
        var result = headers
        for i in index..<headers.count where isAuthorization(headers[i].name) {
            let value = headers[i].value
            if let cached = cache, cached.value == value {
                result[i].value = cached.redacted
            } else {
                let redacted = redactedAuthorization(value)
                cache = RedactionCache(value: value, redacted: redacted)
                result[i].value = redacted
            }
        }
        return result
    }

    /// Whether a header name is `authorization`, in any case (HTTP/2 names are lowercase; a `MockRequest` made by
    /// hand may not be), without making a lowercased copy of every name.
    private static func isAuthorization(_ name: String) -> Bool {
        name.utf8.count == 13 && (name == "authorization" || name.lowercased() == "authorization")
    }

    /// `bearer <header>.<claims>.<redacted>`, or `<redacted>` for any other form.
    private static func redactedAuthorization(_ value: String) -> String {
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return "<redacted>" }
        let segments = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else { return "<redacted>" }
        return "\(parts[0]) \(segments[0]).\(segments[1]).<redacted>"
    }

    /// The value of a request header (first occurrence).
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// One JSON object on one line (for `--json` and the admin endpoint). The payload is embedded as a
    /// string (invalid UTF-8 repaired).
    public func jsonLine() -> String {
        var text = "{\"seq\":\(sequence),\"time\":\(time.milliseconds),\"conn\":\(connectionID),\"stream\":\(streamID)"
        text += ",\"method\":" + JSONText.quoted(method) + ",\"path\":" + JSONText.quoted(path)
        if let deviceToken { text += ",\"token\":" + JSONText.quoted(deviceToken) }
        switch outcome {
        case .accepted: text += ",\"outcome\":\"accepted\""
        case .rejected(let reason): text += ",\"outcome\":\"rejected\",\"reason\":" + JSONText.quoted(reason.rawValue)
        case .unprocessed(let fault): text += ",\"outcome\":\"unprocessed\",\"fault\":" + JSONText.quoted(fault)
        }
        if let status { text += ",\"status\":\(status)" }
        if let apnsID { text += ",\"apnsID\":" + JSONText.quoted(apnsID) }
        if let apnsUniqueID { text += ",\"apnsUniqueID\":" + JSONText.quoted(apnsUniqueID) }
        text += ",\"headers\":["
        for (index, field) in headers.enumerated() {
            if index > 0 { text += "," }
            text += "[" + JSONText.quoted(field.name) + "," + JSONText.quoted(field.value) + "]"
        }
        text += "],\"payload\":" + JSONText.quoted(String(decoding: payload, as: UTF8.self)) + "}"
        return text
    }
}
