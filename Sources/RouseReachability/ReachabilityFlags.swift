/// Flags in the spirit of `SCNetworkReachabilityFlags`, with Apple's bit values.
public struct ReachabilityFlags: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The egress is a transient connection (tunnel, PPP, VPN).
    public static let transientConnection = ReachabilityFlags(rawValue: 1 << 0)
    /// A packet sent toward the target can leave this host now.
    public static let reachable = ReachabilityFlags(rawValue: 1 << 1)
    /// The path exists but a connection (a tunnel without carrier) must be brought up first.
    public static let connectionRequired = ReachabilityFlags(rawValue: 1 << 2)
    /// The target is an address of this host.
    public static let isLocalAddress = ReachabilityFlags(rawValue: 1 << 16)
    /// The target is on a directly attached network: no gateway.
    public static let isDirect = ReachabilityFlags(rawValue: 1 << 17)
    /// The egress interface is cellular (WWAN).
    public static let isWWAN = ReachabilityFlags(rawValue: 1 << 18)

    /// Apple's usual interpretation: reachable and no connection needed first.
    public var isUsable: Bool { contains(.reachable) && !contains(.connectionRequired) }

    public var description: String {
        var names: [String] = []
        if contains(.reachable) { names.append("reachable") }
        if contains(.connectionRequired) { names.append("connectionRequired") }
        if contains(.transientConnection) { names.append("transientConnection") }
        if contains(.isLocalAddress) { names.append("isLocalAddress") }
        if contains(.isDirect) { names.append("isDirect") }
        if contains(.isWWAN) { names.append("isWWAN") }
        return "[" + names.joined(separator: ",") + "]"
    }
}
