import RouseNetlink

/// The kind of an interface, decided from the kernel (`IFLA_INFO_KIND`, `ARPHRD_*`) and sysfs
/// (`wireless/`, `uevent` `DEVTYPE`), never from its name.
public enum InterfaceType: String, Hashable, Sendable, CaseIterable {
    case loopback
    case wired
    case wifi
    case cellular
    case tunnel
    case other
}

/// An egress interface: name, index and type.
public struct NetworkInterface: Hashable, Sendable, CustomStringConvertible {
    /// The name (`IFLA_IFNAME`).
    public var name: String
    /// The index (`ifindex`).
    public var index: Int32
    /// The type.
    public var type: InterfaceType

    /// Creates an interface description.
    public init(name: String, index: Int32, type: InterfaceType) {
        self.name = name
        self.index = index
        self.type = type
    }

    public var description: String { "\(name)#\(index)(\(type.rawValue))" }
}

/// A path toward a target in the spirit of `NWPath`.
public struct NetworkPath: Hashable, Sendable {
    /// `NWPath.Status`, with the reason when unsatisfied.
    public enum Status: Hashable, Sendable, CustomStringConvertible {
        /// A packet toward the target can leave now.
        case satisfied
        /// No usable path, and why.
        case unsatisfied(UnsatisfiedReason)
        /// A path exists through an interface that must first connect (a tunnel without carrier).
        case requiresConnection

        public var description: String {
            switch self {
            case .satisfied: return "satisfied"
            case .unsatisfied(let reason): return "unsatisfied(\(reason.rawValue))"
            case .requiresConnection: return "requiresConnection"
            }
        }
    }

    /// Why a path is unsatisfied.
    public enum UnsatisfiedReason: String, Hashable, Sendable {
        /// The kernel has no route (`ENETUNREACH`, or an unreachable route).
        case noRoute
        /// The route's interface is administratively down.
        case linkDown
        /// The route's interface is up but has no carrier (`IFF_LOWER_UP` clear, operstate down).
        case noCarrier
        /// The chosen nexthop is `RTNH_F_LINKDOWN` or `RTNH_F_DEAD`.
        case nexthopDown
        /// A blackhole route.
        case blackhole
        /// A prohibit route.
        case prohibited
        /// No address can source the traffic (none, or only link-local toward a global target).
        case noSourceAddress
        /// The local address of an address pair is not (or no longer) on this host.
        case localAddressNotAvailable
        /// The host name could not be resolved.
        case nameNotResolved
    }

    /// The status.
    public var status: Status
    /// The egress interface, when the kernel chose one.
    public var interface: NetworkInterface?
    /// Cellular egress, or an interface configured as expensive.
    public var isExpensive: Bool
    /// The egress interface has a usable non-link-local IPv4 address (for `.anyNetwork`: an IPv4 path
    /// is satisfied).
    public var supportsIPv4: Bool
    /// The egress interface has a usable global IPv6 address (for `.anyNetwork`: an IPv6 path is
    /// satisfied).
    public var supportsIPv6: Bool
    /// DNS queries can be attempted: the path is satisfied. Rouse does not watch resolv.conf.
    public var supportsDNS: Bool
    /// The gateway (`RTA_GATEWAY`) of the chosen route; nil when direct.
    public var gateway: IPAddress?
    /// The preferred source address (`RTA_PREFSRC`) toward the target.
    public var sourceAddress: IPAddress?
    /// The destination address this path was computed for.
    public var remoteAddress: IPAddress?

    /// Creates a path.
    public init(
        status: Status, interface: NetworkInterface? = nil, isExpensive: Bool = false, supportsIPv4: Bool = false,
        supportsIPv6: Bool = false, supportsDNS: Bool = false, gateway: IPAddress? = nil,
        sourceAddress: IPAddress? = nil, remoteAddress: IPAddress? = nil
    ) {
        self.status = status
        self.interface = interface
        self.isExpensive = isExpensive
        self.supportsIPv4 = supportsIPv4
        self.supportsIPv6 = supportsIPv6
        self.supportsDNS = supportsDNS
        self.gateway = gateway
        self.sourceAddress = sourceAddress
        self.remoteAddress = remoteAddress
    }
}

/// A target's result: both the flag view and the path view.
public struct ReachabilityResult: Hashable, Sendable, CustomStringConvertible {
    /// `SCNetworkReachabilityFlags`-like flags.
    public var flags: ReachabilityFlags
    /// `NWPath`-like path.
    public var path: NetworkPath

    /// Creates a result.
    public init(flags: ReachabilityFlags, path: NetworkPath) {
        self.flags = flags
        self.path = path
    }

    /// Reachable and no connection needed first.
    public var isUsable: Bool { flags.isUsable }

    /// Whether going from `old` to this result warrants a notification, and of which kind; nil when it
    /// does not (unrelated churn). Any two unsatisfied results with the same flags count as equal,
    /// whatever their reason or interface (a link going down is seen as "link down" or, once the kernel
    /// has flushed its routes, "no route": one change, not two). With the same status, another egress
    /// interface, gateway or source is a path change, even if the flags moved with it; otherwise a change
    /// of status or flags is a reachability change. `familySupportMatters` (the any-network target) makes
    /// a change of `supportsIPv4`/`supportsIPv6` a reachability change; for a single destination they
    /// describe the egress interface's addresses and are refreshed silently, like the other attributes.
    public func changeKind(from old: ReachabilityResult?, familySupportMatters: Bool = false)
        -> ReachabilityChange.Kind?
    {
        guard let old else { return .initial }
        if case .unsatisfied = path.status, case .unsatisfied = old.path.status, flags == old.flags { return nil }
        let samePath =
            path.interface == old.path.interface && path.gateway == old.path.gateway
            && path.sourceAddress == old.path.sourceAddress
        if path.status == old.path.status && !samePath { return .path }
        if path.status != old.path.status || flags != old.flags { return .reachability }
        if familySupportMatters
            && (path.supportsIPv4 != old.path.supportsIPv4 || path.supportsIPv6 != old.path.supportsIPv6)
        {
            return .reachability
        }
        return nil
    }

    public var description: String {
        var text = "\(path.status) \(flags)"
        if let interface = path.interface { text += " via \(interface)" }
        if let gateway = path.gateway { text += " gw \(gateway)" }
        if let source = path.sourceAddress { text += " src \(source)" }
        return text
    }
}
