import Logging
import RouseNetlink
import RouseReachability
import Testing

@Suite("Reachability in network namespaces: API forms and kernel policy")
struct ApiScenarioTests {
    @Test("AsyncSequence form: the current value on subscribe, then exactly the changes")
    func asyncSequence() async throws {
        let ns = try NetworkNamespaceFixture("seq")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("route add default via 10.1.0.1")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let (monitor, _) = try startMonitor(in: ns, targets: [target])
        defer { monitor.stop() }

        var iterator = monitor.events().makeAsyncIterator()
        guard case .changed(let initial) = await iterator.next() else {
            Issue.record("no initial value")
            return
        }
        #expect(initial.previous == nil)
        #expect(initial.result.flags == [.reachable])

        try ns.ip("route del default")
        guard case .changed(let lost) = await iterator.next() else {
            Issue.record("no change")
            return
        }
        #expect(lost.result.path.status == .unsatisfied(.noRoute))
        #expect(lost.previous?.path.status == .satisfied)
        #expect(lost.reason == "no route to 198.51.100.7")
        #expect(monitor.flags(for: target) == [])
    }

    @Test("Starting in a namespace that does not exist fails with a clear error")
    func badNamespace() {
        let monitor = ReachabilityMonitor(
            configuration: .init(networkNamespacePath: "/run/netns/rouse-no-such-namespace"),
            logger: Logger(label: "rouse.test"))
        #expect {
            try monitor.start()
        } throws: { error in
            guard let error = error as? ReachabilityError else { return false }
            return error.code == .startFailed && error.description.contains("rouse-no-such-namespace")
        }
        monitor.stop()
    }

    @Test("Carrier loss with ignore_routes_with_linkdown=1: the kernel skips the dead route, egress moves")
    func carrierLossIgnoredRoute() throws {
        let ns = try NetworkNamespaceFixture("ign")
        defer { ns.delete() }
        try ns.sysctl("net.ipv4.conf.all.ignore_routes_with_linkdown=1")
        try ns.addVeth("veth0", peer: "veth1", address: "10.1.0.2/24")
        try ns.addVeth("veth2", peer: "veth3", address: "10.2.0.2/24")
        try ns.ip("route add default via 10.1.0.1 metric 100")
        try ns.ip("route add default via 10.2.0.1 metric 200")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target])
        defer { monitor.stop() }
        #expect(monitor.result(for: target)?.path.interface?.name == "veth0")

        try ns.ip("link set veth1 down")
        #expect(recorder.waitFor(target) { $0.path.interface?.name == "veth2" })
        #expect(monitor.sync())
        #expect(recorder.changes(target).count == 2)
        #expect(monitor.result(for: target)?.flags == [.reachable])
        #expect(monitor.result(for: target)?.path.gateway == address("10.2.0.1"))

        try ns.ip("link set veth1 up")
        #expect(recorder.waitFor(target) { $0.path.interface?.name == "veth0" })
        #expect(monitor.sync())
        // A fourth change was seen once in a full run from a fresh clone (not reproduced): the changes are printed
        // so that the next one says whether the kernel showed an intermediate path when the carrier came back.
        let changes = recorder.changes(target)
        #expect(changes.count == 3, "\(changes.map { "\($0.kind): \($0.reason)" })")
    }

    @Test("Unwatching a target stops its notifications; other targets go on")
    func unwatch() throws {
        let ns = try NetworkNamespaceFixture("unw")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("route add default via 10.1.0.1")
        let first = ReachabilityTarget.address(address("198.51.100.7"))
        let second = ReachabilityTarget.address(address("203.0.113.9"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [first, second])
        defer { monitor.stop() }
        monitor.unwatch(first)
        #expect(monitor.sync())
        #expect(monitor.result(for: first) == nil)

        try ns.ip("route del default")
        #expect(recorder.waitFor(second) { $0.path.status == .unsatisfied(.noRoute) })
        #expect(monitor.sync())
        #expect(recorder.changes(first).count == 1)
        #expect(recorder.changes(second).count == 2)
    }
}
