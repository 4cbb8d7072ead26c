import RouseNetlink
import RouseReachability
import Testing

@Suite("Targets and the evaluator state machine (no sockets)")
struct TargetAndEvaluatorTests {
    @Test(
        "Target parsing",
        arguments: [
            ("198.51.100.7", ReachabilityTarget.address(IPAddress("198.51.100.7") ?? .unspecified(.v4))),
            ("0.0.0.0", .anyNetwork), ("::", .anyNetwork), ("any", .anyNetwork),
            ("sip.Example.com", .host("sip.example.com")),
            (
                "10.0.0.1,198.51.100.7",
                .addressPair(
                    local: IPAddress("10.0.0.1") ?? .unspecified(.v4),
                    remote: IPAddress("198.51.100.7") ?? .unspecified(.v4))
            ),
        ])
    func parsing(_ text: String, _ expected: ReachabilityTarget) throws {
        #expect(try ReachabilityTarget(parsing: text) == expected)
    }

    @Test(
        "Bad targets are rejected with a clear message",
        arguments: ["", "1.2.3", "10.0.0.1,", "10.0.0.1,::1", "a..b", "-x.com", "ex ample"])
    func badTargets(_ text: String) {
        #expect(throws: ReachabilityError.self) { try ReachabilityTarget(parsing: text) }
    }

    static let eth = LinkMessage(index: 2, hardwareType: 1, flags: 0x1 | 0x40 | 0x10000, name: "eth0", operState: 6)
    static let classifier = InterfaceClassifier { _, _ in nil }

    static func route(via gateway: String?, source: String, index: Int32 = 2) -> RouteMessage {
        RouteMessage(
            family: 2, destinationLength: 32, type: 1, outputInterface: index, gateway: gateway.flatMap(IPAddress.init),
            preferredSource: IPAddress(source))
    }

    @Test("One change per decision change, none for unrelated events; source changes are their own event")
    func evaluator() throws {
        var evaluator = ReachabilityEvaluator(configuration: .init(classifier: Self.classifier))
        let target = ReachabilityTarget.address(try #require(IPAddress("198.51.100.7")))
        #expect(evaluator.watch(target).isEmpty)
        evaluator.apply(.newLink(Self.eth))
        let source = try #require(IPAddress("10.0.0.2"))
        evaluator.apply(.newAddress(AddressMessage(index: 2, prefixLength: 24, address: source)))
        var answer = RouteLookup.route(Self.route(via: "10.0.0.1", source: "10.0.0.2"))
        var actions = evaluator.evaluate(now: 0) { _ in answer }
        #expect(actions.count == 1)
        #expect(evaluator.result(for: target)?.flags == [.reachable])
        #expect(evaluator.result(for: target)?.path.interface == NetworkInterface(name: "eth0", index: 2, type: .wired))

        // Unrelated link: no action.
        evaluator.apply(.newLink(LinkMessage(index: 9, hardwareType: 1, flags: 0x1, name: "veth9", kind: "veth")))
        #expect(evaluator.needsEvaluation)
        actions = evaluator.evaluate(now: 1) { _ in answer }
        #expect(actions.isEmpty)

        // Carrier lost on eth0.
        var down = Self.eth
        down.flags = 0x1
        down.operState = 2
        evaluator.apply(.newLink(down))
        actions = evaluator.evaluate(now: 2) { _ in answer }
        #expect(actions.count == 1)
        #expect(evaluator.result(for: target)?.path.status == .unsatisfied(.noCarrier))

        // Back, and with a new source address: one path change, then its source-address companion.
        evaluator.apply(.newLink(Self.eth))
        _ = evaluator.evaluate(now: 3) { _ in answer }
        answer = .route(Self.route(via: "10.0.0.1", source: "10.0.0.3"))
        actions = evaluator.evaluate(now: 4) { _ in answer }
        #expect(actions.count == 2)
        guard case .emit(.changed(let path)) = actions.first,
            case .emit(.sourceAddressChanged(let change)) = actions.last
        else {
            Issue.record("expected a path change and a source change, got \(actions)")
            return
        }
        #expect(path.kind == .path)
        #expect(path.reason == "source changed from 10.0.0.2 to 10.0.0.3")
        #expect(change.current == IPAddress("10.0.0.3"))

        // No route.
        answer = .failed(errno: 101)
        actions = evaluator.evaluate(now: 5) { _ in answer }
        #expect(evaluator.result(for: target)?.path.status == .unsatisfied(.noRoute))
        #expect(actions.count == 1)
        guard case .emit(.changed(let lost)) = actions.first else { return }
        #expect(lost.kind == .reachability)
    }

    @Test("Interface types come from kind, hardware type and sysfs, not names")
    func classification() {
        let wifiSysfs = InterfaceClassifier { _, _ in .init(isWireless: true, deviceType: "wlan") }
        let wwanSysfs = InterfaceClassifier { _, _ in .init(isWireless: false, deviceType: "wwan") }
        let none = Self.classifier
        #expect(none.classify(LinkMessage(index: 1, hardwareType: 772, flags: 0x8, name: "lo")) == .loopback)
        #expect(
            none.classify(LinkMessage(index: 2, hardwareType: 65534, flags: 0x1, name: "wg0", kind: "wireguard"))
                == .tunnel)
        #expect(none.classify(LinkMessage(index: 3, hardwareType: 1, flags: 0x1, name: "tun0")) == .wired)
        #expect(wifiSysfs.classify(LinkMessage(index: 4, hardwareType: 1, flags: 0x1, name: "eth9")) == .wifi)
        #expect(wwanSysfs.classify(LinkMessage(index: 5, hardwareType: 1, flags: 0x1, name: "x")) == .cellular)
        #expect(none.classify(LinkMessage(index: 6, hardwareType: 512, flags: 0x1, name: "ppp0")) == .tunnel)
    }
}

