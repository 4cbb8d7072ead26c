import FoundationEssentials
import RouseAPNs
import RouseClock
import RouseHTTP2
import RouseText
import RouseWire

/// One connection of the WebPush listener (HTTP/1.1 or HTTP/2; docs/webpush.md): `POST /wp/<id>` (RFC 8030
/// §5), `GET /wp/<id>` (UnifiedPush's discovery), and the Matrix push gateway at `/_matrix/push/v1/notify`.
/// Header checks run here, on the connection's loop; the subscription, VAPID, the rate and the store on the store
/// thread. Nothing an application server did wrong is answered with 5xx, and nothing transient with a 4xx other
/// than 429: Mastodon deletes a subscription on any other 4xx.
final class WebPushHandler: HTTP2ConnectionHandler {
    private let core: GatewayCore
    private let configuration: WebPushConfiguration
    private let clock: any RouseClock

    /// Time to live of Matrix notifications (the gateway API has none): a day.
    static let matrixTTLSeconds: Int64 = 86_400
    /// Request bodies buffered at most (larger ones are counted and answered 413).
    static let maxBufferedBody = 16 * 1024
    /// RFC 8030 §5.4: a topic is at most 32 characters of the URL-safe base64 alphabet.
    static let maxTopicLength = 32

    init(core: GatewayCore, configuration: WebPushConfiguration, clock: any RouseClock) {
        self.core = core
        self.configuration = configuration
        self.clock = clock
    }

    func connectionClosed() {}

