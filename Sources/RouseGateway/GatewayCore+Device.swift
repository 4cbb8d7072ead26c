import Crypto
import RouseAPNs
import RouseHTTP2
import RouseText
import RouseWire

extension GatewayCore {
    /// Queues an authenticated device request: `body` runs on the store thread with the device's record and
    /// returns the reply (or `nil` when it answers by itself, as the channel does). `reply` gets 503 when the
    /// queue is full or the database unreachable, and 500 when the store fails.
    func submitDevice(
        _ credential: DeviceCredential,
        reply: @escaping @Sendable (DeviceReply) -> Void,
        _ body: @escaping @Sendable (inout CoreContext, DeviceRecord) throws -> DeviceReply?
    ) {
        submitRaw(reply: reply) { context in
            switch try context.authenticate(credential) {
            case .failure(let failure): return failure
            case .success(let device): return try body(&context, device)
            }
        }
    }

    /// Queues an unauthenticated device request (enrollment).
    func submitRaw(
        reply: @escaping @Sendable (DeviceReply) -> Void,
        _ body: @escaping @Sendable (inout CoreContext) throws -> DeviceReply?
    ) {
        let job = Job(
            run: { context in
                if let answer = try body(&context) { context.effects.append { reply(answer) } }
            },
            fail: { error in
                if error.isUnavailable {
                    reply(.error(503, "storeUnavailable", "the gateway's database is unreachable; retry later"))
                } else {
                    reply(.error(500, "storage", "the gateway could not store the request"))
                }
            },
            isDeviceRequest: true)
        if !submit(job) { reply(.error(503, "overloaded", "the gateway is overloaded or stopping; retry later")) }
    }
}

extension CoreContext {
    /// Checks a credential against the store.
    ///
    /// Nothing about a device is told before its credential is proven. A bearer credential with an unknown
    /// device id, a wrong secret, or a secret for a certificate device all get the same 401 `badCredential`
    /// after the same work: the secret is hashed and compared in constant time against a dummy digest when the
    /// id has none, so the answer's timing does not tell either. Only a device that proved its credential learns
    /// that it is revoked (403 `deviceRevoked`, which its agent takes as final). A certificate is proven by the
    /// TLS handshake against the device CA, so its holder may learn that its CN is not enrolled yet.
    func authenticate(_ credential: DeviceCredential) throws -> Result<DeviceRecord, DeviceReply> {
        let device = try transaction.device(credential.deviceID)
        switch credential {
        case .bearer(_, let secret):
            let expected = device?.authentication == .secret ? device?.credentialHash : nil
            let matches = DeviceSecrets.matches(secret: secret, hash: expected ?? DeviceSecrets.unknownDeviceHash)
            guard let device, expected != nil, matches else {
                return .failure(.error(401, "badCredential", "the credential does not match an enrolled device"))
            }
            if device.revokedAt != nil { return .failure(.error(403, "deviceRevoked", "the device was revoked")) }
            return .success(device)
        case .certificate(let deviceID):
            guard let device else {
                return .failure(.error(401, "unknownDevice", "no device '\(deviceID)' is enrolled"))
            }
            guard device.authentication == .certificate else {
                return .failure(.error(401, "badCredential", "this device authenticates with a secret"))
            }
            if device.revokedAt != nil { return .failure(.error(403, "deviceRevoked", "the device was revoked")) }
            return .success(device)
        }
    }

    // MARK: Enrollment

    /// One-time secret → new device with a credential.
    mutating func enroll(secret: [UInt8]) throws -> DeviceReply {
        let deviceID = "d" + Hex.encode(DeviceAPI.randomBytes(10))
        guard try transaction.consumeEnrollmentSecret(hash: DeviceSecrets.hash(secret), deviceID: deviceID, now: now)
        else { return .error(403, "badEnrollmentSecret", "the enrollment secret is unknown, used or expired") }
        let credential = DeviceAPI.randomBytes(32)
        try transaction.insertDevice(
            DeviceRecord(
                id: deviceID, authentication: .secret, credentialHash: DeviceSecrets.hash(credential), createdAt: now,
                revokedAt: nil))
        let text = deviceID + "." + Hex.encode(credential)
        return .created(DeviceEnrollReply(deviceID: deviceID, credential: text))
    }

