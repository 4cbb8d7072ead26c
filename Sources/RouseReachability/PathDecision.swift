import RouseNetlink

/// A route lookup to ask the kernel (`ip route get DESTINATION [from SOURCE]`).
public struct RouteQuery: Hashable, Sendable {
    /// The destination.
    public var destination: IPAddress
    /// The source, for address pairs.
    public var source: IPAddress?

    /// Creates a query.
    public init(destination: IPAddress, source: IPAddress? = nil) {
        self.destination = destination
        self.source = source
    }
}

/// The kernel's answer to a `RouteQuery`.
public enum RouteLookup: Sendable, Equatable {
    /// The route the FIB chose (`RTM_NEWROUTE` reply).
    case route(RouteMessage)
    /// The kernel refused (`ENETUNREACH`, `EHOSTUNREACH`, `EINVAL` for a non-local source, …).
    case failed(errno: Int32)
}

/// The decision for one destination: the kernel's chosen route, checked against the mirrored state
/// of the chosen interface (up, carrier), the nexthop flags and the source address.
public enum PathDecision {
    /// `ENETUNREACH` (from the C headers through the binding): no route.
    public static let enetunreach = RTNL.networkUnreachable
    static let einval = RTNL.invalidArgument
    static let eaddrnotavail = RTNL.addressNotAvailable
    static let eacces = RTNL.permissionDenied

    /// Decides the result for `query` (the target's own question) from the kernel's answer, asked the
    /// way `connect()` asks it (`KernelPath`), and the model.
    public static func decide(
        _ query: RouteQuery, _ kernel: KernelPath, model: NetworkModel, expensiveInterfaces: Set<String>
    ) -> ReachabilityResult {
        let destination = query.destination
        let lookup = kernel.lookup
        func unsatisfied(_ reason: NetworkPath.UnsatisfiedReason, _ interface: NetworkInterface? = nil)
            -> ReachabilityResult
        {
            ReachabilityResult(
                flags: [],
                path: NetworkPath(status: .unsatisfied(reason), interface: interface, remoteAddress: destination))
        }
        if let source = query.source, !model.isLocal(source) {
            return unsatisfied(.localAddressNotAvailable)
        }
        let route: RouteMessage
        switch lookup {
        case .failed(let code):
            // What the kernel answers for reject routes and rules: blackhole EINVAL, prohibit EACCES,
            // unreachable EHOSTUNREACH, no route ENETUNREACH (fib_props in net/ipv4/fib_semantics.c).
            if query.source != nil && code == eaddrnotavail { return unsatisfied(.localAddressNotAvailable) }
            if code == einval { return unsatisfied(.blackhole) }
            if code == eacces { return unsatisfied(.prohibited) }
            return unsatisfied(.noRoute)
        case .route(let found):
            route = found
        }
        switch route.kind {
        case .unreachable, .other: return unsatisfied(.noRoute)
        case .blackhole: return unsatisfied(.blackhole)
        case .prohibit: return unsatisfied(.prohibited)
        case .local:
            let interface = route.outputInterface.map { model.interface($0) }
            let path = NetworkPath(
                status: .satisfied, interface: interface, supportsIPv4: destination.family == .v4,
                supportsIPv6: destination.family == .v6, supportsDNS: true,
                sourceAddress: query.source ?? kernel.chosenSource ?? route.preferredSource ?? destination,
                remoteAddress: destination)
            return ReachabilityResult(flags: [.reachable, .isLocalAddress, .isDirect], path: path)
        case .unicast:
            break
        }
        guard let index = route.outputInterface ?? route.multipath.first?.interfaceIndex else {
            return unsatisfied(.noRoute)
        }
        let interface = model.interface(index)
        let link = model.links[index]
        if let link, !link.isUp { return unsatisfied(.linkDown, interface) }
        let hops = route.nexthops
        if !hops.isEmpty && !hops.contains(where: { $0.isAlive }) { return unsatisfied(.nexthopDown, interface) }
        let isTunnel = interface.type == .tunnel
        if let link, !link.hasCarrier {
            guard isTunnel else { return unsatisfied(.noCarrier, interface) }
            let path = NetworkPath(status: .requiresConnection, interface: interface, remoteAddress: destination)
            return ReachabilityResult(flags: [.reachable, .connectionRequired, .transientConnection], path: path)
        }
        guard let source = query.source ?? kernel.chosenSource ?? route.preferredSource,
            !(source.isLinkLocal && !destination.isLinkLocal)
        else {
            return unsatisfied(.noSourceAddress, interface)
        }
        var flags: ReachabilityFlags = [.reachable]
        if route.gateway == nil && hops.allSatisfy({ $0.gateway == nil }) { flags.insert(.isDirect) }
        if isTunnel { flags.insert(.transientConnection) }
        if interface.type == .cellular { flags.insert(.isWWAN) }
        let path = NetworkPath(
            status: .satisfied, interface: interface,
            isExpensive: interface.type == .cellular || expensiveInterfaces.contains(interface.name),
            // The kernel's chosen source proves its family is usable even before its RTM_NEWADDR arrives
            // (the kernel announces an IPv6 prefix route before the address).
            supportsIPv4: source.family == .v4 || !model.usableAddresses(on: index, family: .v4).isEmpty,
            supportsIPv6: (source.family == .v6 && !source.isLinkLocal)
                || !model.usableAddresses(on: index, family: .v6).isEmpty,
            supportsDNS: true, gateway: route.gateway ?? hops.first?.gateway, sourceAddress: source,
            remoteAddress: destination)
        return ReachabilityResult(flags: flags, path: path)
    }

    /// A human-readable reason for going from `old` to `new`.
    public static func reason(from old: ReachabilityResult?, to new: ReachabilityResult, model: NetworkModel) -> String
    {
        guard let old else { return "initial: \(new.path.status)" }
        let newName = new.path.interface?.name
        let oldName = old.path.interface?.name
        switch new.path.status {
        case .satisfied:
            if old.path.status != .satisfied { return "path via \(newName ?? "?") available" }
            if oldName != newName { return "egress moved from \(oldName ?? "?") to \(newName ?? "?")" }
            if old.path.gateway != new.path.gateway {
                return "gateway changed to \(new.path.gateway?.description ?? "none")"
            }
            if let before = old.path.sourceAddress, let after = new.path.sourceAddress, before != after {
                return "source changed from \(before) to \(after)"
            }
            return "path attributes changed on \(newName ?? "?")"
        case .requiresConnection:
            return "\(newName ?? "tunnel") needs a connection"
        case .unsatisfied(let why):
            switch why {
            case .noRoute:
                if let oldIndex = old.path.interface?.index {
                    if model.links[oldIndex] == nil { return "link \(oldName ?? "?") removed" }
                    if model.links[oldIndex]?.isUp == false { return "link down on \(oldName ?? "?")" }
                    if model.links[oldIndex]?.hasCarrier == false { return "carrier lost on \(oldName ?? "?")" }
                }
                return "no route to \(new.path.remoteAddress?.description ?? "target")"
            case .linkDown: return "link down on \(newName ?? "?")"
            case .noCarrier: return "carrier lost on \(newName ?? "?")"
            case .nexthopDown: return "nexthop down on \(newName ?? "?")"
            case .blackhole: return "blackhole route"
            case .prohibited: return "prohibit route"
            case .noSourceAddress: return "no usable source address on \(newName ?? "?")"
            case .localAddressNotAvailable: return "local address removed"
            case .nameNotResolved: return "name not resolved"
            }
        }
    }
}
