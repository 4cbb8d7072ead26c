/// One notification as a provider sends it: the sender's model, checked by the same rules as the mock.
public struct APNsPush: Sendable, Hashable {
    /// The device token in hex.
    public var deviceToken: String
    /// `apns-topic` (bundle ID plus the push type's suffix, e.g. `com.example.app.voip`).
    public var topic: String
    /// `apns-push-type`.
    public var pushType: APNsPushType
    /// `apns-priority`; `nil` omits the header (APNs then uses 10).
    public var priority: APNsPriority?
    /// `apns-id`; `nil` lets APNs generate one.
    public var apnsID: String?
    /// `apns-expiration` in UNIX seconds; `0` means "deliver once, don't store"; `nil` omits the header.
    public var expiration: Int64?
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// The JSON payload bytes.
    public var payload: [UInt8]

    /// A push; optional fields default to absent.
    public init(
        deviceToken: String,
        topic: String,
        pushType: APNsPushType,
        priority: APNsPriority? = nil,
        apnsID: String? = nil,
        expiration: Int64? = nil,
        collapseID: String? = nil,
        payload: [UInt8]
    ) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.apnsID = apnsID
        self.expiration = expiration
        self.collapseID = collapseID
        self.payload = payload
    }

    /// The `:path` of the request.
    public var path: String { APNsRules.devicePathPrefix + deviceToken }

    /// Pre-flight: the APNs reason the server would give for this push on syntax alone, or `nil`.
    ///
    /// Runs the same `APNsRules` as the mock, in the mock's order (path, headers, payload).
    public func validate() -> APNsReason? {
        // What `APNsRules.deviceToken(fromPath: path)` decides for this push's path, without building the path.
        if deviceToken.isEmpty { return .missingDeviceToken }
        if let reason = APNsRules.checkDeviceToken(deviceToken) { return reason }
        if let apnsID, let reason = APNsRules.checkAPNsID(apnsID) { return reason }
        if let expiration, expiration < 0 { return .badExpirationDate }
        if let priority, !priority.isValid { return .badPriority }
        if !pushType.isKnown { return .invalidPushType }
        if let reason = APNsRules.checkTopic(topic, pushType: pushType) { return reason }
        if let collapseID, let reason = APNsRules.checkCollapseID(collapseID) { return reason }
        if let reason = APNsRules.checkPriority(priority ?? .immediate, pushType: pushType) { return reason }
        return APNsRules.checkPayload(byteCount: payload.count, pushType: pushType)
    }

    /// The HTTP/2 header list for this push, pseudo-headers first, with Apple's HPACK guidance per field.
    ///
    /// - Parameter authorization: the provider token (without `bearer `) for token connections, else `nil`.
    public func headerFields(authorization: String?) -> [APNsHeaderField] {
        var fields: [APNsHeaderField] = [
            APNsHeaderField(name: ":method", value: "POST", indexing: .incremental),
            APNsHeaderField(name: ":path", value: path, indexing: .never),
        ]
        if let authorization {
            fields.append(APNsHeaderField(name: "authorization", value: "bearer " + authorization, indexing: .never))
        }
        fields.append(APNsHeaderField(name: "apns-push-type", value: pushType.rawValue, indexing: .incremental))
        fields.append(APNsHeaderField(name: "apns-topic", value: topic, indexing: .incremental))
        if let priority {
            fields.append(APNsHeaderField(name: "apns-priority", value: priority.description, indexing: .incremental))
        }
        if let apnsID {
            fields.append(APNsHeaderField(name: "apns-id", value: apnsID, indexing: .firstTimeOnly))
        }
        if let expiration {
            fields.append(
                APNsHeaderField(name: "apns-expiration", value: String(expiration), indexing: .firstTimeOnly)
            )
        }
        if let collapseID {
            fields.append(APNsHeaderField(name: "apns-collapse-id", value: collapseID, indexing: .firstTimeOnly))
        }
        return fields
    }
}

/// One HTTP/2 header field with the HPACK indexing Apple asks for ("APNs requires the use of HPACK …").
public struct APNsHeaderField: Sendable, Hashable {
    /// How the field should be HPACK-encoded.
    public enum Indexing: Sendable, Hashable {
        /// "All other headers: incremental indexing."
        case incremental
        /// ":path and authorization: literal without indexing."
        case never
        /// "apns-id, apns-expiration, apns-collapse-id: incremental indexing the first time, then literal
        /// without indexing."
        case firstTimeOnly
    }

    /// Lowercase header name.
    public var name: String
    /// Header value.
    public var value: String
    /// HPACK indexing.
    public var indexing: Indexing

    /// A header field.
    public init(name: String, value: String, indexing: Indexing) {
        self.name = name
        self.value = value
        self.indexing = indexing
    }
}
