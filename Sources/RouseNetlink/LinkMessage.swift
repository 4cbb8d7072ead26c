import CRouseSys

/// A decoded `RTM_NEWLINK`/`RTM_DELLINK`: `ifinfomsg` plus the attributes Rouse uses.
public struct LinkMessage: Sendable, Equatable {
    /// `ifi_index`.
    public var index: Int32
    /// `ifi_type` (an `ARPHRD_*` value).
    public var hardwareType: UInt16
    /// `ifi_flags` (`IFF_*`).
    public var flags: UInt32
    /// `ifi_change`: which flags changed (0 for dumps and some spurious events).
    public var change: UInt32
    /// `IFLA_IFNAME`.
    public var name: String?
    /// `IFLA_OPERSTATE` (RFC 2863 `IF_OPER_*`).
    public var operState: UInt8?
    /// `IFLA_LINKINFO` → `IFLA_INFO_KIND` (e.g. `veth`, `tun`, `wireguard`, `bridge`).
    public var kind: String?
    /// `IFLA_MTU`.
    public var mtu: UInt32?
    /// `IFLA_MASTER`: the bridge or bond this link is enslaved to.
    public var master: Int32?
    /// True when the message carried `IFLA_WIRELESS` (a wireless extension event).
    public var hasWirelessEvent: Bool

    /// Creates a link description (for tests and for decoders).
    public init(
        index: Int32, hardwareType: UInt16, flags: UInt32, change: UInt32 = 0, name: String? = nil,
        operState: UInt8? = nil, kind: String? = nil, mtu: UInt32? = nil, master: Int32? = nil,
        hasWirelessEvent: Bool = false
    ) {
        self.index = index
        self.hardwareType = hardwareType
        self.flags = flags
        self.change = change
        self.name = name
        self.operState = operState
        self.kind = kind
        self.mtu = mtu
        self.master = master
        self.hasWirelessEvent = hasWirelessEvent
    }

    /// `IFF_UP`: administratively up.
    public var isUp: Bool { flags & RTNL.iffUp != 0 }
    /// `IFF_LOWER_UP` (carrier), or an operstate of up; `unknown` counts for links without carrier
    /// reporting (loopback, tun) only when `IFF_LOWER_UP` is also set.
    public var hasCarrier: Bool {
        if let operState,
            operState == RTNL.operDown || operState == RTNL.operLowerLayerDown
                || operState == RTNL.operDormant
        {
            return false
        }
        return flags & RTNL.iffLowerUp != 0
    }
    /// `IFF_LOOPBACK`.
    public var isLoopback: Bool { flags & RTNL.iffLoopback != 0 || hardwareType == RTNL.arphrdLoopback }

    /// Decodes the payload of a link message.
    public static func decode(_ payload: ArraySlice<UInt8>) throws(NetlinkError) -> LinkMessage {
        let reader = ByteReader(payload)
        let size = MemoryLayout<ifinfomsg>.size
        guard reader.count >= size else {
            throw NetlinkError(.truncated, "ifinfomsg: \(reader.count) bytes, need \(size)")
        }
        var link = LinkMessage(
            index: try reader.integer(Int32.self, at: 4, "ifi_index"),
            hardwareType: try reader.integer(UInt16.self, at: 2, "ifi_type"),
            flags: try reader.integer(UInt32.self, at: 8, "ifi_flags"),
            change: try reader.integer(UInt32.self, at: 12, "ifi_change")
        )
        let attributes = try NetlinkAttribute.parse(
            try reader.slice(at: size, length: reader.count - size, "ifla"), "ifla")
        for attribute in attributes {
            switch attribute.type {
            case RTNL.iflaIfname: link.name = attribute.string()
            case RTNL.iflaOperstate: link.operState = try attribute.integer(UInt8.self, "IFLA_OPERSTATE")
            case RTNL.iflaMTU: link.mtu = try attribute.integer(UInt32.self, "IFLA_MTU")
            case RTNL.iflaMaster: link.master = try attribute.integer(Int32.self, "IFLA_MASTER")
            case RTNL.iflaWireless: link.hasWirelessEvent = true
            case RTNL.iflaLinkinfo:
                for info in try NetlinkAttribute.parse(attribute.payload, "IFLA_LINKINFO")
                where info.type == RTNL.iflaInfoKind {
                    link.kind = info.string()
                }
            default: break
            }
        }
        return link
    }
}
