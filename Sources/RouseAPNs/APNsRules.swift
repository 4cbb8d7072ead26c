/// The request rules APNs applies, as pure functions shared by the mock (server side) and the sender's
/// pre-flight (client side). Each rule quotes the sentence of Apple's documentation it comes from
/// ("Sending notification requests to APNs" [SEND], "Handling notification responses from APNs" [RESP]).
public enum APNsRules {
    /// The path prefix of a push request.
    public static let devicePathPrefix = "/3/device/"

    /// `devicePathPrefix`'s bytes, for comparisons on a path's contiguous UTF-8.
    private static let devicePathPrefixBytes: [UInt8] = Array(devicePathPrefix.utf8)

    /// Longest device token accepted, in hex digits. Apple: "Don't make assumptions about device token
    /// size", so this bound only protects against garbage (512 bytes of token).
    public static let maxDeviceTokenHexDigits = 1024

    /// Longest collapse id: "The value of this key must not exceed 64 bytes." [SEND]
    public static let maxCollapseIDBytes = 64

    /// `:method` must be POST: 405 MethodNotAllowed, "The specified :method value isn't POST." [RESP]
    public static func checkMethod(_ method: String) -> APNsReason? {
        method == "POST" ? nil : .methodNotAllowed
    }

    /// Extracts the device token from `:path` (`/3/device/<hex>`).
    ///
    /// - 404 BadPath: "The request contained an invalid :path value." [RESP]
    /// - 400 MissingDeviceToken: "The device token isn't specified in the request :path." [RESP]
    /// - 400 BadDeviceToken: "The specified device token is invalid." [RESP] (see `checkDeviceToken`).
    public static func deviceToken(fromPath path: String) -> Result<Substring, APNsReason> {
        let utf8 = path.utf8
        // Byte comparisons on the contiguous UTF-8 (native strings always have it): the generic `starts(with:)`
        // and per-byte walk of a `Substring` cost thousands of instructions per request in the mock's profile.
        let prefixLength = devicePathPrefix.utf8.count
        let verdict = utf8.withContiguousStorageIfAvailable { bytes -> Result<Void, APNsReason> in
            guard bytes.count >= prefixLength,
                UnsafeBufferPointer(rebasing: bytes[..<prefixLength]).elementsEqual(devicePathPrefixBytes)
            else {
                return .failure(path == "/3/device" ? .missingDeviceToken : .badPath)
            }
            if bytes.count == prefixLength { return .failure(.missingDeviceToken) }
            if let reason = checkDeviceToken(bytes: UnsafeBufferPointer(rebasing: bytes[prefixLength...])) {
                return .failure(reason)
            }
            return .success(())
        }
        switch verdict {
        case .success?: return .success(Substring(utf8.dropFirst(prefixLength)))
        case .failure(let reason)?: return .failure(reason)
        case nil: break
        }
        guard utf8.starts(with: devicePathPrefix.utf8) else {
            return path == "/3/device" ? .failure(.missingDeviceToken) : .failure(.badPath)
        }
        let token = path.utf8.dropFirst(prefixLength)
        if token.isEmpty { return .failure(.missingDeviceToken) }
        let substring = Substring(token)
        if let reason = checkDeviceToken(substring) { return .failure(reason) }
        return .success(substring)
    }

    /// A device token is "the hexadecimal bytes of the device token" [SEND]: an even, nonzero number of hex
    /// digits, of any length (Apple: "Don't make assumptions about device token size"). Else BadDeviceToken.
    public static func checkDeviceToken(_ token: some StringProtocol) -> APNsReason? {
        let utf8 = token.utf8
        if let verdict = utf8.withContiguousStorageIfAvailable({ checkDeviceToken(bytes: $0) }) { return verdict }
        let count = utf8.count
        guard count > 0, count % 2 == 0, count <= maxDeviceTokenHexDigits else { return .badDeviceToken }
        for byte in utf8 where !isHexDigit(byte) { return .badDeviceToken }
        return nil
    }

    /// `checkDeviceToken` on the token's UTF-8 bytes.
    static func checkDeviceToken(bytes: UnsafeBufferPointer<UInt8>) -> APNsReason? {
        let count = bytes.count
        guard count > 0, count % 2 == 0, count <= maxDeviceTokenHexDigits else { return .badDeviceToken }
        for byte in bytes where !isHexDigit(byte) { return .badDeviceToken }
        return nil
    }

