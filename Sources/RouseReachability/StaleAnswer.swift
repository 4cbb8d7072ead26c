import RouseNetlink

/// Detects route lookups that contradict events already received. The kernel sends some
/// notifications just *before* it applies the change (`RTM_DELROUTE` precedes unlinking the route;
/// `RTM_DELADDR` and a link going down precede the route flush), so a lookup made at once can return
/// the old route. The shell retries such a lookup briefly instead of deciding on stale data.
public enum StaleAnswer {
    /// Why a lookup answer is suspect.
    public enum Suspicion: Sendable, Equatable {
        /// The route's interface just went administratively down: the kernel is about to flush its routes.
        case interfaceDown
        /// The route's preferred source (or a local route's address) was just deleted.
        case sourceRemoved
        /// The answer looks like this just-deleted route; confirm with an `RTM_F_FIB_MATCH` lookup.
        case maybeDeleted(RouteMessage)
    }

    /// Why `route` (the kernel's answer to `query`) may be stale, or nil when it agrees with the model.
    public static func suspicion(
        of route: RouteMessage, for query: RouteQuery, model: NetworkModel, deletedRoutes: [RouteMessage],
        deletedAddresses: Set<IPAddress> = [], linksWentDown: Set<Int32> = []
    ) -> Suspicion? {
        if let index = route.outputInterface, route.kind == .unicast, linksWentDown.contains(index),
            model.links[index]?.isUp == false
        {
            return .interfaceDown
        }
        if route.kind == .local, deletedAddresses.contains(query.destination), !model.isLocal(query.destination) {
            return .sourceRemoved
        }
        if query.source == nil, let source = route.preferredSource, route.kind == .unicast,
            deletedAddresses.contains(source), !model.isLocal(source)
        {
            return .sourceRemoved
        }
        for deleted in deletedRoutes where matches(deleted, route, query) { return .maybeDeleted(deleted) }
        return nil
    }

    /// True when the FIB entry the kernel matched (`fibMatch`, from an `RTM_F_FIB_MATCH` lookup) is the
    /// deleted route itself.
    public static func isDeletedEntry(_ fibMatch: RouteMessage, _ deleted: RouteMessage) -> Bool {
        fibMatch.destinationLength == deleted.destinationLength && fibMatch.table == deleted.table
            && (fibMatch.destination ?? .unspecified(fibMatch.family == RTNL.afInet6 ? .v6 : .v4))
                == (deleted.destination ?? .unspecified(deleted.family == RTNL.afInet6 ? .v6 : .v4))
            && (fibMatch.priority ?? 0) == (deleted.priority ?? 0)
    }

    /// True when the FIB entry the kernel matched (`fibMatch`) refers to a nexthop object deleted since the
    /// last evaluation: `RTM_DELNEXTHOP` is sent before the routes using it are flushed.
    public static func usesDeletedNexthop(_ fibMatch: RouteMessage, _ deleted: Set<UInt32>) -> Bool {
        fibMatch.nexthopID.map { deleted.contains($0) } ?? false
    }

    static func matches(_ deleted: RouteMessage, _ route: RouteMessage, _ query: RouteQuery) -> Bool {
        guard deleted.family == route.family, deleted.table == route.table else { return false }
        if let destination = deleted.destination {
            guard query.destination.isIn(prefix: destination, length: deleted.destinationLength) else { return false }
        } else if deleted.destinationLength != 0 {
            return false
        }
        let deletedHops = deleted.nexthops
        let hops = route.nexthops
        if deletedHops.isEmpty || hops.isEmpty { return deletedHops.isEmpty == hops.isEmpty }
        return hops.contains { hop in
            deletedHops.contains { $0.interfaceIndex == hop.interfaceIndex && $0.gateway == hop.gateway }
        }
    }
}
