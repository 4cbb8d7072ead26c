import RouseNetlink
import RouseSystem

/// The questions a decision asks the kernel. The monitor answers them with `RTM_GETROUTE` and a UDP
/// `connect` in the monitored namespace; tests answer them from tables.
public protocol RouteOracle {
    /// `RTM_GETROUTE` (`ip route get DST [from SRC]`): the route the FIB resolves, after policy rules.
    func route(_ query: RouteQuery) -> RouteLookup
    /// `RTM_GETROUTE` with `RTM_F_FIB_MATCH` (`ip route get fibmatch …`): the matched FIB entry itself,
    /// with its prefix, table, `RTA_NH_ID` and, for an expiring IPv6 route, `RTA_CACHEINFO` expiry.
    func fibEntry(_ query: RouteQuery) -> RouteLookup
    /// `connect(2)` of an unbound UDP socket toward `destination`: the source the kernel chose, or its errno.
    func connectOutcome(toward destination: IPAddress) -> NetlinkSystem.ConnectOutcome
}

/// The route a new connection toward a query takes, asked the way the kernel's `connect()` asks it.
/// `ip route get DST` alone is one FIB lookup without a source; `connect()` of an unbound socket is not:
///
/// - IPv4 (`ip_route_connect`, include/net/route.h): a first lookup picks the source, then the route is
///   looked up again *from that source* (`ip_route_output_flow` with `saddr` set). Rules that match on
///   the source (`ip rule add from 10.1.0.2 table 100`, `… from 10.1.0.2 unreachable`) only apply to
///   the second lookup, which is the one the socket uses.
/// - IPv6 (`ip6_dst_lookup_tail`, net/ipv6/ip6_output.c): the first lookup, without a source, is kept
///   when it succeeds. When it fails ("erroneous initial result") the kernel picks a source anyway
///   (`ipv6_dev_get_saddr` over every interface) and looks up again with it, which is how source-specific
///   routes (`ip -6 route add default from 2001:db8:2::/64 via …`) without a `from ::/0` default are
///   reached. That source selection has no netlink request; a UDP `connect` (nothing is sent) runs the
///   whole algorithm and tells the source, and a lookup from it tells the route.
/// - A bound socket (an address pair) does one lookup from its address, in both families.
public struct KernelPath: Sendable, Equatable {
    /// The query the final answer was looked up with (with the kernel's chosen source, if any).
    public var query: RouteQuery
    /// The final answer.
    public var lookup: RouteLookup
    /// The source the kernel chose for an unbound socket, when it was needed to find the route.
    public var chosenSource: IPAddress?

    /// Creates a path (tests).
    public init(query: RouteQuery, lookup: RouteLookup, chosenSource: IPAddress? = nil) {
        self.query = query
        self.lookup = lookup
        self.chosenSource = chosenSource
    }

    /// Asks `oracle` the way `connect()` would for `query`.
    public static func resolve(_ query: RouteQuery, oracle: some RouteOracle) -> KernelPath {
        let first = oracle.route(query)
        guard query.source == nil else { return KernelPath(query: query, lookup: first) }
        switch query.destination.family {
        case .v4:
            guard case .route(let route) = first, route.kind == .unicast || route.kind == .local,
                let source = route.preferredSource, !source.isUnspecified
            else { return KernelPath(query: query, lookup: first) }
            let second = RouteQuery(destination: query.destination, source: source)
            return KernelPath(query: second, lookup: oracle.route(second), chosenSource: source)
        case .v6:
            if case .route = first { return KernelPath(query: query, lookup: first) }
            switch oracle.connectOutcome(toward: query.destination) {
            case .failed(let code):
                return KernelPath(query: query, lookup: .failed(errno: code))
            case .source(let source):
                let second = RouteQuery(destination: query.destination, source: source)
                return KernelPath(query: second, lookup: oracle.route(second), chosenSource: source)
            }
        }
    }

    /// Seconds until the chosen route stops matching, for an expiring IPv6 route (`RTF_EXPIRES`), asked
    /// with a FIB-match lookup: the kernel skips an expired route at once (`fib6_check_expired` in
    /// `__find_rr_leaf`) but announces nothing until its garbage collector deletes it, up to
    /// `net.ipv6.route.gc_interval` later. Nil when the route does not expire (or for IPv4, whose
    /// routes never do).
    public func secondsUntilExpiry(oracle: some RouteOracle) -> Double? {
        guard query.destination.family == .v6, case .route(let route) = lookup, route.kind == .unicast,
            case .route(let entry) = oracle.fibEntry(query), let ticks = entry.expiresTicks
        else { return nil }
        return max(0, Double(ticks) / Sys.clockTicksPerSecond)
    }
}

/// A `RouteOracle` from closures (tests, and callers that only have `RTM_GETROUTE` answers): no FIB
/// entries (so no expiry), and `connect` fails with `ENETUNREACH`.
public struct ClosureRouteOracle: RouteOracle {
    let routeAnswer: (RouteQuery) -> RouteLookup
    let fibAnswer: (RouteQuery) -> RouteLookup
    let connectAnswer: (IPAddress) -> NetlinkSystem.ConnectOutcome

    /// Creates an oracle.
    public init(
        route: @escaping (RouteQuery) -> RouteLookup,
        fibEntry: @escaping (RouteQuery) -> RouteLookup = { _ in .failed(errno: PathDecision.enetunreach) },
        connect: @escaping (IPAddress) -> NetlinkSystem.ConnectOutcome = { _ in
            .failed(errno: PathDecision.enetunreach)
        }
    ) {
        routeAnswer = route
        fibAnswer = fibEntry
        connectAnswer = connect
    }

    public func route(_ query: RouteQuery) -> RouteLookup { routeAnswer(query) }
    public func fibEntry(_ query: RouteQuery) -> RouteLookup { fibAnswer(query) }
    public func connectOutcome(toward destination: IPAddress) -> NetlinkSystem.ConnectOutcome {
        connectAnswer(destination)
    }
}
