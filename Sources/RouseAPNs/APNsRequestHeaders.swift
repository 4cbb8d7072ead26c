/// The APNs headers of one request, picked from the wire header list (lowercase names), not yet validated.
public struct APNsRequestHeaders: Sendable, Hashable {
    /// `authorization` (`bearer <JWT>`), ignored on certificate connections.
    public var authorization: String?
    /// `apns-id`.
    public var apnsID: String?
    /// `apns-expiration`.
    public var expiration: String?
    /// `apns-priority`.
    public var priority: String?
    /// `apns-push-type`.
    public var pushType: String?
    /// `apns-topic`.
    public var topic: String?
    /// `apns-collapse-id`.
    public var collapseID: String?

    /// An empty header set.
    public init() {}

    /// Picks the APNs headers out of a wire-order header list with lowercase names.
    ///
    /// A repeated APNs header (or `authorization`) gives 400 DuplicateHeaders: "One or more headers are
    /// repeated." [RESP] Repeated headers APNs does not read are ignored.
    public static func parse(_ fields: [(name: String, value: String)]) -> Result<APNsRequestHeaders, APNsReason> {
        var headers = APNsRequestHeaders()
        var seen: UInt8 = 0
        for field in fields {
            let bit: UInt8
            switch field.name {
            case "authorization":
                bit = 1
                headers.authorization = field.value
            case "apns-id":
                bit = 2
                headers.apnsID = field.value
            case "apns-expiration":
                bit = 4
                headers.expiration = field.value
            case "apns-priority":
                bit = 8
                headers.priority = field.value
            case "apns-push-type":
                bit = 16
                headers.pushType = field.value
            case "apns-topic":
                bit = 32
                headers.topic = field.value
            case "apns-collapse-id":
                bit = 64
                headers.collapseID = field.value
            default:
                continue
            }
            if seen & bit != 0 { return .failure(.duplicateHeaders) }
            seen |= bit
        }
        return .success(headers)
    }

    /// Checks every header's syntax, in this order: apns-id, apns-expiration, apns-priority,
    /// apns-push-type, apns-topic (suffix rule), apns-collapse-id, priority against push type.
    ///
    /// A missing topic is not an error here: whether it is required depends on the connection (token auth,
    /// multi-topic certificate), which `ProviderConnectionAuth` decides.
    public func validate() -> Result<APNsNotificationHeaders, APNsReason> {
        var result = APNsNotificationHeaders()
        if let apnsID {
            if let reason = APNsRules.checkAPNsID(apnsID) { return .failure(reason) }
            result.apnsID = apnsID
        }
        if let expiration {
            switch APNsRules.parseExpiration(expiration) {
            case .success(let value): result.expiration = value
            case .failure(let reason): return .failure(reason)
            }
        }
        if let priority {
            switch APNsRules.parsePriority(priority) {
            case .success(let value): result.priority = value
            case .failure(let reason): return .failure(reason)
            }
        }
        if let pushType {
            switch APNsRules.parsePushType(pushType) {
            case .success(let value): result.pushType = value
            case .failure(let reason): return .failure(reason)
            }
        }
        if let topic {
            if let reason = APNsRules.checkTopic(topic, pushType: result.pushType) { return .failure(reason) }
            result.topic = topic
        }
        if let collapseID {
            if let reason = APNsRules.checkCollapseID(collapseID) { return .failure(reason) }
            result.collapseID = collapseID
        }
        if let reason = APNsRules.checkPriority(result.priority, pushType: result.pushType) {
            return .failure(reason)
        }
        return .success(result)
    }
}

/// The APNs headers of one request after validation, typed.
public struct APNsNotificationHeaders: Sendable, Hashable {
    /// The `apns-id` the client sent, if any (canonical lowercase UUID).
    public var apnsID: String?
    /// `apns-expiration` in UNIX seconds, if sent.
    public var expiration: Int64?
    /// `apns-priority`; 10 when absent ("If you omit this header, APNs sets the notification priority to 10").
    public var priority: APNsPriority = .immediate
    /// `apns-push-type`, if sent.
    public var pushType: APNsPushType?
    /// `apns-topic`, if sent.
    public var topic: String?
    /// `apns-collapse-id`, if sent.
    public var collapseID: String?

    /// Headers with every field absent.
    public init() {}
}
