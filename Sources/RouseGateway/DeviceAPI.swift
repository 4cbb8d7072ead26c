import FoundationEssentials
import RouseAPNs
import RouseWire

/// How a device request proved who sent it.
enum DeviceCredential: Sendable, Hashable {
    /// `authorization: Bearer <device id>.<secret hex>` from enrollment.
    case bearer(deviceID: String, secret: [UInt8])
    /// A verified client certificate whose subject CN is the device id.
    case certificate(deviceID: String)

    var deviceID: String {
        switch self {
        case .bearer(let id, _), .certificate(let id): id
        }
    }
}

/// A device-API answer: status and a JSON body.
struct DeviceReply: Error, Sendable {
    var status: Int
    var body: String

    /// 200 with `message`.
    static func ok(_ message: some DeviceAPIMessage) -> DeviceReply { DeviceReply(status: 200, body: message.json) }

    /// 201 with `message` (something was made).
    static func created(_ message: some DeviceAPIMessage) -> DeviceReply {
        DeviceReply(status: 201, body: message.json)
    }

    /// `{"error":"<code>","detail":"…"}` (``DeviceAPIFailure``).
    static func error(_ status: Int, _ code: String, _ detail: String) -> DeviceReply {
        DeviceReply(status: status, body: DeviceAPIFailure(error: code, detail: detail).json)
    }
}

/// Parsers for device-API bodies and headers: every malformed input gets a precise error, nothing traps.
enum DeviceAPI {
    /// Longest device id accepted (enrollment and certificates).
    static let maxDeviceIDLength = 128
    /// Longest topic accepted.
    static let maxTopicLength = 255
    /// Most handlers one `POST /device/v1/handlers` may report.
    static let maxHandlerReports = 64
    /// Highest strike count accepted in a handler report.
    static let maxReportedStrikes = 1000

    /// Reads `authorization: Bearer <device id>.<64 hex digits>`.
    static func bearer(_ authorization: String?) -> Result<DeviceCredential, DeviceReply> {
        guard let authorization, !authorization.isEmpty else {
            return .failure(
                .error(
                    401, "missingCredential",
                    "authorization: Bearer <device>.<secret> or a client certificate is required"))
        }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            return .failure(.error(401, "badCredential", "authorization scheme must be Bearer"))
        }
        let credential = parts[1]
        guard let dot = credential.lastIndex(of: ".") else {
            return .failure(.error(401, "badCredential", "credential must be <device>.<secret>"))
        }
        let deviceID = String(credential[..<dot])
        guard isValidDeviceID(deviceID) else { return .failure(.error(401, "badCredential", "malformed device id")) }
        guard let secret = hexBytes(credential[credential.index(after: dot)...]), secret.count == 32 else {
            return .failure(.error(401, "badCredential", "secret must be 64 hex digits"))
        }
        return .success(.bearer(deviceID: deviceID, secret: secret))
    }

    /// Device ids: 1 to 128 characters of `[A-Za-z0-9._:-]`.
    static func isValidDeviceID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= maxDeviceIDLength else { return false }
        for byte in id.utf8 {
            let ok =
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ":")
            if !ok { return false }
        }
        return true
    }

    /// Hex digits to bytes; `nil` for odd length or a non-hex digit.
    static func hexBytes(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x61...0x66: byte - 0x61 + 10
        case 0x41...0x46: byte - 0x41 + 10
        default: nil
        }
    }

    /// `n` random bytes from the system generator.
    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// Decodes a request body into its model, or a 400 naming the member that is wrong.
    static func decode<T: DeviceAPIMessage>(_ type: T.Type, _ body: [UInt8], truncated: Bool) -> Result<T, DeviceReply>
    {
        if truncated { return .failure(.error(413, "bodyTooLarge", "request body exceeds the limit")) }
        if body.isEmpty { return .failure(.error(400, "badJSON", "empty body: a JSON object is required")) }
        do {
            return .success(try T.decode(body))
        } catch {
            return .failure(.error(400, "badJSON", error.detail))
        }
    }

    /// Checks a handler report: at most ``maxHandlerReports`` handlers, valid distinct topics, strikes in
    /// 0...``maxReportedStrikes``.
    static func checkHandlers(_ body: DeviceHandlerReport) -> DeviceReply? {
        if body.handlers.count > maxHandlerReports {
            return .error(
                413, "tooManyHandlers",
                "$.handlers: \(body.handlers.count) handlers, at most \(maxHandlerReports) per request")
        }
        var seen: Set<String> = []
        for (index, handler) in body.handlers.enumerated() {
            if checkTopic(handler.topic) != nil {
                return .error(
                    400, "badTopic", "$.handlers[\(index)].topic: 1 to 255 printable ASCII characters without spaces")
            }
            guard seen.insert(handler.topic).inserted else {
                return .error(400, "badHandlers", "$.handlers[\(index)].topic: '\(handler.topic)' is reported twice")
            }
            guard (0...maxReportedStrikes).contains(handler.strikes) else {
                return .error(
                    400, "badHandlers",
                    "$.handlers[\(index)].strikes: \(handler.strikes) is not in 0...\(maxReportedStrikes)")
            }
        }
        return nil
    }

    /// Parses acknowledgement ids: decimal, positive, at most `limit` of them.
    static func ackIDs(_ body: DeviceAckRequest, limit: Int) -> Result<[Int64], DeviceReply> {
        if body.ids.isEmpty { return .failure(.error(400, "badAck", "$.ids: empty")) }
        if body.ids.count > limit {
            return .failure(.error(413, "tooManyIDs", "$.ids: \(body.ids.count) ids, at most \(limit) per request"))
        }
        var ids: [Int64] = []
        ids.reserveCapacity(body.ids.count)
        for (index, text) in body.ids.enumerated() {
            guard text.utf8.count <= 19, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let id = Int64(text),
                id > 0
            else { return .failure(.error(400, "badAck", "$.ids[\(index)]: '\(text)' is not a delivery id")) }
            ids.append(id)
        }
        return .success(ids)
    }

    /// A topic a token may be asked for: non-empty, printable ASCII without spaces, at most 255 bytes.
    static func checkTopic(_ topic: String) -> DeviceReply? {
        guard !topic.isEmpty, topic.utf8.count <= maxTopicLength,
            topic.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return .error(400, "badTopic", "$.topic: 1 to 255 printable ASCII characters without spaces") }
        return nil
    }
}

extension DeviceAPI {
    /// Whether `id` looks like a subscription id: 43 base64url characters (32 bytes).
    static func isSubscriptionID(_ id: String) -> Bool {
        id.utf8.count == 43 && Base64URL.decode(Array(id.utf8))?.count == 32
    }

    /// Checks a subscription request: app 1 to 255 and token 1 to 100 printable ASCII bytes without spaces, a VAPID
    /// key (if any) an uncompressed P-256 point in base64url.
    static func checkSubscription(_ request: WebPushSubscriptionRequest) -> DeviceReply? {
        func printable(_ text: String, _ limit: Int) -> Bool {
            !text.isEmpty && text.utf8.count <= limit && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
        }
        guard printable(request.app, maxTopicLength) else {
            return .error(400, "badApp", "$.app: 1 to 255 printable ASCII characters without spaces")
        }
        guard printable(request.token, 100) else {
            return .error(400, "badToken", "$.token: 1 to 100 printable ASCII characters without spaces")
        }
        if let vapid = request.vapid, !WebPushVAPID.isValidKey(vapid) {
            return .error(
                400, "badVAPIDKey", "$.vapid: an uncompressed P-256 public key in base64url (87 characters)")
        }
        return nil
    }
}
