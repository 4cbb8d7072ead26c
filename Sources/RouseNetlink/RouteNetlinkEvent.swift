/// A netlink message classified and decoded: what the monitor acts on.
public enum RouteNetlinkEvent: Sendable, Equatable {
    /// `RTM_NEWLINK`.
    case newLink(LinkMessage)
    /// `RTM_DELLINK`.
    case deleteLink(LinkMessage)
    /// `RTM_NEWADDR`.
    case newAddress(AddressMessage)
    /// `RTM_DELADDR`.
    case deleteAddress(AddressMessage)
    /// `RTM_NEWROUTE`.
    case newRoute(RouteMessage)
    /// `RTM_DELROUTE`.
    case deleteRoute(RouteMessage)
    /// `RTM_NEWRULE` / `RTM_DELRULE`.
    case rule(RuleMessage, deleted: Bool)
    /// `RTM_NEWNEXTHOP` / `RTM_DELNEXTHOP`.
    case nexthop(NexthopMessage, deleted: Bool)
    /// `RTM_NEWNETCONF` / `RTM_DELNETCONF`.
    case netconf(NetconfMessage)
    /// `NLMSG_DONE`: the end of a dump with this sequence number.
    case done(sequence: UInt32)
    /// `NLMSG_ERROR`: errno 0 is an acknowledgement.
    case error(errno: Int32, sequence: UInt32)
    /// Any other type (`NLMSG_NOOP`, neighbour messages, …), kept so callers can count it.
    case other(type: UInt16)

    /// Decodes one message; malformed payloads throw a `NetlinkError` naming the structure.
    public static func decode(_ message: NetlinkMessage) throws(NetlinkError) -> RouteNetlinkEvent {
        switch message.type {
        case RTNL.newLink: return .newLink(try LinkMessage.decode(message.payload))
        case RTNL.delLink: return .deleteLink(try LinkMessage.decode(message.payload))
        case RTNL.newAddress: return .newAddress(try AddressMessage.decode(message.payload))
        case RTNL.delAddress: return .deleteAddress(try AddressMessage.decode(message.payload))
        case RTNL.newRoute: return .newRoute(try RouteMessage.decode(message.payload))
        case RTNL.delRoute: return .deleteRoute(try RouteMessage.decode(message.payload))
        case RTNL.newRule: return .rule(try RuleMessage.decode(message.payload), deleted: false)
        case RTNL.delRule: return .rule(try RuleMessage.decode(message.payload), deleted: true)
        case RTNL.newNexthop: return .nexthop(try NexthopMessage.decode(message.payload), deleted: false)
        case RTNL.delNexthop: return .nexthop(try NexthopMessage.decode(message.payload), deleted: true)
        case RTNL.newNetconf, RTNL.delNetconf: return .netconf(try NetconfMessage.decode(message.payload))
        case RTNL.done: return .done(sequence: message.sequence)
        case RTNL.error: return .error(errno: try message.errorCode(), sequence: message.sequence)
        default: return .other(type: message.type)
        }
    }
}
