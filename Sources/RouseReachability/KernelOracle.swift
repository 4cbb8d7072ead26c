import Logging
import RouseNetlink
import RouseSystem

/// The monitor thread's `RouteOracle`: `RTM_GETROUTE` on its query socket and a UDP `connect` in its
/// namespace. A lookup that contradicts events already received is re-asked briefly (`StaleAnswer`):
/// the kernel announces some changes just before it applies them. Used on the monitor thread only.
final class KernelOracle: RouteOracle {
    private let socket: NetlinkSocket
    private let logger: Logger
    private let model: NetworkModel
    private let deletedRoutes: [RouteMessage]
    private let deletedAddresses: Set<IPAddress>
    private let linksWentDown: Set<Int32>
    private let deletedNexthops: Set<UInt32>
    /// Counters, read back by the loop after the evaluation.
    private(set) var routeLookups = 0
    private(set) var staleRetries = 0
    private(set) var connectProbes = 0

    /// At most this many re-asks, this far apart, for an answer that contradicts received events
    /// (the kernel finishes within microseconds; the bound keeps a persistent contradiction cheap).
    static let staleRetries = 50
    static let staleRetryPause = 0.00002

    init(socket: NetlinkSocket, logger: Logger, evaluator: ReachabilityEvaluator) {
        self.socket = socket
        self.logger = logger
        model = evaluator.model
        deletedRoutes = evaluator.deletedRoutes
        deletedAddresses = evaluator.deletedAddresses
        linksWentDown = evaluator.linksWentDown
        deletedNexthops = evaluator.deletedNexthops
    }

    func route(_ request: RouteQuery) -> RouteLookup {
        var answer = lookup(request)
        for _ in 0..<Self.staleRetries {
            guard case .route(let route) = answer, isStale(route, request) else { break }
            staleRetries += 1
            Sys.sleep(seconds: Self.staleRetryPause)
            answer = lookup(request)
        }
        return answer
    }

    func fibEntry(_ request: RouteQuery) -> RouteLookup {
        lookup(request, fibMatch: true)
    }

    func connectOutcome(toward destination: IPAddress) -> NetlinkSystem.ConnectOutcome {
        connectProbes += 1
        return NetlinkSystem.connectOutcome(toward: destination)
    }

    private func isStale(_ route: RouteMessage, _ request: RouteQuery) -> Bool {
        if let suspicion = StaleAnswer.suspicion(
            of: route, for: request, model: model, deletedRoutes: deletedRoutes, deletedAddresses: deletedAddresses,
            linksWentDown: linksWentDown)
        {
            guard case .maybeDeleted(let gone) = suspicion else { return true }
            // Another route with the same nexthop may legitimately match: ask which entry matched.
            guard case .route(let entry) = lookup(request, fibMatch: true) else { return true }
            return StaleAnswer.isDeletedEntry(entry, gone)
        }
        // A nexthop object was just deleted: its routes are flushed right after the announcement.
        guard !deletedNexthops.isEmpty, case .route(let entry) = lookup(request, fibMatch: true) else { return false }
        return StaleAnswer.usesDeletedNexthop(entry, deletedNexthops)
    }

    private func lookup(_ request: RouteQuery, fibMatch: Bool = false) -> RouteLookup {
        routeLookups += 1
        do throws(NetlinkError) {
            let replies = try socket.exchange(
                .routeLookup(
                    to: request.destination, from: request.source, fibMatch: fibMatch, sequence: socket.makeSequence()))
            for case .newRoute(let route) in replies { return .route(route) }
            return .failed(errno: PathDecision.enetunreach)
        } catch {
            if error.code == .kernel, let code = error.errno { return .failed(errno: code) }
            logger.warning(
                "route lookup failed", metadata: ["error": "\(error)", "destination": "\(request.destination)"])
            return .failed(errno: PathDecision.enetunreach)
        }
    }
}
