/// The `apns-priority` header value. APNs accepts 10, 5 and 1; "If you omit this header, APNs sets the
/// notification priority to 10."
public struct APNsPriority: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The numeric value sent in the header.
    public var rawValue: Int

    /// Wraps any value; `isValid` says whether APNs accepts it.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }

    /// The numeric value.
    public var description: String { String(rawValue) }

    /// "Specify 10 to send the notification immediately."
    public static let immediate = APNsPriority(rawValue: 10)
    /// "Specify 5 to send the notification based on power considerations on the user's device."
    public static let conservePower = APNsPriority(rawValue: 5)
    /// "Specify 1 to prioritize the device's power considerations over all other factors for delivery, and
    /// prevent awakening the device."
    public static let low = APNsPriority(rawValue: 1)

    /// Whether APNs accepts this value (10, 5 or 1).
    public var isValid: Bool { rawValue == 10 || rawValue == 5 || rawValue == 1 }

    /// Parses the header value exactly ("10", "5", "1"); anything else, including "05", is `nil`.
    public init?(headerValue: some StringProtocol) {
        switch headerValue {
        case "10": self = .immediate
        case "5": self = .conservePower
        case "1": self = .low
        default: return nil
        }
    }
}
