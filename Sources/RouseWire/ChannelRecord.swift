/// One record of the device channel (`GET /device/v1/channel`), the gateway's stream to an agent: one JSON
/// object per line, `"type"` naming the case and the payload's members beside it (docs/gateway.md). The
/// gateway writes it with ``line`` (hand-written, the hot path), the agent reads it with ``init(line:)``
/// (Foundation's decoder through `Codable`); a test holds the two to each other and to the bytes of earlier
/// versions. A `type` this version does not know decodes as ``unknown(type:)``: readers must ignore it.
package enum ChannelRecord: Sendable, Equatable {
    /// First record of every channel.
    case hello(Hello)
    /// One push to deliver and acknowledge.
    case push(Push)
    /// Liveness, for clients that cannot send HTTP/2 PINGs.
    case heartbeat(Heartbeat)
    /// One WebPush message (only on channels that declared the `webpush` feature; docs/webpush.md).
    case webpush(WebPush)
    /// Last record of a channel that a newer channel of the same device replaced.
    case replaced
    /// Last record of a channel whose device was revoked.
    case revoked
    /// Last record of a channel closed because the gateway stops.
    case shutdown
    /// A record of a later version: ignored.
    case unknown(type: String)

    /// `hello`: who the gateway thinks the device is and the channel's terms.
    package struct Hello: Sendable, Equatable, Codable {
        /// The device id.
        package var device: String
        /// The channel's number (increases with each channel the gateway opens).
        package var channel: UInt64
        /// Seconds between heartbeat records (0: none).
        package var heartbeat: Int
        /// Non-VoIP pushes in flight (unacknowledged) at most.
        package var window: Int

        /// A hello.
        package init(device: String, channel: UInt64, heartbeat: Int, window: Int) {
            self.device = device
            self.channel = channel
            self.heartbeat = heartbeat
            self.window = window
        }

        private enum CodingKeys: String, CodingKey { case device, channel, heartbeat, window }

        /// Decodes the members, each named in its error.
        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            device = try container.member(.device)
            channel = try container.member(.channel)
            heartbeat = try container.member(.heartbeat)
            window = try container.member(.window)
        }
    }

    /// `push`: a provider's push as the gateway stored it.
    package struct Push: Sendable, Equatable, Codable {
        /// The delivery id the device acknowledges (a decimal number).
        package var id: String
        /// The device token the provider addressed (hex).
        package var token: String
        /// `apns-topic`.
        package var topic: String
        /// `apns-push-type`; absent when the provider sent none.
        package var pushType: String?
        /// `apns-priority`.
        package var priority: Int
        /// `apns-id`: the de-duplication key across reconnects.
        package var apnsID: String
        /// `apns-collapse-id`; absent when the provider sent none.
        package var collapseID: String?
        /// UNIX seconds when the gateway stops offering the push (0: deliver now or drop).
        package var expiration: Int64
        /// UNIX milliseconds when the gateway accepted it.
        package var receivedAt: Int64
        /// The provider's payload bytes, base64.
        package var payload: String

        /// A push.
        package init(
            id: String, token: String, topic: String, pushType: String?, priority: Int, apnsID: String,
            collapseID: String?, expiration: Int64, receivedAt: Int64, payload: String
        ) {
            self.id = id
            self.token = token
            self.topic = topic
            self.pushType = pushType
            self.priority = priority
            self.apnsID = apnsID
            self.collapseID = collapseID
            self.expiration = expiration
            self.receivedAt = receivedAt
            self.payload = payload
        }

        private enum CodingKeys: String, CodingKey {
            case id, token, topic, pushType, priority, apnsID, collapseID, expiration, receivedAt, payload
        }

        /// Decodes the members, each named in its error.
        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.member(.id)
            token = try container.member(.token)
            topic = try container.member(.topic)
            pushType = try container.optionalMember(.pushType)
            priority = try container.member(.priority)
            apnsID = try container.member(.apnsID)
            collapseID = try container.optionalMember(.collapseID)
            expiration = try container.member(.expiration)
            receivedAt = try container.member(.receivedAt)
            payload = try container.member(.payload)
        }
    }

    /// `heartbeat`: the gateway's clock.
    package struct Heartbeat: Sendable, Equatable, Codable {
        /// UNIX milliseconds.
        package var time: Int64

        /// A heartbeat.
        package init(time: Int64) { self.time = time }

        private enum CodingKeys: String, CodingKey { case time }

        /// Decodes the member, named in its error.
        package init(from decoder: any Decoder) throws {
            time = try decoder.container(keyedBy: CodingKeys.self).member(.time)
        }
    }

    /// The `type` member: the case's wire name.
    package var type: String {
        switch self {
        case .hello: Kind.hello.rawValue
        case .push: Kind.push.rawValue
        case .heartbeat: Kind.heartbeat.rawValue
        case .webpush: Kind.webpush.rawValue
        case .replaced: Kind.replaced.rawValue
        case .revoked: Kind.revoked.rawValue
        case .shutdown: Kind.shutdown.rawValue
        case .unknown(let type): type
        }
    }

    /// The `type`s this version knows.
    package enum Kind: String, CaseIterable {
        case hello, push, heartbeat, webpush, replaced, revoked, shutdown
    }
}

