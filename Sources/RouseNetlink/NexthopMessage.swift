import CRouseSys

/// A decoded `RTM_NEWNEXTHOP`/`RTM_DELNEXTHOP` (`struct nhmsg` plus `NHA_*` attributes): a nexthop
/// object (`ip nexthop add id N via GW dev DEV`, `… blackhole`) or a group of them (`… group 1/2`).
public struct NexthopMessage: Sendable, Equatable {
    /// `nh_family` (`AF_INET`, `AF_INET6`, or `AF_UNSPEC` for groups and blackholes).
    public var family: UInt8
    /// `nh_flags` (`RTNH_F_DEAD`, `RTNH_F_LINKDOWN`, …).
    public var flags: UInt32
    /// `NHA_ID`.
    public var id: UInt32
    /// `NHA_OIF`.
    public var outputInterface: Int32?
    /// `NHA_GATEWAY`.
    public var gateway: IPAddress?
    /// `NHA_BLACKHOLE`.
    public var isBlackhole: Bool
    /// The member ids of `NHA_GROUP` (empty for a single nexthop).
    public var group: [UInt32]

    /// Creates a description (for tests and decoders).
    public init(
        family: UInt8 = 0, flags: UInt32 = 0, id: UInt32, outputInterface: Int32? = nil, gateway: IPAddress? = nil,
        isBlackhole: Bool = false, group: [UInt32] = []
    ) {
        self.family = family
        self.flags = flags
        self.id = id
        self.outputInterface = outputInterface
        self.gateway = gateway
        self.isBlackhole = isBlackhole
        self.group = group
    }

    /// Decodes the payload of a nexthop message.
    public static func decode(_ payload: ArraySlice<UInt8>) throws(NetlinkError) -> NexthopMessage {
        let reader = ByteReader(payload)
        let size = MemoryLayout<nhmsg>.size
        guard reader.count >= size else {
            throw NetlinkError(.truncated, "nhmsg: \(reader.count) bytes, need \(size)")
        }
        var nexthop = NexthopMessage(
            family: try reader.integer(UInt8.self, at: 0, "nh_family"),
            flags: try reader.integer(UInt32.self, at: 4, "nh_flags"), id: 0)
        var sawID = false
        for attribute in try NetlinkAttribute.parse(
            try reader.slice(at: size, length: reader.count - size, "nha"), "nha")
        {
            switch attribute.type {
            case RTNL.nhaID:
                nexthop.id = try attribute.integer(UInt32.self, "NHA_ID")
                sawID = true
            case RTNL.nhaOif: nexthop.outputInterface = try attribute.integer(Int32.self, "NHA_OIF")
            case RTNL.nhaGateway: nexthop.gateway = try attribute.address("NHA_GATEWAY")
            case RTNL.nhaBlackhole: nexthop.isBlackhole = true
            case RTNL.nhaGroup: nexthop.group = try decodeGroup(attribute.payload)
            default: break
            }
        }
        guard sawID else { throw NetlinkError(.badAttribute, "nexthop message without NHA_ID") }
        return nexthop
    }

    /// `NHA_GROUP`: an array of `struct nexthop_grp` (id, weight, reserved).
    static func decodeGroup(_ bytes: ArraySlice<UInt8>) throws(NetlinkError) -> [UInt32] {
        let size = MemoryLayout<nexthop_grp>.size
        guard bytes.count % size == 0 else {
            throw NetlinkError(.badAttribute, "NHA_GROUP: \(bytes.count) bytes, not a multiple of \(size)")
        }
        let reader = ByteReader(bytes)
        var ids: [UInt32] = []
        for offset in stride(from: 0, to: bytes.count, by: size) {
            ids.append(try reader.integer(UInt32.self, at: offset, "nexthop_grp.id"))
        }
        return ids
    }
}

/// A decoded `RTM_NEWNETCONF`/`RTM_DELNETCONF`: a per-device (or `all`/`default`) IPv4 or IPv6
/// configuration change the kernel announces, such as `ignore_routes_with_linkdown` or `forwarding`.
public struct NetconfMessage: Sendable, Equatable {
    /// `ncm_family` (`AF_INET` or `AF_INET6`).
    public var family: UInt8
    /// `NETCONFA_IFINDEX`: a device, or `NETCONFA_IFINDEX_ALL` (-1) / `NETCONFA_IFINDEX_DEFAULT` (-2).
    public var interfaceIndex: Int32?
    /// `NETCONFA_IGNORE_ROUTES_WITH_LINKDOWN`, when the message carries it.
    public var ignoreRoutesWithLinkdown: Bool?
    /// `NETCONFA_FORWARDING`, when the message carries it.
    public var forwarding: Bool?

    /// Creates a description (for tests and decoders).
    public init(
        family: UInt8, interfaceIndex: Int32? = nil, ignoreRoutesWithLinkdown: Bool? = nil, forwarding: Bool? = nil
    ) {
        self.family = family
        self.interfaceIndex = interfaceIndex
        self.ignoreRoutesWithLinkdown = ignoreRoutesWithLinkdown
        self.forwarding = forwarding
    }

    /// Decodes the payload of a netconf message.
    public static func decode(_ payload: ArraySlice<UInt8>) throws(NetlinkError) -> NetconfMessage {
        let reader = ByteReader(payload)
        let size = MemoryLayout<netconfmsg>.size
        guard reader.count >= size else {
            throw NetlinkError(.truncated, "netconfmsg: \(reader.count) bytes, need \(size)")
        }
        var message = NetconfMessage(family: try reader.integer(UInt8.self, at: 0, "ncm_family"))
        // The attributes start at NLMSG_ALIGN(sizeof(struct netconfmsg)).
        let start = Int(rouse_nlmsg_align(UInt32(size)))
        guard reader.count >= start else { return message }
        for attribute in try NetlinkAttribute.parse(
            try reader.slice(at: start, length: reader.count - start, "netconfa"), "netconfa")
        {
            switch attribute.type {
            case RTNL.netconfaIfindex:
                message.interfaceIndex = try attribute.integer(Int32.self, "NETCONFA_IFINDEX")
            case RTNL.netconfaIgnoreRoutesWithLinkdown:
                message.ignoreRoutesWithLinkdown = try attribute.integer(Int32.self, "NETCONFA_IGNORE_ROUTES") != 0
            case RTNL.netconfaForwarding:
                message.forwarding = try attribute.integer(Int32.self, "NETCONFA_FORWARDING") != 0
            default: break
            }
        }
        return message
    }
}
