import RouseNetlink
import RouseReachability
import Testing

@Suite("Reachability in network namespaces: links")
struct LinkScenarioTests {
    @Test("IPv4: egress link down then up (routes flushed silently by the kernel)")
    func ipv4LinkDownUp() throws {
        let ns = try NetworkNamespaceFixture("l4")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("route add default via 10.1.0.1")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target])
        defer { monitor.stop() }

        let initial = try #require(recorder.changes(target).first)
        #expect(initial.result.path.status == .satisfied)
        #expect(initial.result.flags == [.reachable])
        #expect(initial.result.path.interface?.name == "veth0")
        #expect(initial.result.path.interface?.type == .wired)
        #expect(initial.result.path.gateway == address("10.1.0.1"))
        #expect(initial.result.path.sourceAddress == address("10.1.0.2"))
        #expect(initial.result.path.supportsIPv4)

        try ns.ip("link set veth0 down")
        #expect(recorder.waitFor(target) { linkIsGone($0) })
        #expect(monitor.sync())
        #expect(recorder.changes(target).count == 2)
        #expect(recorder.changes(target).last?.result.flags == [])
        #expect(recorder.changes(target).last?.reason == "link down on veth0")

        try ns.ip("link set veth0 up")
        try ns.ip("route add default via 10.1.0.1")
        #expect(recorder.waitFor(target) { $0.path.status == .satisfied })
        #expect(monitor.sync())
        #expect(recorder.changes(target).count == 3)
        #expect(recorder.changes(target).last?.result == initial.result)
        #expect(monitor.flags(for: target) == [.reachable])
    }
}

@Suite("Reachability in network namespaces: more links")
struct MoreLinkScenarioTests {
    @Test("IPv6: egress link down then up")
    func ipv6LinkDownUp() throws {
        let ns = try NetworkNamespaceFixture("l6")
        defer { ns.delete() }
        try ns.addVeth(address: "2001:db8:1::2/64 nodad")
        try ns.ip("-6 route add default via 2001:db8:1::1")
        let target = ReachabilityTarget.address(address("2001:db8:ffff::7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target])
        defer { monitor.stop() }

        let initial = try #require(recorder.changes(target).first)
        #expect(initial.result.path.status == .satisfied)
        #expect(initial.result.flags == [.reachable])
        #expect(initial.result.path.gateway == address("2001:db8:1::1"))
        #expect(initial.result.path.sourceAddress == address("2001:db8:1::2"))
        #expect(initial.result.path.supportsIPv6)
        #expect(!initial.result.path.supportsIPv4)

        try ns.ip("link set veth0 down")
        #expect(recorder.waitFor(target) { linkIsGone($0) })
        #expect(monitor.sync())
        #expect(recorder.changes(target).count == 2)

        try ns.ip("link set veth0 up")
        try ns.ip("addr add 2001:db8:1::2/64 dev veth0 nodad")
        try ns.ip("-6 route add default via 2001:db8:1::1")
        #expect(recorder.waitFor(target) { $0.path.status == .satisfied })
        #expect(monitor.sync())
        #expect(recorder.changes(target).count == 3)
        #expect(recorder.changes(target).last?.result == initial.result)
    }

    @Test("Carrier loss with routes kept (peer down ⇒ NO-CARRIER), then carrier back")
    func carrierLoss() throws {
        let ns = try NetworkNamespaceFixture("car")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("route add default via 10.1.0.1")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target])
        defer { monitor.stop() }
        #expect(recorder.changes(target).first?.result.path.status == .satisfied)

        try ns.ip("link set veth1 down")
        #expect(recorder.waitFor(target) { $0.path.status == .unsatisfied(.noCarrier) })
        #expect(monitor.sync())
        let down = recorder.changes(target)
        #expect(down.count == 2)
        #expect(down.last?.result.flags == [])
        #expect(down.last?.result.path.interface?.name == "veth0")
        #expect(down.last?.reason == "carrier lost on veth0")

        try ns.ip("link set veth1 up")
        #expect(recorder.waitFor(target) { $0.path.status == .satisfied })
        #expect(monitor.sync())
        #expect(recorder.changes(target).count == 3)
        #expect(recorder.changes(target).last?.result.flags == [.reachable])
    }

    @Test("Two default routes with metrics: the preferred one's link fails, egress moves (one notification)")
    func twoDefaultRoutes() throws {
        let ns = try NetworkNamespaceFixture("two")
        defer { ns.delete() }
        try ns.addVeth("veth0", peer: "veth1", address: "10.1.0.2/24")
        try ns.addVeth("veth2", peer: "veth3", address: "10.2.0.2/24")
        try ns.ip("route add default via 10.1.0.1 metric 100")
        try ns.ip("route add default via 10.2.0.1 metric 200")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let any = ReachabilityTarget.anyNetwork
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target, any])
        defer { monitor.stop() }
        #expect(recorder.changes(target).first?.result.path.interface?.name == "veth0")

        try ns.ip("link set veth0 down")
        #expect(recorder.waitFor(target) { $0.path.interface?.name == "veth2" })
        #expect(monitor.sync())
        let changes = recorder.changes(target)
        #expect(changes.count == 2)
        #expect(changes.last?.result.path.status == .satisfied)
        #expect(changes.last?.result.path.gateway == address("10.2.0.1"))
        #expect(changes.last?.result.path.sourceAddress == address("10.2.0.2"))
        #expect(changes.last?.reason == "egress moved from veth0 to veth2")
        #expect(recorder.changes(any).count == 2)
        #expect(recorder.changes(any).last?.result.path.status == .satisfied)
    }

    @Test("Unrelated bridge and veth churn ⇒ zero notifications")
    func unrelatedChurn() throws {
        let ns = try NetworkNamespaceFixture("churn")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("route add default via 10.1.0.1")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let any = ReachabilityTarget.anyNetwork
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target, any])
        defer { monitor.stop() }
        let before = recorder.events.count
        #expect(before == 2)

        for round in 0..<3 {
            try ns.ip("link add br\(round) type bridge")
            try ns.ip("link set br\(round) up")
            try ns.ip("addr add 172.17.\(round).1/16 dev br\(round)")
            try ns.ip("link add vx\(round) type veth peer name vy\(round)")
            try ns.ip("link set vx\(round) master br\(round)")
            try ns.ip("link set vx\(round) up")
            try ns.ip("link set vy\(round) up")
            try ns.ip("addr add 2001:db8:\(round + 10)::1/64 dev vy\(round) nodad")
            try ns.ip("link del vx\(round)")
            try ns.ip("link del br\(round)")
        }
        #expect(monitor.sync())
        #expect(recorder.events.count == before)
        #expect(monitor.statistics.messages > 20)
    }
}