    /// A device certificate from the operator's CA enrolls its subject CN.
    mutating func enroll(certificateDeviceID deviceID: String) throws -> DeviceReply {
        if let existing = try transaction.device(deviceID) {
            if existing.revokedAt != nil { return .error(403, "deviceRevoked", "the device was revoked") }
            guard existing.authentication == .certificate else {
                return .error(409, "deviceExists", "device '\(deviceID)' authenticates with a secret")
            }
            return .ok(DeviceEnrollReply(deviceID: deviceID, credential: nil))
        }
        try transaction.insertDevice(
            DeviceRecord(
                id: deviceID, authentication: .certificate, credentialHash: nil, createdAt: now, revokedAt: nil))
        return .created(DeviceEnrollReply(deviceID: deviceID, credential: nil))
    }

    // MARK: Tokens

    mutating func createToken(device: DeviceRecord, topic: String) throws -> DeviceReply {
        let live = try transaction.tokens(deviceID: device.id).filter { $0.revokedAt == nil }
        if let existing = live.first(where: { $0.topic == topic }) {
            return .ok(Self.model(existing))
        }
        guard live.count < core.limits.maxTokensPerDevice else {
            return .error(429, "tooManyTokens", "at most \(core.limits.maxTokensPerDevice) tokens per device")
        }
        let token = TokenRecord(
            token: Hex.encode(DeviceAPI.randomBytes(32)), deviceID: device.id, topic: topic, createdAt: now,
            revokedAt: nil)
        try transaction.insertToken(token)
        return .created(Self.model(token))
    }

    func listTokens(device: DeviceRecord) throws -> DeviceReply {
        let live = try transaction.tokens(deviceID: device.id).filter { $0.revokedAt == nil }
        return .ok(DeviceTokenList(tokens: live.map(Self.model)))
    }

    mutating func dropToken(device: DeviceRecord, token: String) throws -> DeviceReply {
        guard let dropped = try transaction.revokeToken(token, deviceID: device.id, at: now) else {
            return .error(404, "unknownToken", "this device has no live token '\(token)'")
        }
        if var slot = state.channels[device.id], !dropped.isEmpty {
            if case .refill(let limit) = slot.delivery.removed(dropped) { try refill(&slot, limit: limit) }
            state.channels[device.id] = slot
        }
        return .ok(DeviceRevocation(.token, token, revokedAt: now))
    }

    /// Replaces what the device reported about its handlers.
    func reportHandlers(device: DeviceRecord, _ handlers: [DeviceHandlerReport.Handler]) throws -> DeviceReply {
        let reports = handlers.map {
            HandlerReport(
                deviceID: device.id, topic: $0.topic, strikes: $0.strikes, voipBlocked: $0.voipBlocked, reportedAt: now)
        }
        try transaction.replaceHandlerReports(deviceID: device.id, reports)
        return .ok(DeviceHandlerReportReply(handlers: reports.count, reportedAt: now))
    }

    /// A stored token as the device API shows it.
    static func model(_ token: TokenRecord) -> DeviceToken {
        DeviceToken(token: token.token, topic: token.topic, createdAt: token.createdAt)
    }

    // MARK: Channel and acknowledgements

