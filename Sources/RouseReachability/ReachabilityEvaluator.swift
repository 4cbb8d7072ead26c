import RouseNetlink

/// The monitor's decision logic as a value type: it takes kernel events, target changes and name
/// resolutions, and after each burst `evaluate` returns the actions to take (events to deliver, names
/// to resolve). It does no I/O: route lookups are answered by the closure the shell passes in.
public struct ReachabilityEvaluator: Sendable {
    /// Decision settings.
    public struct Configuration: Sendable {
        /// Destinations looked up for `.anyNetwork`: one global IPv4 and one global IPv6 address
        /// (documentation prefixes by default: the kernel routes them like any global address, and
        /// nothing is ever sent to them).
        public var anyNetworkProbes: [IPAddress]
        /// Interface names whose paths are reported as expensive (cellular ones always are).
        public var expensiveInterfaces: Set<String>
        /// How interfaces get their type.
        public var classifier: InterfaceClassifier
        /// Flap damping, off (nil) by default. When set, a recovery (unusable → usable) is delivered
        /// only once the path has stayed usable for this many seconds; losses are always delivered at
        /// once. A link flapping faster than the hold-down then costs one notification (the loss) until
        /// it settles. While a recovery is held the monitor wakes once at its deadline; otherwise it
        /// never wakes on its own.
        public var recoveryHoldDown: Double?

        /// The defaults: probes `203.0.113.1` and `2001:db8::1`, no expensive names, sysfs classifier,
        /// no flap damping.
        public init(
            anyNetworkProbes: [IPAddress] = [IPAddress.probeV4, IPAddress.probeV6],
            expensiveInterfaces: Set<String> = [], classifier: InterfaceClassifier = .system,
            recoveryHoldDown: Double? = nil
        ) {
            self.anyNetworkProbes = anyNetworkProbes
            self.expensiveInterfaces = expensiveInterfaces
            self.classifier = classifier
            self.recoveryHoldDown = recoveryHoldDown
        }
    }

    /// What the shell must do.
    public enum Action: Sendable, Equatable {
        /// Deliver this event to subscribers.
        case emit(ReachabilityEvent)
        /// Resolve this host name off the monitor thread, then call `resolved(host:generation:addresses:)`.
        case resolve(host: String, generation: Int)
    }

    struct TargetState: Sendable {
        var addresses: [IPAddress]?
        var resolutionFailed = false
        var generation = 0
        var result: ReachabilityResult?
        var recoveringSince: Double?
        /// When the expiring IPv6 route the target's path uses stops matching (same clock as `now`).
        var routeExpiresAt: Double?
    }

    /// The mirrored links and addresses.
    public private(set) var model = NetworkModel()
    /// Settings.
    public let configuration: Configuration
    private var targets: [ReachabilityTarget: TargetState] = [:]
    private var order: [ReachabilityTarget] = []
    private var signature: [String]?
    /// True when something happened since the last evaluation.
    public private(set) var needsEvaluation = true
    /// Routes deleted since the last evaluation: the kernel announces `RTM_DELROUTE` just before it
    /// unlinks the route, so a lookup racing the announcement may still return it (see `StaleAnswer`).
    public private(set) var deletedRoutes: [RouteMessage] = []
    /// Addresses deleted since the last evaluation (`RTM_DELADDR` precedes the route flush).
    public private(set) var deletedAddresses: Set<IPAddress> = []
    /// Links that went administratively down since the last evaluation (the kernel announces it
    /// before flushing their routes).
    public private(set) var linksWentDown: Set<Int32> = []
    /// Nexthop objects deleted since the last evaluation: the kernel announces `RTM_DELNEXTHOP` before
    /// it flushes the routes that use it (IPv4 ones silently), so a lookup racing it may still match.
    public private(set) var deletedNexthops: Set<UInt32> = []

    /// Creates an evaluator.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// When the shell must evaluate again although the kernel says nothing (same clock as
    /// `evaluate(now:)`): a held recovery (flap damping) is due, or an expiring IPv6 route that a target
    /// uses stops matching (the kernel announces that only when it garbage-collects the route, up to
    /// 30 s later). Nil when neither, so the monitor sleeps until the kernel speaks.
    public var nextDeadline: Double? {
        let hold = configuration.recoveryHoldDown
        return targets.values.compactMap { state -> Double? in
            let recovery = hold.flatMap { hold in state.recoveringSince.map { $0 + hold } }
            switch (recovery, state.routeExpiresAt) {
            case (let recovery?, let expiry?): return min(recovery, expiry)
            case (let recovery?, nil): return recovery
            case (nil, let expiry?): return expiry
            case (nil, nil): return nil
            }
        }.min()
    }

