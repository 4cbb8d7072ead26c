import RouseNetlink
import RouseReachability
import RouseSystem
import Testing

@Suite("Asking the kernel the way connect() does, and expiring routes (no sockets)")
struct KernelPathTests {
    static func route(_ family: UInt8, index: Int32, gateway: String?, source: String?, expires: Int32? = nil)
        -> RouteMessage
    {
        RouteMessage(
            family: family, type: 1, outputInterface: index, gateway: gateway.flatMap(IPAddress.init),
            preferredSource: source.flatMap(IPAddress.init), expiresTicks: expires)
    }

    @Test("IPv4: the answer is the second lookup, from the source the first one picked")
    func ipv4TwoLookups() throws {
        var asked: [RouteQuery] = []
        let oracle = ClosureRouteOracle(route: { query in
            asked.append(query)
            return query.source == nil
                ? .route(Self.route(2, index: 3, gateway: "10.1.0.1", source: "10.1.0.2"))
                : .failed(errno: 13)  // a `from 10.1.0.2 prohibit` rule
        })
        let destination = try #require(IPAddress("198.51.100.7"))
        let path = KernelPath.resolve(RouteQuery(destination: destination), oracle: oracle)
        #expect(
            asked == [
                RouteQuery(destination: destination),
                RouteQuery(destination: destination, source: IPAddress("10.1.0.2")),
            ])
        #expect(path.lookup == .failed(errno: 13))
        #expect(path.chosenSource == IPAddress("10.1.0.2"))
    }

    @Test("IPv6: a successful plain lookup is kept; a failed one is retried from connect()'s source")
    func ipv6Fallback() throws {
        let destination = try #require(IPAddress("2001:db8:2:1::7"))
        let source = try #require(IPAddress("2001:db8:2::2"))
        let viaSource = Self.route(10, index: 5, gateway: "2001:db8:2::1", source: nil)
        let oracle = ClosureRouteOracle(
            route: { query in query.source == source ? .route(viaSource) : .failed(errno: 101) },
            connect: { _ in .source(source) })
        let path = KernelPath.resolve(RouteQuery(destination: destination), oracle: oracle)
        #expect(path.lookup == .route(viaSource))
        #expect(path.query.source == source)
        #expect(path.chosenSource == source)

        let plain = Self.route(10, index: 3, gateway: "2001:db8:1::1", source: "2001:db8:1::2")
        let kept = KernelPath.resolve(
            RouteQuery(destination: destination),
            oracle: ClosureRouteOracle(route: { _ in .route(plain) }, connect: { _ in .failed(errno: 101) }))
        #expect(kept.lookup == .route(plain))
        #expect(kept.chosenSource == nil)
    }

    @Test("An expiring IPv6 route sets the next deadline; past it the target is decided again")
    func expiryDeadline() throws {
        let eth = LinkMessage(index: 3, hardwareType: 1, flags: 0x1 | 0x40 | 0x10000, name: "eth0", operState: 6)
        var evaluator = ReachabilityEvaluator(configuration: .init(classifier: InterfaceClassifier { _, _ in nil }))
        let target = ReachabilityTarget.address(try #require(IPAddress("2001:db8:ffff::7")))
        _ = evaluator.watch(target)
        evaluator.apply(.newLink(eth))
        #expect(evaluator.nextDeadline == nil)
        let expiring = Self.route(10, index: 3, gateway: "2001:db8:1::1", source: "2001:db8:1::2", expires: 200)
        let oracle = ClosureRouteOracle(route: { _ in .route(expiring) }, fibEntry: { _ in .route(expiring) })
        _ = evaluator.evaluate(now: 1000, oracle: oracle)
        let deadline = try #require(evaluator.nextDeadline)
        #expect(deadline > 1000 + 200 / Sys.clockTicksPerSecond)
        #expect(deadline < 1000 + 200 / Sys.clockTicksPerSecond + 0.05)

        let lasting = Self.route(10, index: 3, gateway: "2001:db8:1::9", source: "2001:db8:1::2")
        let actions = evaluator.evaluate(now: deadline, oracle: ClosureRouteOracle(route: { _ in .route(lasting) }))
        #expect(evaluator.nextDeadline == nil)
        guard case .emit(.changed(let change)) = actions.first else {
            Issue.record("expected a change, got \(actions)")
            return
        }
        #expect(change.kind == .path)
        #expect(change.reason == "gateway changed to 2001:db8:1::9")
    }
}