    /// Makes `stream` the device's channel (replacing an older one) and sends the backlog.
    mutating func openChannel(
        device: DeviceRecord, channelID: UInt64, stream: HTTP2Stream, webPush: Bool = false, minimumUrgency: Int = 0
    ) throws {
        let metrics = core.metrics
        // Several nodes: this channel holds the device from now on; the older one, on another node, is closed there.
        let claim = try transaction.claimChannel(
            deviceID: device.id, owner: ChannelOwner(node: core.node, channelID: channelID))
        if let previous = claim?.previous, previous.node != core.node {
            tell(previous.node, .replaced(deviceID: device.id, channelID: previous.channelID))
        }
        if let old = state.channels[device.id] {
            let lost = old.delivery.inFlight.filter { $0 >= StoredPush.ephemeralIDBase }.count
            effects.append {
                old.stream.write(ChannelFrame.replaced)
                old.stream.finish()
                if lost > 0 { metrics.dropped(type: nil, reason: "channel-closed", count: lost) }
            }
        }
        let limits = core.limits
        var slot = ChannelSlot(
            deviceID: device.id, stream: stream,
            delivery: DeviceDelivery(
                channelID: channelID, window: limits.window, voipAllowance: limits.voipAllowance,
                lastSeq: claim?.lastSeq), webPush: webPush, minimumUrgency: minimumUrgency)
        let hello = ChannelFrame.hello(
            deviceID: device.id, channelID: channelID, heartbeatSeconds: limits.heartbeatSeconds, window: limits.window)
        effects.append {
            stream.sendHead(
                status: 200,
                headers: [
                    HTTP2Header("content-type", "application/x-ndjson"), HTTP2Header("cache-control", "no-store"),
                ])
            stream.write(hello)
        }
        if case .refill(let limit) = slot.delivery.start { try refill(&slot, limit: limit) }
        state.channels[device.id] = slot
        let count = state.channels.count
        effects.append { metrics.setConnectedDevices(count) }
    }

    /// The channel's stream or connection closed.
    mutating func closeChannel(deviceID: String, channelID: UInt64) throws {
        guard let slot = state.channels[deviceID], slot.delivery.channelID == channelID else { return }
        state.channels[deviceID] = nil
        try transaction.releaseChannel(deviceID: deviceID, owner: ChannelOwner(node: core.node, channelID: channelID))
        let lost = slot.delivery.inFlight.filter { $0 >= StoredPush.ephemeralIDBase }.count
        let metrics = core.metrics
        let count = state.channels.count
        effects.append {
            metrics.setConnectedDevices(count)
            if lost > 0 { metrics.dropped(type: nil, reason: "channel-closed", count: lost) }
        }
    }

    /// Ends the device's channel, if open, with a last record (`revoked`).
    mutating func endChannel(deviceID: String, frame: [UInt8]) {
        guard let slot = state.channels.removeValue(forKey: deviceID) else { return }
        let metrics = core.metrics
        let count = state.channels.count
        let lost = slot.delivery.inFlight.filter { $0 >= StoredPush.ephemeralIDBase }.count
        effects.append {
            slot.stream.write(frame)
            slot.stream.finish()
            metrics.setConnectedDevices(count)
            if lost > 0 { metrics.dropped(type: nil, reason: "channel-closed", count: lost) }
        }
    }

    /// Acknowledged ids: stored pushes are deleted; the window refills.
    mutating func acknowledge(device: DeviceRecord, ids: [Int64]) throws -> DeviceReply {
        let stored = ids.filter { $0 < StoredPush.ephemeralIDBase }
        var acked = try transaction.acknowledge(deviceID: device.id, ids: stored)
        if var slot = state.channels[device.id] {
            let ephemeral = ids.filter { $0 >= StoredPush.ephemeralIDBase && slot.delivery.inFlight.contains($0) }
            acked += ephemeral.count
            if case .refill(let limit) = slot.delivery.acknowledged(ids) { try refill(&slot, limit: limit) }
            state.channels[device.id] = slot
        }
        let metrics = core.metrics
        let count = acked
        effects.append { metrics.acknowledged(count: count) }
        return .ok(DeviceAckReply(acked: acked, unknown: ids.count - acked))
    }
}

/// Credentials are kept as SHA-256 digests and compared in constant time.
enum DeviceSecrets {
    /// What a bearer secret is compared against when its device id is unknown (or has no secret): the digest of
    /// random bytes, which no secret matches, so unknown ids cost the same hash and comparison as known ones.
    static let unknownDeviceHash = hash(DeviceAPI.randomBytes(32))

    static func hash(_ secret: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: secret)) }

    static func matches(secret: [UInt8], hash expected: [UInt8]) -> Bool {
        let actual = hash(secret)
        guard actual.count == expected.count else { return false }
        var difference: UInt8 = 0
        for index in actual.indices { difference |= actual[index] ^ expected[index] }
        return difference == 0
    }
}