@Suite("Stale kernel answers (announced-before-applied races)")
struct StaleAnswerTests {
    static let model: NetworkModel = {
        var model = NetworkModel()
        let classify: (LinkMessage) -> InterfaceType = { _ in .wired }
        model.apply(
            .newLink(LinkMessage(index: 2, hardwareType: 1, flags: 0x1 | 0x10000, name: "eth0")), classify: classify)
        model.apply(.newLink(LinkMessage(index: 3, hardwareType: 1, flags: 0, name: "eth1")), classify: classify)
        if let address = IPAddress("10.0.0.2") {
            model.apply(.newAddress(AddressMessage(index: 2, prefixLength: 24, address: address)), classify: classify)
        }
        return model
    }()

    static func answer(index: Int32, gateway: String, source: String) -> RouteMessage {
        RouteMessage(
            family: 2, destinationLength: 32, type: 1, outputInterface: index, gateway: IPAddress(gateway),
            preferredSource: IPAddress(source))
    }

    @Test("A just-deleted default route returned by a lookup is suspect; an unrelated one is not")
    func deletedRoute() throws {
        let query = RouteQuery(destination: try #require(IPAddress("198.51.100.7")))
        let deleted = RouteMessage(
            family: 2, destinationLength: 0, type: 1, outputInterface: 2, gateway: IPAddress("10.0.0.1"))
        let answer = Self.answer(index: 2, gateway: "10.0.0.1", source: "10.0.0.2")
        #expect(
            StaleAnswer.suspicion(of: answer, for: query, model: Self.model, deletedRoutes: [deleted])
                == .maybeDeleted(deleted))
        let other = Self.answer(index: 2, gateway: "10.0.0.254", source: "10.0.0.2")
        #expect(StaleAnswer.suspicion(of: other, for: query, model: Self.model, deletedRoutes: [deleted]) == nil)
        #expect(StaleAnswer.suspicion(of: answer, for: query, model: Self.model, deletedRoutes: []) == nil)
        var fibEntry = deleted
        fibEntry.table = 254
        #expect(StaleAnswer.isDeletedEntry(fibEntry, deleted))
        fibEntry.destinationLength = 1
        #expect(!StaleAnswer.isDeletedEntry(fibEntry, deleted))
    }

