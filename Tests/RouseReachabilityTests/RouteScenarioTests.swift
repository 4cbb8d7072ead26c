import RouseNetlink
import RouseReachability
import Testing

@Suite("Reachability in network namespaces: routes, addresses, policy")
struct RouteScenarioTests {
    @Test("Default route removed while a host route to the target remains: target unchanged, any-network lost")
    func defaultRemovedHostRouteRemains() throws {
        let ns = try NetworkNamespaceFixture("host")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("route add default via 10.1.0.1")
        try ns.ip("route add 198.51.100.7/32 via 10.1.0.1")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let any = ReachabilityTarget.anyNetwork
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target, any])
        defer { monitor.stop() }
        #expect(recorder.changes(any).first?.result.path.status == .satisfied)
        #expect(recorder.changes(any).first?.result.path.supportsIPv4 == true)
        #expect(recorder.changes(any).first?.result.path.supportsIPv6 == false)

        try ns.ip("route del default")
        #expect(recorder.waitFor(any) { $0.path.status == .unsatisfied(.noRoute) })
        #expect(monitor.sync())
        #expect(recorder.changes(any).count == 2)
        #expect(recorder.changes(target).count == 1)
        #expect(monitor.result(for: target)?.path.status == .satisfied)
        #expect(monitor.result(for: target)?.flags == [.reachable])
    }

    @Test("Only a host route, no default route: the target is reachable, the any-network target is not")
    func onlyHostRoute() throws {
        let ns = try NetworkNamespaceFixture("only")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("route add 198.51.100.7/32 via 10.1.0.1")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let other = ReachabilityTarget.address(address("198.51.100.8"))
        let any = ReachabilityTarget.anyNetwork
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target, other, any])
        defer { monitor.stop() }
        #expect(monitor.result(for: target)?.flags == [.reachable])
        #expect(monitor.result(for: target)?.path.gateway == address("10.1.0.1"))
        #expect(monitor.result(for: other)?.path.status == .unsatisfied(.noRoute))
        #expect(monitor.result(for: any)?.path.status == .unsatisfied(.noRoute))
        #expect(recorder.events.count == 3)
    }

    @Test("IPv6-only network: the any-network target is satisfied with IPv6 and not IPv4")
    func ipv6Only() throws {
        let ns = try NetworkNamespaceFixture("v6o")
        defer { ns.delete() }
        try ns.addVeth(address: "2001:db8:1::2/64 nodad")
        try ns.ip("-6 route add default via 2001:db8:1::1")
        let any = ReachabilityTarget.anyNetwork
        let v4 = ReachabilityTarget.address(address("198.51.100.7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [any, v4])
        defer { monitor.stop() }
        let result = try #require(monitor.result(for: any))
        #expect(result.path.status == .satisfied)
        #expect(result.flags == [.reachable])
        #expect(result.path.supportsIPv6)
        #expect(!result.path.supportsIPv4)
        #expect(monitor.result(for: v4)?.path.status == .unsatisfied(.noRoute))
        #expect(recorder.events.count == 2)
    }

    @Test("Link-local-only addresses are not usable; a global address makes the path usable (one notification)")
    func linkLocalOnly() throws {
        let ns = try NetworkNamespaceFixture("ll")
        defer { ns.delete() }
        try ns.addVeth(address: "fe80::2/64 nodad")
        try ns.ip("-6 route add default via fe80::1 dev veth0")
        let target = ReachabilityTarget.address(address("2001:db8:ffff::7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target])
        defer { monitor.stop() }
        let initial = try #require(monitor.result(for: target))
        #expect(initial.path.status == .unsatisfied(.noSourceAddress))
        #expect(initial.flags == [])
        #expect(!initial.isUsable)

        try ns.ip("addr add 2001:db8:1::2/64 dev veth0 nodad")
        #expect(recorder.waitFor(target) { $0.path.status == .satisfied })
        #expect(monitor.sync())
        #expect(
            recorder.changes(target).count == 2, "\(recorder.changes(target).map { "\($0.result) \($0.result.path)" })")
        #expect(monitor.result(for: target)?.path.sourceAddress == address("2001:db8:1::2"))
        #expect(monitor.result(for: target)?.path.gateway == address("fe80::1"))
    }

    @Test("Directly attached target (isDirect) and a local address (isLocalAddress)")
    func directAndLocal() throws {
        let ns = try NetworkNamespaceFixture("dir")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        let direct = ReachabilityTarget.address(address("10.1.0.9"))
        let local = ReachabilityTarget.address(address("10.1.0.2"))
        let (monitor, _) = try startMonitor(in: ns, targets: [direct, local])
        defer { monitor.stop() }
        let directResult = try #require(monitor.result(for: direct))
        #expect(directResult.flags == [.reachable, .isDirect])
        #expect(directResult.path.gateway == nil)
        #expect(directResult.path.interface?.name == "veth0")
        let localResult = try #require(monitor.result(for: local))
        #expect(localResult.flags == [.reachable, .isLocalAddress, .isDirect])
        #expect(localResult.path.interface?.type == .loopback)
        #expect(localResult.path.status == .satisfied)
    }

    @Test("Address pair: the local address is removed (one notification; the plain target is untouched)")
    func addressRemoved() throws {
        let ns = try NetworkNamespaceFixture("adel")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("addr add 10.9.9.9/32 dev veth0")
        try ns.ip("route add default via 10.1.0.1")
        let pair = ReachabilityTarget.addressPair(local: address("10.9.9.9"), remote: address("198.51.100.7"))
        let plain = ReachabilityTarget.address(address("198.51.100.7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [pair, plain])
        defer { monitor.stop() }
        #expect(monitor.result(for: pair)?.path.status == .satisfied)
        #expect(monitor.result(for: pair)?.path.sourceAddress == address("10.9.9.9"))

        try ns.ip("addr del 10.9.9.9/32 dev veth0")
        #expect(recorder.waitFor(pair) { $0.path.status == .unsatisfied(.localAddressNotAvailable) })
        #expect(monitor.sync())
        #expect(recorder.changes(pair).count == 2)
        #expect(recorder.changes(pair).last?.reason == "local address removed")
        #expect(recorder.changes(plain).count == 1)
    }

    @Test("Preferred source address change: one path change and its source-address companion, same reachability")
    func preferredSourceChange() throws {
        let ns = try NetworkNamespaceFixture("src")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("addr add 10.1.0.3/24 dev veth0")
        try ns.ip("route add default via 10.1.0.1")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target])
        defer { monitor.stop() }
        #expect(monitor.result(for: target)?.path.sourceAddress == address("10.1.0.2"))

        try ns.ip("route replace default via 10.1.0.1 src 10.1.0.3")
        #expect(recorder.wait { _ in !recorder.sourceChanges(target).isEmpty })
        #expect(monitor.sync())
        let sources = recorder.sourceChanges(target)
        #expect(sources.count == 1)
        #expect(sources.first?.previous == address("10.1.0.2"))
        #expect(sources.first?.current == address("10.1.0.3"))
        #expect(recorder.changes(target).count == 2)
        #expect(recorder.changes(target).last?.kind == .path)
        #expect(recorder.changes(target).last?.result.flags == [.reachable])
        #expect(monitor.result(for: target)?.path.sourceAddress == address("10.1.0.3"))
    }

    @Test("Policy routing: a rule sends the target to another table (one notification; other target untouched)")
    func policyRule() throws {
        let ns = try NetworkNamespaceFixture("rule")
        defer { ns.delete() }
        try ns.addVeth("veth0", peer: "veth1", address: "10.1.0.2/24")
        try ns.addVeth("veth2", peer: "veth3", address: "10.2.0.2/24")
        try ns.ip("route add default via 10.1.0.1")
        try ns.ip("route add default via 10.2.0.1 table 100")
        let steered = ReachabilityTarget.address(address("198.51.100.7"))
        let other = ReachabilityTarget.address(address("203.0.113.9"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [steered, other])
        defer { monitor.stop() }
        #expect(monitor.result(for: steered)?.path.interface?.name == "veth0")

        try ns.ip("rule add to 198.51.100.0/24 table 100 priority 100")
        #expect(recorder.waitFor(steered) { $0.path.interface?.name == "veth2" })
        #expect(monitor.sync())
        #expect(recorder.changes(steered).count == 2)
        #expect(recorder.changes(steered).last?.result.path.gateway == address("10.2.0.1"))
        #expect(recorder.changes(other).count == 1)

        try ns.ip("rule del to 198.51.100.0/24 table 100 priority 100")
        #expect(recorder.waitFor(steered) { $0.path.interface?.name == "veth0" })
        #expect(monitor.sync())
        #expect(recorder.changes(steered).count == 3)
    }

    @Test("VPN-style split default (0.0.0.0/1 + 128.0.0.0/1) via a tun device without carrier")
    func vpnSplitDefault() throws {
        let ns = try NetworkNamespaceFixture("vpn")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("route add default via 10.1.0.1")
        try ns.ip("tuntap add dev tun0 mode tun")
        try ns.ip("link set tun0 up")
        try ns.ip("addr add 10.8.0.2 peer 10.8.0.1 dev tun0")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let low = ReachabilityTarget.address(address("93.184.216.34"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target, low])
        defer { monitor.stop() }
        #expect(monitor.result(for: target)?.path.interface?.name == "veth0")

        try ns.ip("route add 0.0.0.0/1 dev tun0")
        try ns.ip("route add 128.0.0.0/1 dev tun0")
        #expect(recorder.waitFor(target) { $0.path.interface?.name == "tun0" })
        #expect(recorder.waitFor(low) { $0.path.interface?.name == "tun0" })
        #expect(monitor.sync())
        let result = try #require(monitor.result(for: target))
        #expect(result.path.interface?.type == .tunnel)
        #expect(result.path.status == .requiresConnection)
        #expect(result.flags == [.reachable, .connectionRequired, .transientConnection])
        #expect(!result.isUsable)
        #expect(recorder.changes(target).count == 2)
        #expect(recorder.changes(low).count == 2)

        try ns.ip("route del 0.0.0.0/1 dev tun0")
        try ns.ip("route del 128.0.0.0/1 dev tun0")
        #expect(recorder.waitFor(target) { $0.path.interface?.name == "veth0" })
        #expect(monitor.sync())
        #expect(recorder.changes(target).count == 3)
        #expect(monitor.result(for: target)?.flags == [.reachable])
    }
}
