/// The `apns-push-type` header value: an open set, so a type Apple adds later survives verbatim.
///
/// Topic suffixes, priority rules and payload limits come from Apple's "Sending notification requests to
/// APNs" (quoted at each member).
public struct APNsPushType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The header value.
    public var rawValue: String

    /// Wraps any header value.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The header value.
    public var description: String { rawValue }

    /// Visible alert, sound or badge. Topic: the bundle ID.
    public static let alert = APNsPushType(rawValue: "alert")
    /// Content-available push. Topic: the bundle ID. "Using priority 10 is an error."
    public static let background = APNsPushType(rawValue: "background")
    /// VoIP call invitation. Topic: `<bundle>.voip`. Payload up to 5120 bytes.
    public static let voip = APNsPushType(rawValue: "voip")
    /// watchOS complication update. Topic: `<bundle>.complication`.
    public static let complication = APNsPushType(rawValue: "complication")
    /// File Provider change. Topic: `<bundle>.pushkit.fileprovider`.
    public static let fileprovider = APNsPushType(rawValue: "fileprovider")
    /// MDM wake-up. Topic: the UID from the MDM certificate subject.
    public static let mdm = APNsPushType(rawValue: "mdm")
    /// Location query. Topic: `<bundle>.location-query`. Token authentication only.
    public static let location = APNsPushType(rawValue: "location")
    /// Live Activity update. Topic: `<bundle>.push-type.liveactivity`.
    public static let liveactivity = APNsPushType(rawValue: "liveactivity")
    /// Push to Talk. Topic: `<bundle>.voip-ptt`.
    public static let pushtotalk = APNsPushType(rawValue: "pushtotalk")
    /// Widget reload. Topic: `<bundle>.push-type.widgets`.
    public static let widgets = APNsPushType(rawValue: "widgets")
    /// Control reload. Topic: `<bundle>.push-type.controls`.
    public static let controls = APNsPushType(rawValue: "controls")

    /// Every push type Apple documents.
    public static let known: [APNsPushType] = [
        .alert, .background, .voip, .complication, .fileprovider, .mdm, .location, .liveactivity, .pushtotalk,
        .widgets, .controls,
    ]

    /// Whether Apple documents this push type (an unknown value gives `InvalidPushType`).
    public var isKnown: Bool { topicSuffix != nil || self == .mdm }

    /// The suffix the `apns-topic` must carry after the bundle ID ("" for alert and background), or `nil`
    /// when no suffix rule applies (mdm, unknown types).
    public var topicSuffix: String? {
        switch rawValue {
        case "alert", "background": ""
        case "voip": ".voip"
        case "complication": ".complication"
        case "fileprovider": ".pushkit.fileprovider"
        case "location": ".location-query"
        case "liveactivity": ".push-type.liveactivity"
        case "pushtotalk": ".voip-ptt"
        case "widgets": ".push-type.widgets"
        case "controls": ".push-type.controls"
        default: nil
        }
    }

    /// The largest payload APNs accepts for this type: "For Voice-over-Internet Protocol (VoIP)
    /// notifications, the maximum payload size is 5 KB (5120 bytes). For all other remote notifications,
    /// the maximum payload size is 4 KB (4096 bytes)."
    public var maxPayloadBytes: Int { self == .voip ? 5120 : 4096 }

    /// Whether a certificate connection may send this type: "Certificate-based connection supports only a
    /// subset of push types"; Apple lists `location` as "token-based authentication only".
    public var allowedWithCertificate: Bool { self != .location }

    /// The bundle ID a topic names for this push type: the topic without the type's suffix, or `nil` when
    /// the topic does not end with the suffix (or is only the suffix).
    public func bundleID(fromTopic topic: String) -> Substring? {
        guard let suffix = topicSuffix else { return Substring(topic) }
        if suffix.isEmpty { return topic.isEmpty ? nil : Substring(topic) }
        guard topic.utf8.count > suffix.utf8.count else { return nil }
        // ASCII topics (every bundle ID): a byte comparison, the same answer as `hasSuffix` and `dropLast` on
        // characters at a fraction of their cost (they were a sixth of the mock's validation time).
        var suffixCopy = suffix
        if let ascii = topic.utf8.withContiguousStorageIfAvailable({ bytes in
            suffixCopy.withUTF8 { tail in
                bytes.allSatisfy { $0 < 0x80 }
                    ? UnsafeBufferPointer(rebasing: bytes[(bytes.count - tail.count)...]).elementsEqual(tail) : nil
            }
        }), let matches = ascii {
            return matches ? Substring(topic.utf8.dropLast(suffix.utf8.count)) : nil
        }
        guard topic.hasSuffix(suffix) else { return nil }
        return topic.dropLast(suffix.count)
    }
}
