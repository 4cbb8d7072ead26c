import CRouseSys

/// One nexthop of a route (`struct rtnexthop` in `RTA_MULTIPATH`, or the route's single path).
public struct RouteNexthop: Sendable, Equatable, Hashable {
    /// `rtnh_ifindex`.
    public var interfaceIndex: Int32
    /// `rtnh_flags` (`RTNH_F_DEAD`, `RTNH_F_LINKDOWN`, `RTNH_F_ONLINK`, …).
    public var flags: UInt32
    /// `rtnh_hops` (weight − 1).
    public var hops: UInt8
    /// `RTA_GATEWAY` inside the nexthop.
    public var gateway: IPAddress?

    /// Creates a nexthop.
    public init(interfaceIndex: Int32, flags: UInt32 = 0, hops: UInt8 = 0, gateway: IPAddress? = nil) {
        self.interfaceIndex = interfaceIndex
        self.flags = flags
        self.hops = hops
        self.gateway = gateway
    }

    /// True unless the kernel marked it `RTNH_F_DEAD` or `RTNH_F_LINKDOWN`.
    public var isAlive: Bool { flags & (RTNL.rtnhDead | RTNL.rtnhLinkdown) == 0 }
    /// `RTNH_F_LINKDOWN`.
    public var isLinkDown: Bool { flags & RTNL.rtnhLinkdown != 0 }
    /// `RTNH_F_DEAD`.
    public var isDead: Bool { flags & RTNL.rtnhDead != 0 }
}

/// A decoded `RTM_NEWROUTE`/`RTM_DELROUTE` (also the answer to an `RTM_GETROUTE` lookup).
public struct RouteMessage: Sendable, Equatable {
    /// `rtm_family` as an address family (`AF_INET` / `AF_INET6`).
    public var family: UInt8
    /// `rtm_dst_len`.
    public var destinationLength: UInt8
    /// `rtm_src_len`.
    public var sourceLength: UInt8
    /// `RTA_TABLE` when present, else `rtm_table`.
    public var table: UInt32
    /// `rtm_protocol`.
    public var routeProtocol: UInt8
    /// `rtm_scope`.
    public var scope: UInt8
    /// `rtm_type` (`RTN_UNICAST`, `RTN_LOCAL`, `RTN_UNREACHABLE`, …).
    public var type: UInt8
    /// `rtm_flags` (also carries `RTNH_F_*` of a single-path route).
    public var flags: UInt32
    /// `RTA_DST`.
    public var destination: IPAddress?
    /// `RTA_OIF`.
    public var outputInterface: Int32?
    /// `RTA_GATEWAY`.
    public var gateway: IPAddress?
    /// `RTA_PREFSRC`.
    public var preferredSource: IPAddress?
    /// `RTA_PRIORITY` (the metric).
    public var priority: UInt32?
    /// `RTA_MULTIPATH`, decoded; empty for a single-path route.
    public var multipath: [RouteNexthop]
    /// `RTA_NH_ID`: the nexthop object (or group) the route refers to (`ip route … nhid N`).
    public var nexthopID: UInt32?
    /// `rta_expires` of `RTA_CACHEINFO`: clock ticks (`sysconf(_SC_CLK_TCK)`) until an expiring IPv6
    /// route (`RTF_EXPIRES`: `ip -6 route … expires N`, router-advertised routes) stops matching; nil
    /// when the route does not expire. The kernel skips an expired route at once but announces its
    /// deletion only when its garbage collector runs, up to `gc_interval` (30 s) later.
    public var expiresTicks: Int32?

    /// Creates a route description (for tests and decoders).
    public init(
        family: UInt8, destinationLength: UInt8 = 0, sourceLength: UInt8 = 0, table: UInt32 = 254,
        routeProtocol: UInt8 = 0, scope: UInt8 = 0, type: UInt8 = 1, flags: UInt32 = 0,
        destination: IPAddress? = nil, outputInterface: Int32? = nil, gateway: IPAddress? = nil,
        preferredSource: IPAddress? = nil, priority: UInt32? = nil, multipath: [RouteNexthop] = [],
        nexthopID: UInt32? = nil, expiresTicks: Int32? = nil
    ) {
        self.family = family
        self.destinationLength = destinationLength
        self.sourceLength = sourceLength
        self.table = table
        self.routeProtocol = routeProtocol
        self.scope = scope
        self.type = type
        self.flags = flags
        self.destination = destination
        self.outputInterface = outputInterface
        self.gateway = gateway
        self.preferredSource = preferredSource
        self.priority = priority
        self.multipath = multipath
        self.nexthopID = nexthopID
        self.expiresTicks = expiresTicks
    }

    /// The route's kind, from `rtm_type`.
    public enum Kind: Sendable, Equatable {
        case unicast
        case local
        case blackhole
        case unreachable
        case prohibit
        case other(UInt8)
    }