    /// `apns-id`: "The canonical form is 32 lowercase hexadecimal digits, displayed in five groups separated
    /// by hyphens in the form 8-4-4-4-12." [SEND] Else 400 BadMessageId: "The apns-id value is invalid."
    public static func checkAPNsID(_ value: some StringProtocol) -> APNsReason? {
        isCanonicalUUID(value) ? nil : .badMessageId
    }

    /// Whether `value` is a canonical lowercase UUID (8-4-4-4-12).
    public static func isCanonicalUUID(_ value: some StringProtocol) -> Bool {
        var index = 0
        for byte in value.utf8 {
            switch index {
            case 8, 13, 18, 23: if byte != UInt8(ascii: "-") { return false }
            default:
                let isLowerHex =
                    (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                    || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
                if !isLowerHex { return false }
            }
            index += 1
            if index > 36 { return false }
        }
        return index == 36
    }

    /// `apns-expiration`: "The date at which the notification is no longer valid. This value is a UNIX epoch
    /// expressed in seconds (UTC)." [SEND] A non-negative decimal integer; else 400 BadExpirationDate.
    public static func parseExpiration(_ value: some StringProtocol) -> Result<Int64, APNsReason> {
        let utf8 = value.utf8
        guard !utf8.isEmpty, utf8.count <= 18 else { return .failure(.badExpirationDate) }
        var result: Int64 = 0
        for byte in utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return .failure(.badExpirationDate) }
            result = result * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return .success(result)
    }

    /// `apns-priority`: 10, 5 or 1 [SEND]; else 400 BadPriority: "The apns-priority value is invalid."
    public static func parsePriority(_ value: some StringProtocol) -> Result<APNsPriority, APNsReason> {
        guard let priority = APNsPriority(headerValue: value) else { return .failure(.badPriority) }
        return .success(priority)
    }

    /// `apns-push-type` must be a documented type; else 400 InvalidPushType: "The apns-push-type value is
    /// invalid." [RESP]
    public static func parsePushType(_ value: String) -> Result<APNsPushType, APNsReason> {
        let type = APNsPushType(rawValue: value)
        return type.isKnown ? .success(type) : .failure(.invalidPushType)
    }

    /// `apns-topic` against the push type: "(Required for watchOS 6 and later; recommended for macOS, iOS,
    /// tvOS, and iPadOS) … If you're using a certificate that supports … the topic is your app's bundle ID
    /// with `.voip` appended" and the table of suffixes per type [SEND]. A missing suffix (or an empty
    /// topic) gives 400 BadTopic: "The apns-topic value is invalid."
    public static func checkTopic(_ topic: String, pushType: APNsPushType?) -> APNsReason? {
        if topic.isEmpty { return .badTopic }
        guard let pushType else { return nil }
        return pushType.bundleID(fromTopic: topic) == nil ? .badTopic : nil
    }

    /// Priority against push type: background "The notification priority … must be 5. Using priority 10 is
    /// an error." [SEND] (an absent header means 10). Else 400 BadPriority.
    public static func checkPriority(_ priority: APNsPriority, pushType: APNsPushType?) -> APNsReason? {
        if !priority.isValid { return .badPriority }
        if pushType == .background, priority != .conservePower { return .badPriority }
        return nil
    }

    /// `apns-collapse-id`: "The value of this key must not exceed 64 bytes." [SEND] Else 400 BadCollapseId:
    /// "The collapse identifier exceeds the maximum allowed size." [RESP]
    public static func checkCollapseID(_ value: some StringProtocol) -> APNsReason? {
        value.utf8.count > maxCollapseIDBytes ? .badCollapseId : nil
    }

    /// Payload size: "The message payload is empty." (400 PayloadEmpty) and "The message payload is too
    /// large." (413 PayloadTooLarge) [RESP]; limits 4096, and 5120 for VoIP [SEND]. A request without
    /// `apns-push-type` gets the general 4096-byte limit.
    public static func checkPayload(byteCount: Int, pushType: APNsPushType?) -> APNsReason? {
        if byteCount == 0 { return .payloadEmpty }
        return byteCount > (pushType ?? .alert).maxPayloadBytes ? .payloadTooLarge : nil
    }

    @inline(__always)
    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
            || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "f"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "F"))
    }
}