    @Test("A route via a link known to be down, or from a just-deleted source, is suspect")
    func downLinkAndDeletedSource() throws {
        let query = RouteQuery(destination: try #require(IPAddress("198.51.100.7")))
        let viaDown = Self.answer(index: 3, gateway: "10.1.0.1", source: "10.0.0.2")
        #expect(
            StaleAnswer.suspicion(of: viaDown, for: query, model: Self.model, deletedRoutes: [], linksWentDown: [3])
                == .interfaceDown)
        // A link that was already down before this burst: the model may simply lag; not suspect.
        #expect(StaleAnswer.suspicion(of: viaDown, for: query, model: Self.model, deletedRoutes: []) == nil)
        let fromGone = Self.answer(index: 2, gateway: "10.0.0.1", source: "10.0.0.9")
        let gone: Set<IPAddress> = [try #require(IPAddress("10.0.0.9"))]
        #expect(
            StaleAnswer.suspicion(
                of: fromGone, for: query, model: Self.model, deletedRoutes: [], deletedAddresses: gone)
                == .sourceRemoved)
        // A source the model does not know yet (its RTM_NEWADDR is still in flight) is not suspect.
        #expect(StaleAnswer.suspicion(of: fromGone, for: query, model: Self.model, deletedRoutes: []) == nil)
    }
}

@Suite("Flap damping (optional, off by default)")
struct FlapDampingTests {
    @Test("Losses at once; a recovery only after the hold-down; a flap inside it costs one notification")
    func holdDown() throws {
        let classifier = InterfaceClassifier { _, _ in nil }
        var evaluator = ReachabilityEvaluator(configuration: .init(classifier: classifier, recoveryHoldDown: 5))
        let target = ReachabilityTarget.address(try #require(IPAddress("198.51.100.7")))
        _ = evaluator.watch(target)
        evaluator.apply(.newLink(TargetAndEvaluatorTests.eth))
        let up = RouteLookup.route(TargetAndEvaluatorTests.route(via: "10.0.0.1", source: "10.0.0.2"))
        let down = RouteLookup.failed(errno: 101)
        var emitted = 0
        func run(_ now: Double, _ answer: RouteLookup) {
            emitted += evaluator.evaluate(now: now) { _ in answer }.count
        }
        run(0, up)
        #expect(emitted == 1)  // the initial value is never held
        run(1, down)
        #expect(emitted == 2)  // the loss, at once
        run(2, up)
        #expect(emitted == 2)  // recovery held
        #expect(evaluator.nextDeadline == 7)
        run(3, down)
        run(4, up)
        #expect(emitted == 2)  // flapping inside the hold-down: nothing more
        #expect(evaluator.nextDeadline == 9)
        run(8.9, up)
        #expect(emitted == 2)
        run(9, up)
        #expect(emitted == 3)  // stable for 5 s: the recovery
        #expect(evaluator.nextDeadline == nil)
        #expect(evaluator.result(for: target)?.isUsable == true)
    }

    @Test("Off by default: every change is delivered at once")
    func offByDefault() throws {
        var evaluator = ReachabilityEvaluator(configuration: .init(classifier: InterfaceClassifier { _, _ in nil }))
        let target = ReachabilityTarget.address(try #require(IPAddress("198.51.100.7")))
        _ = evaluator.watch(target)
        evaluator.apply(.newLink(TargetAndEvaluatorTests.eth))
        let up = RouteLookup.route(TargetAndEvaluatorTests.route(via: "10.0.0.1", source: "10.0.0.2"))
        var emitted = 0
        for (index, answer) in [up, .failed(errno: 101), up, .failed(errno: 101), up].enumerated() {
            emitted += evaluator.evaluate(now: Double(index)) { _ in answer }.count
        }
        #expect(emitted == 5)
        #expect(evaluator.nextDeadline == nil)
    }
}
