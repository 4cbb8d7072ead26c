import RouseNetlink
import RouseReachability
import Testing

/// A target that stays usable while its path changes gets exactly one `.changed` of kind `.path` per
/// change (NWPath's new path), and nothing for changes elsewhere.
@Suite("Reachability in network namespaces: path changes")
struct PathChangeScenarioTests {
    /// The events after `count` earlier ones, for one target, as (kind, reason) pairs plus source changes.
    static func kinds(_ recorder: EventRecorder, _ target: ReachabilityTarget, after count: Int) -> [String] {
        recorder.events.dropFirst(count).compactMap { event in
            switch event {
            case .changed(let change) where change.target == target: return "\(change.kind.rawValue)"
            case .sourceAddressChanged(let change) where change.target == target: return "source"
            default: return nil
            }
        }
    }

    @Test("The default route moves to another interface: one path change (interface, gateway and source)")
    func routeMovesToAnotherInterface() throws {
        let ns = try NetworkNamespaceFixture("pmove")
        defer { ns.delete() }
        try KernelRuleScenarioTests.twoUplinks(ns)
        try ns.ip("route add default via 10.1.0.1")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target])
        defer { monitor.stop() }
        let start = recorder.events.count

        try ns.ip("route replace default via 10.2.0.1")
        #expect(recorder.waitFor(target) { $0.path.interface?.name == "veth2" })
        #expect(monitor.sync())
        #expect(Self.kinds(recorder, target, after: start) == ["path", "source"])
        let change = try #require(recorder.changes(target).last)
        #expect(change.reason == "egress moved from veth0 to veth2")
        #expect(change.previous?.path.gateway == address("10.1.0.1"))
        #expect(change.result.path.gateway == address("10.2.0.1"))
        #expect(change.result.path.sourceAddress == address("10.2.0.2"))
        #expect(KernelWitness.connect(in: ns, to: "198.51.100.7").mtu == 1400)

        // Unrelated churn afterwards: an address and a route elsewhere, a new link.
        let settled = recorder.events.count
        try ns.ip("addr add 10.1.0.3/24 dev veth0")
        try ns.ip("route add 192.0.2.0/24 via 10.1.0.1")
        try ns.ip("link add vx0 type veth peer name vy0")
        #expect(monitor.sync())
        #expect(recorder.events.count == settled)
    }

    @Test("A point-to-point default without an address takes over (tun with carrier): one path change")
    func pointToPointDefault() throws {
        let ns = try NetworkNamespaceFixture("pptp")
        defer { ns.delete() }
        try KernelRuleScenarioTests.twoUplinks(ns)
        try ns.ip("route add default via 10.1.0.1 metric 100")
        try ns.ip("tuntap add dev tun0 mode tun")
        let tun = try TunAttachment(ns, name: "tun0")
        defer { tun.detach() }
        try ns.ip("link set tun0 up")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target])
        defer { monitor.stop() }
        let start = recorder.events.count

        try ns.ip("route add default dev tun0 metric 10")
        #expect(recorder.waitFor(target) { $0.path.interface?.name == "tun0" })
        #expect(monitor.sync())
        #expect(Self.kinds(recorder, target, after: start) == ["path"])
        let result = try #require(monitor.result(for: target))
        #expect(result.path.status == .satisfied)
        #expect(result.flags == [.reachable, .isDirect, .transientConnection])
        #expect(result.path.gateway == nil)
        // No address on tun0: the kernel sources from veth0's address, as before.
        #expect(result.path.sourceAddress == address("10.1.0.2"))
        #expect(KernelWitness.routeGet(ns, "198.51.100.7")?.contains("dev tun0") == true)
        #expect(KernelWitness.connect(in: ns, to: "198.51.100.7").source == address("10.1.0.2"))
    }

    @Test("A VPN split default appears over a connected tunnel: one path change per watched target")
    func vpnSplitDefault() throws {
        let ns = try NetworkNamespaceFixture("psplit")
        defer { ns.delete() }
        try KernelRuleScenarioTests.twoUplinks(ns)
        try ns.ip("route add default via 10.1.0.1")
        try ns.ip("tuntap add dev tun0 mode tun")
        let tun = try TunAttachment(ns, name: "tun0")
        defer { tun.detach() }
        try ns.ip("link set tun0 up")
        try ns.ip("addr add 10.8.0.2 peer 10.8.0.1 dev tun0")
        let high = ReachabilityTarget.address(address("198.51.100.7"))
        let low = ReachabilityTarget.address(address("93.184.216.34"))
        let local = ReachabilityTarget.address(address("10.1.0.9"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [high, low, local])
        defer { monitor.stop() }
        let start = recorder.events.count

        try ns.ip("route add 0.0.0.0/1 dev tun0")
        try ns.ip("route add 128.0.0.0/1 dev tun0")
        #expect(recorder.waitFor(high) { $0.path.interface?.name == "tun0" })
        #expect(recorder.waitFor(low) { $0.path.interface?.name == "tun0" })
        #expect(monitor.sync())
        #expect(Self.kinds(recorder, high, after: start) == ["path", "source"])
        #expect(Self.kinds(recorder, low, after: start) == ["path", "source"])
        #expect(Self.kinds(recorder, local, after: start).isEmpty, "the directly attached target keeps veth0")
        #expect(monitor.result(for: high)?.path.sourceAddress == address("10.8.0.2"))
        #expect(monitor.result(for: high)?.isUsable == true)
        #expect(KernelWitness.connect(in: ns, to: "198.51.100.7").source == address("10.8.0.2"))
    }
}
