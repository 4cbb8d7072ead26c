import CRouseSys
import Glibc

/// Kernel constants from `<linux/rtnetlink.h>` and friends, converted once to the widths the wire
/// uses. The values come from the headers through the C shim; nothing here retypes a number.
package enum RTNL {
    // Message types.
    package static let newLink = UInt16(RTM_NEWLINK)
    package static let delLink = UInt16(RTM_DELLINK)
    package static let getLink = UInt16(RTM_GETLINK)
    package static let newAddress = UInt16(RTM_NEWADDR)
    package static let delAddress = UInt16(RTM_DELADDR)
    package static let getAddress = UInt16(RTM_GETADDR)
    package static let newRoute = UInt16(RTM_NEWROUTE)
    package static let delRoute = UInt16(RTM_DELROUTE)
    package static let getRoute = UInt16(RTM_GETROUTE)
    package static let newRule = UInt16(RTM_NEWRULE)
    package static let delRule = UInt16(RTM_DELRULE)
    package static let getRule = UInt16(RTM_GETRULE)
    package static let newNexthop = UInt16(RTM_NEWNEXTHOP)
    package static let delNexthop = UInt16(RTM_DELNEXTHOP)
    package static let newNetconf = UInt16(RTM_NEWNETCONF)
    package static let delNetconf = UInt16(RTM_DELNETCONF)
    package static let done = UInt16(NLMSG_DONE)
    package static let error = UInt16(NLMSG_ERROR)
    package static let noop = UInt16(NLMSG_NOOP)
    package static let overrun = UInt16(NLMSG_OVERRUN)

    // Header flags.
    package static let request = UInt16(NLM_F_REQUEST)
    package static let multi = UInt16(NLM_F_MULTI)
    package static let ack = UInt16(NLM_F_ACK)
    package static let dump = UInt16(NLM_F_DUMP)
    package static let dumpInterrupted = UInt16(NLM_F_DUMP_INTR)
    package static let create = UInt16(NLM_F_CREATE)
    package static let excl = UInt16(NLM_F_EXCL)

    // Multicast groups (the legacy bitmask form for bind: group N is bit N − 1, so groups 1…32 fit).
    /// The bind bit of an `RTNLGRP_*` group.
    static func bit(_ group: rtnetlink_groups) -> UInt32 { 1 << (UInt32(group.rawValue) - 1) }
    /// Links, addresses, routes and policy rules of both families; nexthop objects (`RTNLGRP_NEXTHOP`:
    /// deleting one removes its IPv4 routes with no `RTM_DELROUTE`); and the per-device configuration
    /// (`RTNLGRP_IPV4_NETCONF`/`IPV6_NETCONF`: `ignore_routes_with_linkdown` and `forwarding` change the
    /// lookup without any route or link message).
    package static let groups: UInt32 =
        bit(RTNLGRP_LINK) | bit(RTNLGRP_IPV4_IFADDR) | bit(RTNLGRP_IPV6_IFADDR) | bit(RTNLGRP_IPV4_ROUTE)
        | bit(RTNLGRP_IPV6_ROUTE) | bit(RTNLGRP_IPV4_RULE) | bit(RTNLGRP_IPV6_RULE) | bit(RTNLGRP_NEXTHOP)
        | bit(RTNLGRP_IPV4_NETCONF) | bit(RTNLGRP_IPV6_NETCONF)
    /// Link events only (used by the benchmark's floor comparison).
    package static let linkAndRouteGroups: UInt32 =
        UInt32(RTMGRP_LINK) | UInt32(RTMGRP_IPV4_ROUTE) | UInt32(RTMGRP_IPV6_ROUTE)

    // Link attributes.
    package static let iflaIfname = UInt16(IFLA_IFNAME)
    package static let iflaOperstate = UInt16(IFLA_OPERSTATE)
    package static let iflaLinkinfo = UInt16(IFLA_LINKINFO)
    package static let iflaInfoKind = UInt16(IFLA_INFO_KIND)
    package static let iflaMTU = UInt16(IFLA_MTU)
    package static let iflaCarrier = UInt16(IFLA_CARRIER)
    package static let iflaMaster = UInt16(IFLA_MASTER)
    package static let iflaWireless = UInt16(IFLA_WIRELESS)

    // Address attributes.
    package static let ifaAddress = UInt16(IFA_ADDRESS)
    package static let ifaLocal = UInt16(IFA_LOCAL)
    package static let ifaLabel = UInt16(IFA_LABEL)
    package static let ifaFlags = UInt16(IFA_FLAGS)

    // Route attributes.
    package static let rtaDst = UInt16(RTA_DST.rawValue)
    package static let rtaSrc = UInt16(RTA_SRC.rawValue)
    package static let rtaOif = UInt16(RTA_OIF.rawValue)
    package static let rtaGateway = UInt16(RTA_GATEWAY.rawValue)
    package static let rtaPriority = UInt16(RTA_PRIORITY.rawValue)
    package static let rtaPrefsrc = UInt16(RTA_PREFSRC.rawValue)
    package static let rtaMultipath = UInt16(RTA_MULTIPATH.rawValue)
    package static let rtaTable = UInt16(RTA_TABLE.rawValue)
    package static let rtaVia = UInt16(RTA_VIA.rawValue)
    package static let rtaCacheinfo = UInt16(RTA_CACHEINFO.rawValue)
    package static let rtaNexthopID = UInt16(RTA_NH_ID.rawValue)

    // Nexthop object attributes.
    package static let nhaID = UInt16(NHA_ID)
    package static let nhaGroup = UInt16(NHA_GROUP)
    package static let nhaBlackhole = UInt16(NHA_BLACKHOLE)
    package static let nhaOif = UInt16(NHA_OIF)
    package static let nhaGateway = UInt16(NHA_GATEWAY)

    // Per-device configuration attributes.
    package static let netconfaIfindex = UInt16(NETCONFA_IFINDEX)
    package static let netconfaForwarding = UInt16(NETCONFA_FORWARDING)
    package static let netconfaIgnoreRoutesWithLinkdown = UInt16(NETCONFA_IGNORE_ROUTES_WITH_LINKDOWN)

    // Rule attributes.
    package static let fraDst = UInt16(FRA_DST)
    package static let fraSrc = UInt16(FRA_SRC)
    package static let fraPriority = UInt16(FRA_PRIORITY)
    package static let fraTable = UInt16(FRA_TABLE)

    // Route types and scopes.
    package static let rtnUnicast = UInt8(RTN_UNICAST)
    package static let rtnLocal = UInt8(RTN_LOCAL)
    package static let rtnBlackhole = UInt8(RTN_BLACKHOLE)
    package static let rtnUnreachable = UInt8(RTN_UNREACHABLE)
    package static let rtnProhibit = UInt8(RTN_PROHIBIT)
    package static let rtTableMain = UInt8(RT_TABLE_MAIN.rawValue)
    package static let rtScopeUniverse = UInt8(RT_SCOPE_UNIVERSE.rawValue)
    package static let rtScopeLink = UInt8(RT_SCOPE_LINK.rawValue)
    package static let rtProtStatic = UInt8(RTPROT_STATIC)
    package static let rtmFCloned = UInt32(RTM_F_CLONED)
    package static let rtmFFibMatch = UInt32(RTM_F_FIB_MATCH)

    // Nexthop flags.
    package static let rtnhDead = UInt32(RTNH_F_DEAD)
    package static let rtnhLinkdown = UInt32(RTNH_F_LINKDOWN)
    package static let rtnhOnlink = UInt32(RTNH_F_ONLINK)

    // Interface flags and states.
    package static let iffUp = UInt32(IFF_UP)
    package static let iffRunning = UInt32(IFF_RUNNING)
    package static let iffLoopback = UInt32(IFF_LOOPBACK)
    package static let iffPointToPoint = UInt32(IFF_POINTOPOINT)
    package static let iffLowerUp = rouse_iff_lower_up()
    package static let operUp = rouse_if_oper_up()
    package static let operUnknown = rouse_if_oper_unknown()
    package static let operDown = rouse_if_oper_down()
    package static let operLowerLayerDown = rouse_if_oper_lowerlayerdown()
    package static let operDormant = rouse_if_oper_dormant()

    // Address flags.
    package static let ifaFTentative = UInt32(IFA_F_TENTATIVE)
    package static let ifaFDadFailed = UInt32(IFA_F_DADFAILED)
    package static let ifaFDeprecated = UInt32(IFA_F_DEPRECATED)
    package static let ifaFTemporary = UInt32(IFA_F_TEMPORARY)

    // ARP hardware types.
    package static let arphrdEther = UInt16(ARPHRD_ETHER)
    package static let arphrdLoopback = UInt16(ARPHRD_LOOPBACK)
    package static let arphrdPPP = UInt16(ARPHRD_PPP)
    package static let arphrdNone = UInt16(ARPHRD_NONE)
    package static let arphrdTunnel = UInt16(ARPHRD_TUNNEL)
    package static let arphrdTunnel6 = UInt16(ARPHRD_TUNNEL6)
    package static let arphrdSit = UInt16(ARPHRD_SIT)
    package static let arphrdIPGRE = UInt16(ARPHRD_IPGRE)
    package static let arphrdRawIP = UInt16(ARPHRD_RAWIP)
    package static let arphrdIEEE80211 = UInt16(ARPHRD_IEEE80211)

    // errno values the route lookup answers with.
    package static let networkUnreachable = ENETUNREACH
    package static let hostUnreachable = EHOSTUNREACH
    package static let invalidArgument = EINVAL
    package static let addressNotAvailable = EADDRNOTAVAIL
    package static let permissionDenied = EACCES

    // Families.
    package static let afInet = UInt8(AF_INET)
    package static let afInet6 = UInt8(AF_INET6)
    package static let afUnspec = UInt8(AF_UNSPEC)
}
