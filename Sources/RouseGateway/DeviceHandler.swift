import Logging
import RouseAPNs
import RouseHTTP2
import RouseWire
import Synchronization

/// One device connection: enrollment, tokens, the long-lived channel and acknowledgements
/// (`/device/v1/…`, see docs/gateway.md). Loop-confined; answers come from the store thread.
final class DeviceHandler: HTTP2ConnectionHandler {
    static let prefix = "/device/v1/"

    private let core: GatewayCore
    private let connection: HTTP2Connection
    /// The device id a verified client certificate names (its subject CN), if any.
    private let certificateDeviceID: String?
    /// Whether a client certificate was presented but did not verify.
    private let certificateProblem: String?
    /// Requests of this connection waiting on the store thread (bounded: a flooding device gets 429).
    private let inProgress = InProgressCounter()
    /// Channels of this connection, opened or waiting for their credential check: stream id → (device, channel id,
    /// ticket).
    private var channels: [Int32: (deviceID: String, channelID: UInt64, ticket: ChannelTicket)] = [:]

    init(core: GatewayCore, connection: HTTP2Connection, peer: PeerCertificate?) {
        self.core = core
        self.connection = connection
        if let peer {
            if peer.verification == .ok, let cn = peer.subjectCommonName, DeviceAPI.isValidDeviceID(cn) {
                certificateDeviceID = cn
                certificateProblem = nil
            } else {
                certificateDeviceID = nil
                certificateProblem =
                    peer.verification == .ok ? "certificate CN is not a valid device id" : "\(peer.verification)"
            }
        } else {
            certificateDeviceID = nil
            certificateProblem = nil
        }
    }