    func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream) {
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
        switch (request.method, path) {
        case ("POST", _) where path.hasPrefix("/wp/"):
            push(request, id: String(path.dropFirst(4)), stream)
        case ("GET", _) where path.hasPrefix("/wp/"):
            // UnifiedPush servers' discovery answer (ntfy, NextPush).
            respond(
                WebPushReply(status: 200, headers: json, body: "{\"unifiedpush\":{\"version\":1}}", outcome: ""), stream
            )
        case ("GET", "/_matrix/push/v1/notify"):
            respond(
                WebPushReply(
                    status: 200, headers: json, body: "{\"unifiedpush\":{\"gateway\":\"matrix\"}}", outcome: ""),
                stream)
        case ("POST", "/_matrix/push/v1/notify"):
            matrix(request, stream)
        case (_, _) where path == "/_matrix/push/v1/notify" || path.hasPrefix("/wp/"):
            respond(
                .error(405, "", "\(request.method) is not allowed on \(path)", headers: [("allow", "GET, POST")]),
                stream)
        default:
            respond(.error(404, "", "no such resource"), stream)
        }
    }

    private let json = [("content-type", "application/json")]

    private func push(_ request: HTTP2Request, id: String, _ stream: HTTP2Stream) {
        switch Self.submission(request, id: id, now: clock.wallMilliseconds) {
        case .failure(let reply):
            core.metrics.pushIn(type: WebPushSubscriptionRecord.pushType, outcome: reply.outcome)
            respond(reply, stream)
        case .success(let submission):
            let metrics = core.metrics
            core.submitWebPush(submission) { reply in
                metrics.pushIn(type: WebPushSubscriptionRecord.pushType, outcome: reply.outcome)
                WebPushHandler.respond(reply, stream)
            }
        }
    }

    /// The request's headers and body as a submission, or the RFC 8030 error for them.
    static func submission(_ request: HTTP2Request, id: String, now: Int64) -> Result<WebPushSubmission, WebPushReply> {
        // An id that cannot exist is unknown (404), as one that does not.
        guard DeviceAPI.isSubscriptionID(id) else {
            return .failure(.error(404, "unknown-subscription", "no such push resource"))
        }
        if request.bodyTruncated || request.bodyLength > WebPushConfiguration.maxBodyBytes {
            return .failure(
                .error(413, "too-large", "the body exceeds \(WebPushConfiguration.maxBodyBytes) bytes (RFC 8030 §7.2)"))
        }
        // One value each: two Urgency fields are "several values" (RFC 8030 §5.3), and two TTL or Topic fields
        // leave the sender's intent unknown.
        for (name, shown) in [("ttl", "TTL"), ("urgency", "Urgency"), ("topic", "Topic")]
        where request.headers.lazy.filter({ $0.name == name }).count > 1 {
            return .failure(.error(400, "bad-request", "\(shown) is sent more than once (RFC 8030 §5)"))
        }
        guard let ttlText = request.header("ttl") else {
            return .failure(.error(400, "bad-request", "TTL is required (RFC 8030 §5.2)"))
        }
        guard !ttlText.isEmpty, ttlText.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            return .failure(.error(400, "bad-request", "TTL must be a number of seconds (RFC 8030 §5.2)"))
        }
        // delta-seconds too long for Int64 is a long time, not an error (capped below like any other).
        let ttl = Int64(ttlText) ?? Int64.max
        var urgency = WebPushUrgency.normal
        if let value = request.header("urgency") {
            guard let parsed = WebPushUrgency(header: value) else {
                return .failure(
                    .error(400, "bad-request", "Urgency must be very-low, low, normal or high (RFC 8030 §5.3)"))
            }
            urgency = parsed
        }
        let topic = request.header("topic")
        if let topic {
            guard !topic.isEmpty, topic.utf8.count <= maxTopicLength, topic.utf8.allSatisfy(isBase64URLByte) else {
                return .failure(
                    .error(400, "bad-request", "Topic must be 1 to 32 URL-safe base64 characters (RFC 8030 §5.4)"))
            }
        }
        if let encoding = request.header("content-encoding")?.lowercased(), encoding != "aes128gcm" {
            return .failure(
                .error(400, "bad-request", "Content-Encoding \(encoding) is not supported: send aes128gcm (RFC 8291)"))
        }
        guard !request.body.isEmpty else {
            return .failure(.error(400, "bad-request", "the body is empty: a push message has 1 to 4096 bytes"))
        }
        let authorization = request.header("authorization")
        return .success(
            WebPushSubmission(
                subscriptionID: id, ttl: ttl, urgency: urgency, topic: topic,
                vapid: authorization.flatMap(WebPushVAPID.init(authorization:)),
                authorizationSent: authorization != nil,
                body: request.body, receivedAt: now))
    }

    private static func isBase64URLByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    // MARK: Matrix push gateway

    /// `POST /_matrix/push/v1/notify` (Matrix push gateway API): the notification, without `devices`, is delivered
    /// as a plaintext JSON message to every pushkey that is this gateway's endpoint; the others are rejected. No
    /// request leaves the gateway.
    private func matrix(_ request: HTTP2Request, _ stream: HTTP2Stream) {
        if request.bodyTruncated {
            return respond(.error(413, "too-large", "the notification is too large"), stream)
        }
        guard let root = try? JSONValue.parse(request.body), var notification = root["notification"]?.object,
            let devices = notification["devices"]?.array, devices.allSatisfy({ $0.object != nil })
        else {
            return respond(
                .error(400, "bad-request", "expected {\"notification\":{\"devices\":[{\"pushkey\":…}],…}}"), stream)
        }
        let prefix = configuration.normalizedOrigin + "/wp/"
        var pushkeys: [(pushkey: String, id: String?)] = []
        for device in devices.prefix(64) {
            guard let pushkey = device["pushkey"]?.string else { continue }
            let id = pushkey.hasPrefix(prefix) ? String(pushkey.dropFirst(prefix.count)) : nil
            pushkeys.append((pushkey, id.flatMap { DeviceAPI.isSubscriptionID($0) ? $0 : nil }))
        }
        let urgency: WebPushUrgency = notification["prio"]?.string == "low" ? .normal : .high
        notification["devices"] = nil
        let body = Array(JSONValue.object(["notification": .object(notification)]).text.utf8)
        guard body.count <= WebPushConfiguration.maxBodyBytes else {
            return respond(.error(413, "too-large", "the notification exceeds 4096 bytes as a message"), stream)
        }
        let metrics = core.metrics
        core.submitMatrix(body, pushkeys: pushkeys, urgency: urgency, receivedAt: clock.wallMilliseconds) {
            reply in
            metrics.pushIn(type: WebPushSubscriptionRecord.pushType, outcome: reply.outcome)
            WebPushHandler.respond(reply, stream)
        }
    }

    private func respond(_ reply: WebPushReply, _ stream: HTTP2Stream) { Self.respond(reply, stream) }

    static func respond(_ reply: WebPushReply, _ stream: HTTP2Stream) {
        var headers = reply.headers.map { HTTP2Header($0.0, $0.1) }
        if !reply.body.isEmpty, !reply.headers.contains(where: { $0.0 == "content-type" }) {
            headers.append(HTTP2Header("content-type", "text/plain; charset=utf-8"))
        }
        stream.respond(status: reply.status, headers: headers, body: Array(reply.body.utf8))
    }
}
