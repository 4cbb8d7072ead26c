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
        #expect(recorder.waitFor(target) { $0.path.status == .unsatisfied(.noRoute) })
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