    func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream) {
        guard request.path.hasPrefix(Self.prefix) else {
            return Self.send(.error(404, "notFound", "unknown path \(request.path)"), on: stream)
        }
        let route = request.path.dropFirst(Self.prefix.count)
        switch (request.method, route) {
        case ("POST", "enroll"): enroll(request, stream)
        case ("GET", "channel"), ("POST", "channel"): openChannel(request, stream)
        case ("POST", "ack"): acknowledge(request, stream)
        case ("POST", "tokens"): createToken(request, stream)
        case ("POST", "handlers"): reportHandlers(request, stream)
        case ("POST", "webpush"): createWebPushSubscription(request, stream)
        case ("GET", "webpush"):
            authenticated(request, stream) { context, device in try context.listWebPushSubscriptions(device: device) }
        case ("DELETE", _) where route.hasPrefix("webpush/"):
            let id = String(route.dropFirst("webpush/".count))
            guard DeviceAPI.isSubscriptionID(id) else {
                return Self.send(
                    .error(400, "badSubscription", "a subscription id is 43 base64url characters"), on: stream)
            }
            authenticated(request, stream) { context, device in
                try context.dropWebPushSubscription(device: device, id: id)
            }
        case ("POST", "urgency"): setUrgency(request, stream)
        case ("GET", "tokens"):
            authenticated(request, stream) { context, device in try context.listTokens(device: device) }
        case ("DELETE", _) where route.hasPrefix("tokens/"):
            let token = route.dropFirst("tokens/".count).lowercased()
            guard APNsRules.checkDeviceToken(token) == nil else {
                return Self.send(.error(400, "badToken", "a token is hex digits"), on: stream)
            }
            authenticated(request, stream) { context, device in try context.dropToken(device: device, token: token) }
        case (_, "enroll"), (_, "channel"), (_, "ack"), (_, "tokens"), (_, "handlers"), (_, "webpush"), (_, "urgency"):
            Self.send(
                .error(405, "methodNotAllowed", "\(request.method) is not allowed on \(request.path)"), on: stream)
        default:
            Self.send(.error(404, "notFound", "unknown path \(request.path)"), on: stream)
        }
    }

    func streamClosed(_ streamID: Int32) {
        guard let channel = channels.removeValue(forKey: streamID) else { return }
        closeChannel(channel)
    }

    func connectionClosed() {
        let open = channels.values
        channels.removeAll()
        for channel in open { closeChannel(channel) }
    }

    // MARK: Routes

    private func enroll(_ request: HTTP2Request, _ stream: HTTP2Stream) {
        if request.header("authorization") == nil, request.bodyLength == 0 {
            guard let deviceID = certificateDeviceID else {
                let detail =
                    certificateProblem.map { "client certificate rejected: \($0)" }
                    ?? "send {\"secret\":…} or present a device certificate"
                return Self.send(.error(401, "missingCredential", detail), on: stream)
            }
            return dispatch(stream) { context in try context.enroll(certificateDeviceID: deviceID) }
        }
        switch DeviceAPI.decode(DeviceEnrollRequest.self, request.body, truncated: request.bodyTruncated) {
        case .failure(let reply): Self.send(reply, on: stream)
        case .success(let body):
            guard let secret = DeviceAPI.hexBytes(body.secret), (16...64).contains(secret.count) else {
                return Self.send(.error(400, "badEnrollmentSecret", "$.secret: 32 to 128 hex digits"), on: stream)
            }
            dispatch(stream) { context in try context.enroll(secret: secret) }
        }
    }

    private func openChannel(_ request: HTTP2Request, _ stream: HTTP2Stream) {
        let credential: DeviceCredential
        switch credentialOf(request) {
        case .failure(let reply): return Self.send(reply, on: stream)
        case .success(let value): credential = value
        }
        let webPush = ChannelFeatures.lists(request.header(ChannelFeatures.header), ChannelFeatures.webPush)
        var declared = WebPushUrgency.veryLow
        if let value = request.header(ChannelFeatures.urgencyHeader) {
            guard let urgency = WebPushUrgency(header: value) else {
                return Self.send(
                    .error(400, "badUrgency", "urgency: one of very-low, low, normal, high (RFC 8030 §5.3)"), on: stream
                )
            }
            declared = urgency
        }
        let minimumUrgency = declared
        let channelID = core.makeChannelID()
        let ticket = ChannelTicket()
        channels[stream.id] = (credential.deviceID, channelID, ticket)
        core.submitDevice(credential, reply: { reply in Self.send(reply, on: stream) }) { context, device in
            // The stream ended while the open waited: nothing to open, nothing to close later.
            guard ticket.open() else { return nil }
            stream.connection.markAuthenticated()
            try context.openChannel(
                device: device, channelID: channelID, stream: stream, webPush: webPush,
                minimumUrgency: minimumUrgency.rank)
            return nil
        }
    }

    private func acknowledge(_ request: HTTP2Request, _ stream: HTTP2Stream) {
        switch DeviceAPI.decode(DeviceAckRequest.self, request.body, truncated: request.bodyTruncated)
            .flatMap({ DeviceAPI.ackIDs($0, limit: core.limits.maxAckIDs) })
        {
        case .failure(let reply): Self.send(reply, on: stream)
        case .success(let ids):
            authenticated(request, stream) { context, device in try context.acknowledge(device: device, ids: ids) }
        }
    }

    private func createToken(_ request: HTTP2Request, _ stream: HTTP2Stream) {
        switch DeviceAPI.decode(DeviceTokenRequest.self, request.body, truncated: request.bodyTruncated) {
        case .failure(let reply): Self.send(reply, on: stream)
        case .success(let body):
            if let reply = DeviceAPI.checkTopic(body.topic) { return Self.send(reply, on: stream) }
            authenticated(request, stream) { context, device in
                try context.createToken(device: device, topic: body.topic)
            }
        }
    }

    private func reportHandlers(_ request: HTTP2Request, _ stream: HTTP2Stream) {
        switch DeviceAPI.decode(DeviceHandlerReport.self, request.body, truncated: request.bodyTruncated) {
        case .failure(let reply): Self.send(reply, on: stream)
        case .success(let body):
            if let reply = DeviceAPI.checkHandlers(body) { return Self.send(reply, on: stream) }
            authenticated(request, stream) { context, device in
                try context.reportHandlers(device: device, body.handlers)
            }
        }
    }

    private func createWebPushSubscription(_ request: HTTP2Request, _ stream: HTTP2Stream) {
        switch DeviceAPI.decode(WebPushSubscriptionRequest.self, request.body, truncated: request.bodyTruncated) {
        case .failure(let reply): Self.send(reply, on: stream)
        case .success(let body):
            if let reply = DeviceAPI.checkSubscription(body) { return Self.send(reply, on: stream) }
            authenticated(request, stream) { context, device in
                try context.createWebPushSubscription(device: device, body)
            }
        }
    }

    private func setUrgency(_ request: HTTP2Request, _ stream: HTTP2Stream) {
        switch DeviceAPI.decode(WebPushUrgencyRequest.self, request.body, truncated: request.bodyTruncated) {
        case .failure(let reply): Self.send(reply, on: stream)
        case .success(let body):
            authenticated(request, stream) { context, device in
                try context.setMinimumUrgency(device: device, body.urgency)
            }
        }
    }

    // MARK: Plumbing

    private func credentialOf(_ request: HTTP2Request) -> Result<DeviceCredential, DeviceReply> {
        if let authorization = request.header("authorization") { return DeviceAPI.bearer(authorization) }
        if let deviceID = certificateDeviceID { return .success(.certificate(deviceID: deviceID)) }
        if let certificateProblem {
            return .failure(.error(401, "badCertificate", "client certificate rejected: \(certificateProblem)"))
        }
        return DeviceAPI.bearer(nil)
    }

    private func authenticated(
        _ request: HTTP2Request, _ stream: HTTP2Stream,
        _ body: @escaping @Sendable (inout CoreContext, DeviceRecord) throws -> DeviceReply
    ) {
        switch credentialOf(request) {
        case .failure(let reply): Self.send(reply, on: stream)
        case .success(let credential):
            guard begin(stream) else { return }
            let inProgress = self.inProgress
            core.submitDevice(
                credential,
                reply: { reply in
                    inProgress.value.subtract(1, ordering: .relaxed)
                    Self.send(reply, on: stream)
                }
            ) { context, device in
                // The credential is valid: the authentication deadline no longer applies.
                stream.connection.markAuthenticated()
                return try body(&context, device)
            }
        }
    }

    private func dispatch(_ stream: HTTP2Stream, _ body: @escaping @Sendable (inout CoreContext) throws -> DeviceReply)
    {
        guard begin(stream) else { return }
        let inProgress = self.inProgress
        core.submitRaw(
            reply: { reply in
                inProgress.value.subtract(1, ordering: .relaxed)
                Self.send(reply, on: stream)
            }, body)
    }

    /// Counts a request in; answers 429 when the connection already has too many waiting.
    private func begin(_ stream: HTTP2Stream) -> Bool {
        let limit = core.limits.maxDeviceRequestsInProgress
        if inProgress.value.add(1, ordering: .relaxed).newValue > limit {
            inProgress.value.subtract(1, ordering: .relaxed)
            Self.send(
                .error(429, "tooManyRequests", "at most \(limit) requests in progress per connection"), on: stream)
            return false
        }
        return true
    }

    private func closeChannel(_ channel: (deviceID: String, channelID: UInt64, ticket: ChannelTicket)) {
        // Only a channel that was opened queues a close (outside the device lane's budget, which it must not be
        // refused by): a bogus open (a bad credential, or refused for the budget) ends without one. Before, every
        // channel request, with any credential, added an unbudgeted job to the device lane.
        guard channel.ticket.abandon() else { return }
        core.metrics.channelCloseQueued()
        let job = GatewayCore.Job(
            run: { context in try context.closeChannel(deviceID: channel.deviceID, channelID: channel.channelID) },
            fail: { _ in })
        core.submitControl(job)
    }

    static func send(_ reply: DeviceReply, on stream: HTTP2Stream) {
        stream.respond(
            status: reply.status, headers: [HTTP2Header("content-type", "application/json")],
            body: Array(reply.body.utf8))
    }
}

/// The count of a connection's requests waiting on the store thread, shared with their reply closures.
final class InProgressCounter: Sendable {
    let value = Atomic<Int>(0)
}

/// Whether a channel request was opened (by its job on the store thread) or abandoned (its stream ended first):
/// exactly one of the two wins.
final class ChannelTicket: Sendable {
    private let state = Atomic<UInt8>(0)  // 0 waiting, 1 opened, 2 abandoned

    /// On the store thread, before opening (again, when a spoiled batch runs the job alone): false when the stream
    /// already ended.
    func open() -> Bool {
        let (exchanged, original) = state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing)
        return exchanged || original == 1
    }

    /// On the connection's loop, when the stream ends: true when the channel was opened (a close must be queued).
    func abandon() -> Bool {
        !state.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged
    }
}