    /// The watched targets, in the order they were added.
    public var watchedTargets: [ReachabilityTarget] { order }

    /// The current result of a target (nil before its first evaluation or resolution).
    public func result(for target: ReachabilityTarget) -> ReachabilityResult? { targets[target]?.result }

    /// The latest result of every target that has one (including silent refinements, such as a
    /// new unsatisfied reason, that did not warrant a notification).
    public var results: [ReachabilityTarget: ReachabilityResult] {
        targets.compactMapValues { $0.result }
    }

    /// Starts watching a target; returns a resolution action for a host name.
    public mutating func watch(_ target: ReachabilityTarget) -> [Action] {
        guard targets[target] == nil else { return [] }
        var state = TargetState()
        var actions: [Action] = []
        if case .host(let name) = target {
            state.generation = 1
            actions.append(.resolve(host: name, generation: 1))
        }
        targets[target] = state
        order.append(target)
        needsEvaluation = true
        return actions
    }

    /// Stops watching a target.
    public mutating func unwatch(_ target: ReachabilityTarget) {
        targets[target] = nil
        order.removeAll { $0 == target }
    }

    /// Applies one kernel event to the model. Every link, address, route or rule event marks the
    /// targets for re-evaluation, since the kernel removes routes without telling (IPv4 link down).
    public mutating func apply(_ event: RouteNetlinkEvent) {
        let classifier = configuration.classifier
        if case .newLink(let link) = event, !link.isUp, model.links[link.index]?.isUp != false {
            linksWentDown.insert(link.index)
        }
        model.apply(event) { classifier.classify($0) }
        if case .deleteRoute(let route) = event, route.kind == .unicast { deletedRoutes.append(route) }
        if case .deleteAddress(let address) = event { deletedAddresses.insert(address.address) }
        if case .nexthop(let nexthop, deleted: true) = event { deletedNexthops.insert(nexthop.id) }
        switch event {
        case .newLink, .deleteLink, .newAddress, .deleteAddress, .newRoute, .deleteRoute, .rule, .nexthop, .netconf:
            needsEvaluation = true
        case .done, .error, .other:
            break
        }
    }

    /// Forgets the model before a re-dump (after `ENOBUFS`).
    public mutating func resetModel() {
        model.reset()
        needsEvaluation = true
    }

    /// A name resolution finished. Stale generations are ignored.
    public mutating func resolved(host: String, generation: Int, addresses: [IPAddress]?) {
        let target = ReachabilityTarget.host(host)
        guard var state = targets[target], state.generation == generation else { return }
        state.addresses = addresses ?? []
        state.resolutionFailed = addresses == nil || addresses?.isEmpty == true
        targets[target] = state
        needsEvaluation = true
    }

    /// Re-resolves every host name (the caller decided the network changed).
    public mutating func refreshNames() -> [Action] {
        var actions: [Action] = []
        for target in order {
            guard case .host(let name) = target, var state = targets[target] else { continue }
            state.generation += 1
            targets[target] = state
            actions.append(.resolve(host: name, generation: state.generation))
        }
        return actions
    }