    /// `rtm_type` as a `Kind`.
    public var kind: Kind {
        switch type {
        case RTNL.rtnUnicast: return .unicast
        case RTNL.rtnLocal: return .local
        case RTNL.rtnBlackhole: return .blackhole
        case RTNL.rtnUnreachable: return .unreachable
        case RTNL.rtnProhibit: return .prohibit
        default: return .other(type)
        }
    }

    /// True for a default route (`/0`).
    public var isDefault: Bool { destinationLength == 0 }

    /// The paths of this route: the multipath nexthops, or one built from `RTA_OIF`/`RTA_GATEWAY`.
    public var nexthops: [RouteNexthop] {
        if !multipath.isEmpty { return multipath }
        guard let outputInterface else { return [] }
        return [RouteNexthop(interfaceIndex: outputInterface, flags: flags & 0xff, gateway: gateway)]
    }

    /// Decodes the payload of a route message.
    public static func decode(_ payload: ArraySlice<UInt8>) throws(NetlinkError) -> RouteMessage {
        let reader = ByteReader(payload)
        let size = MemoryLayout<rtmsg>.size
        guard reader.count >= size else {
            throw NetlinkError(.truncated, "rtmsg: \(reader.count) bytes, need \(size)")
        }
        var route = RouteMessage(
            family: try reader.integer(UInt8.self, at: 0, "rtm_family"),
            destinationLength: try reader.integer(UInt8.self, at: 1, "rtm_dst_len"),
            sourceLength: try reader.integer(UInt8.self, at: 2, "rtm_src_len"),
            table: UInt32(try reader.integer(UInt8.self, at: 4, "rtm_table")),
            routeProtocol: try reader.integer(UInt8.self, at: 5, "rtm_protocol"),
            scope: try reader.integer(UInt8.self, at: 6, "rtm_scope"),
            type: try reader.integer(UInt8.self, at: 7, "rtm_type"),
            flags: try reader.integer(UInt32.self, at: 8, "rtm_flags")
        )
        for attribute in try NetlinkAttribute.parse(
            try reader.slice(at: size, length: reader.count - size, "rta"), "rta")
        {
            switch attribute.type {
            case RTNL.rtaDst: route.destination = try attribute.address("RTA_DST")
            case RTNL.rtaOif: route.outputInterface = try attribute.integer(Int32.self, "RTA_OIF")
            case RTNL.rtaGateway: route.gateway = try attribute.address("RTA_GATEWAY")
            case RTNL.rtaPrefsrc: route.preferredSource = try attribute.address("RTA_PREFSRC")
            case RTNL.rtaPriority: route.priority = try attribute.integer(UInt32.self, "RTA_PRIORITY")
            case RTNL.rtaTable: route.table = try attribute.integer(UInt32.self, "RTA_TABLE")
            case RTNL.rtaMultipath: route.multipath = try decodeMultipath(attribute.payload)
            case RTNL.rtaNexthopID: route.nexthopID = try attribute.integer(UInt32.self, "RTA_NH_ID")
            case RTNL.rtaCacheinfo:
                // `struct rta_cacheinfo`: rta_clntref, rta_lastuse, then rta_expires (signed clock ticks).
                let expires = try ByteReader(attribute.payload).integer(Int32.self, at: 8, "rta_expires")
                route.expiresTicks = expires == 0 ? nil : expires
            default: break
            }
        }
        return route
    }

    /// Walks `RTA_MULTIPATH`: a run of `rtnexthop`, each followed by its own attributes.
    static func decodeMultipath(_ bytes: ArraySlice<UInt8>) throws(NetlinkError) -> [RouteNexthop] {
        let reader = ByteReader(bytes)
        let size = MemoryLayout<rtnexthop>.size
        var offset = 0
        var hops: [RouteNexthop] = []
        while offset < reader.count {
            guard reader.count - offset >= size else {
                throw NetlinkError(.truncated, "rtnexthop: \(reader.count - offset) bytes, need \(size)")
            }
            let length = Int(try reader.integer(UInt16.self, at: offset, "rtnh_len"))
            guard length >= size, offset + length <= reader.count else {
                throw NetlinkError(.badLength, "rtnexthop: rtnh_len \(length) with \(reader.count - offset) bytes left")
            }
            var hop = RouteNexthop(
                interfaceIndex: try reader.integer(Int32.self, at: offset + 4, "rtnh_ifindex"),
                flags: UInt32(try reader.integer(UInt8.self, at: offset + 2, "rtnh_flags")),
                hops: try reader.integer(UInt8.self, at: offset + 3, "rtnh_hops")
            )
            let nested = try reader.slice(at: offset + size, length: length - size, "rtnexthop attributes")
            for attribute in try NetlinkAttribute.parse(nested, "rtnexthop") where attribute.type == RTNL.rtaGateway {
                hop.gateway = try attribute.address("rtnexthop RTA_GATEWAY")
            }
            hops.append(hop)
            offset += Int(rouse_rtnh_align(UInt32(length)))
        }
        return hops
    }
}