extension ChannelRecord: Codable {
    private enum TypeKey: String, CodingKey { case type }

    /// Decodes one record object; a known `type` with a missing or mistyped member throws a
    /// ``ChannelRecordError`` naming both.
    package init(from decoder: any Decoder) throws {
        let container: KeyedDecodingContainer<TypeKey>
        let type: String
        do {
            container = try decoder.container(keyedBy: TypeKey.self)
            type = try container.decode(String.self, forKey: .type)
        } catch let error as DecodingError {
            throw ChannelRecordError(decoding: error, record: nil)
        }
        guard let kind = Kind(rawValue: type) else {
            self = .unknown(type: type)
            return
        }
        do {
            switch kind {
            case .hello: self = .hello(try Hello(from: decoder))
            case .push: self = .push(try Push(from: decoder))
            case .heartbeat: self = .heartbeat(try Heartbeat(from: decoder))
            case .webpush: self = .webpush(try WebPush(from: decoder))
            case .replaced: self = .replaced
            case .revoked: self = .revoked
            case .shutdown: self = .shutdown
            }
        } catch let error as DecodingError {
            throw ChannelRecordError(decoding: error, record: type)
        }
    }

    /// Encodes the record object (Foundation's encoder; the gateway uses ``line``, which writes the same).
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TypeKey.self)
        try container.encode(type, forKey: .type)
        switch self {
        case .hello(let hello): try hello.encode(to: encoder)
        case .push(let push): try push.encode(to: encoder)
        case .heartbeat(let heartbeat): try heartbeat.encode(to: encoder)
        case .webpush(let webpush): try webpush.encode(to: encoder)
        case .replaced, .revoked, .shutdown, .unknown: break
        }
    }
}

extension KeyedDecodingContainer {
    /// `decode(_:forKey:)`, with the member named in every error: Foundation on Linux throws its own error for
    /// a number that does not fit the type, which reaches the caller as "not valid JSON", with no coding path.
    fileprivate func member<T: Decodable>(_ key: Key) throws -> T {
        do {
            return try decode(T.self, forKey: key)
        } catch let error as DecodingError {
            throw error
        } catch {
            throw DecodingError.typeMismatch(
                T.self, .init(codingPath: codingPath + [key], debugDescription: "\(error)"))
        }
    }

    /// `decodeIfPresent(_:forKey:)`, with the member named in every error.
    fileprivate func optionalMember<T: Decodable>(_ key: Key) throws -> T? {
        do {
            return try decodeIfPresent(T.self, forKey: key)
        } catch let error as DecodingError {
            throw error
        } catch {
            throw DecodingError.typeMismatch(
                T.self, .init(codingPath: codingPath + [key], debugDescription: "\(error)"))
        }
    }
}