    /// Evaluates every target once, asking `oracle` for each destination's route the way `connect()`
    /// would (`KernelPath`); returns one `.changed` per target whose result changed (of kind
    /// `.reachability` or `.path`; none for unrelated churn), a `.sourceAddressChanged` after it when
    /// the preferred source changed under a still-satisfied path, and name re-resolutions when the links
    /// or global addresses changed.
    ///
    /// `now` is what deadlines are measured on (seconds on a monotonic clock, which an NTP step does not move); `wall`
    /// is the UNIX time the events carry as their timestamps (`now` when nil, for callers with one clock).
    public mutating func evaluate(now: Double, wall: Double? = nil, oracle: some RouteOracle) -> [Action] {
        let timestamp = wall ?? now
        needsEvaluation = false
        var actions: [Action] = []
        for target in order {
            guard var state = targets[target], let (new, expiresIn) = compute(target, state, oracle) else { continue }
            state.routeExpiresAt = expiresIn.map { now + $0 + Self.expiryMargin }
            let old = state.result
            if let hold = configuration.recoveryHoldDown, let old, !old.isUsable, new.isUsable {
                let since = state.recoveringSince ?? now
                if now - since < hold {
                    state.recoveringSince = since
                    targets[target] = state
                    continue
                }
            }
            state.recoveringSince = nil
            state.result = new
            targets[target] = state
            if let kind = new.changeKind(from: old, familySupportMatters: target == .anyNetwork) {
                let reason = PathDecision.reason(from: old, to: new, model: model)
                actions.append(
                    .emit(
                        .changed(
                            ReachabilityChange(
                                target: target, result: new, previous: old, reason: reason, timestamp: timestamp,
                                kind: kind))))
            }
            if let before = old?.path.sourceAddress, let after = new.path.sourceAddress, before != after,
                old?.path.status == .satisfied, new.path.status == .satisfied
            {
                actions.append(
                    .emit(
                        .sourceAddressChanged(
                            SourceAddressChange(target: target, previous: before, current: after, timestamp: timestamp))
                    ))
            }
        }
        deletedRoutes = []
        deletedAddresses = []
        linksWentDown = []
        deletedNexthops = []
        let newSignature = model.resolutionSignature
        if let signature, signature != newSignature { actions += refreshNames() }
        signature = newSignature
        return actions
    }

    /// `evaluate(now:oracle:)` with route lookups only (`ClosureRouteOracle`: no FIB entries, and a
    /// failing `connect`).
    public mutating func evaluate(now: Double, lookup: @escaping (RouteQuery) -> RouteLookup) -> [Action] {
        evaluate(now: now, oracle: ClosureRouteOracle(route: lookup))
    }

    /// Past an expiring route's announced expiry (`rta_expires` counts whole clock ticks, rounded down),
    /// wait this much longer before asking again, so the kernel's jiffies have passed it too.
    static let expiryMargin = 0.011

    private func compute(_ target: ReachabilityTarget, _ state: TargetState, _ oracle: some RouteOracle)
        -> (ReachabilityResult, Double?)?
    {
        let expensive = configuration.expensiveInterfaces
        var expiresIn: Double?
        func decide(_ query: RouteQuery) -> ReachabilityResult {
            let kernel = KernelPath.resolve(query, oracle: oracle)
            let result = PathDecision.decide(query, kernel, model: model, expensiveInterfaces: expensive)
            if let seconds = kernel.secondsUntilExpiry(oracle: oracle) {
                expiresIn = min(expiresIn ?? seconds, seconds)
            }
            return result
        }
        switch target {
        case .address(let address):
            return (decide(RouteQuery(destination: address)), expiresIn)
        case .addressPair(let local, let remote):
            return (decide(RouteQuery(destination: remote, source: local)), expiresIn)
        case .anyNetwork:
            let results = configuration.anyNetworkProbes.map { decide(RouteQuery(destination: $0)) }
            guard var best = Self.best(results) else { return nil }
            best.path.supportsIPv4 = results.contains {
                $0.path.status == .satisfied && $0.path.remoteAddress?.family == .v4
            }
            best.path.supportsIPv6 = results.contains {
                $0.path.status == .satisfied && $0.path.remoteAddress?.family == .v6
            }
            best.path.remoteAddress = nil
            return (best, expiresIn)
        case .host:
            guard let addresses = state.addresses else { return nil }
            if state.resolutionFailed || addresses.isEmpty {
                return (ReachabilityResult(flags: [], path: NetworkPath(status: .unsatisfied(.nameNotResolved))), nil)
            }
            guard let best = Self.best(addresses.map { decide(RouteQuery(destination: $0)) }) else { return nil }
            return (best, expiresIn)
        }
    }

    /// The first satisfied result, else the first requiring a connection, else the first.
    static func best(_ results: [ReachabilityResult]) -> ReachabilityResult? {
        results.first { $0.path.status == .satisfied } ?? results.first { $0.path.status == .requiresConnection }
            ?? results.first
    }
}

extension IPAddress {
    /// `203.0.113.1` (TEST-NET-3): the IPv4 destination looked up for `.anyNetwork`.
    public static let probeV4 = IPAddress(bytes: [203, 0, 113, 1]) ?? .unspecified(.v4)
    /// `2001:db8::1` (documentation prefix): the IPv6 destination looked up for `.anyNetwork`.
    public static let probeV6 =
        IPAddress(bytes: [0x20, 0x01, 0x0d, 0xb8] + [UInt8](repeating: 0, count: 11) + [1]) ?? .unspecified(.v6)
}
