import RouseNetlink
import RouseSystem

/// Decides an interface's type from the kernel's facts: `IFLA_INFO_KIND`, the `ARPHRD_*` hardware
/// type and, when the interface is visible in this process's sysfs, `wireless/` and `uevent`
/// `DEVTYPE`. Names are never used.
public struct InterfaceClassifier: Sendable {
    /// What sysfs says about an interface.
    public struct SysfsFacts: Sendable, Equatable {
        /// `/sys/class/net/NAME/wireless` or `phy80211` exists.
        public var isWireless: Bool
        /// `DEVTYPE=` from `/sys/class/net/NAME/uevent` (`wlan`, `wwan`, `bridge`, …).
        public var deviceType: String?

        /// Creates facts.
        public init(isWireless: Bool, deviceType: String?) {
            self.isWireless = isWireless
            self.deviceType = deviceType
        }
    }

    private let sysfs: @Sendable (String, Int32) -> SysfsFacts?

    /// A classifier with a custom sysfs source (tests).
    public init(sysfs: @escaping @Sendable (String, Int32) -> SysfsFacts?) {
        self.sysfs = sysfs
    }

    /// Reads `/sys/class/net`; facts are used only when the sysfs entry's `ifindex` matches (sysfs
    /// shows the namespace it was mounted in, which may not be the monitor's).
    public static let system = InterfaceClassifier { name, index in
        guard !name.isEmpty, !name.contains("/") else { return nil }
        let base = "/sys/class/net/\(name)"
        guard let text = Sys.readText(base + "/ifindex", maxBytes: 4096), Int32(text.trimmingSpaces) == index else {
            return nil
        }
        let wireless = Sys.exists(base + "/wireless") || Sys.exists(base + "/phy80211")
        var deviceType: String?
        if let uevent = Sys.readText(base + "/uevent", maxBytes: 4096) {
            for line in uevent.split(separator: "\n") where line.hasPrefix("DEVTYPE=") {
                deviceType = String(line.dropFirst("DEVTYPE=".count))
            }
        }
        return SysfsFacts(isWireless: wireless, deviceType: deviceType)
    }

    /// `IFLA_INFO_KIND` values of tunnel and VPN devices.
    static let tunnelKinds: Set<String> = [
        "tun", "wireguard", "ipip", "gre", "gretap", "ip6gre", "ip6gretap", "sit", "vti", "vti6", "ip6tnl",
        "xfrm", "ppp", "l2tp", "geneve", "vxlan", "ipvlan-tun",
    ]

    /// Classifies one link.
    public func classify(_ link: LinkMessage) -> InterfaceType {
        if link.isLoopback { return .loopback }
        let facts = link.name.flatMap { sysfs($0, link.index) }
        if let kind = link.kind, Self.tunnelKinds.contains(kind) { return .tunnel }
        let tunnelHardware: Set<UInt16> = [
            RTNL.arphrdPPP, RTNL.arphrdNone, RTNL.arphrdTunnel, RTNL.arphrdTunnel6, RTNL.arphrdSit, RTNL.arphrdIPGRE,
        ]
        if tunnelHardware.contains(link.hardwareType) { return .tunnel }
        if facts?.deviceType == "wwan" || link.hardwareType == RTNL.arphrdRawIP { return .cellular }
        if facts?.isWireless == true || facts?.deviceType == "wlan" || link.hardwareType == RTNL.arphrdIEEE80211 {
            return .wifi
        }
        if link.hardwareType == RTNL.arphrdEther { return .wired }
        return .other
    }
}
