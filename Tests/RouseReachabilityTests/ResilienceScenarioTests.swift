import Foundation
import RouseNetlink
import RouseReachability
import Synchronization
import Testing

/// A resolver the test controls: resolution is injected (documented choice) so a test can change a
/// name's answer without touching `/etc/hosts` or DNS.
final class ScriptedResolver: HostResolver {
    private let table = Mutex<[String: [IPAddress]]>([:])
    private let calls = Mutex(0)

    func set(_ host: String, _ addresses: [IPAddress]) { table.withLock { $0[host] = addresses } }
    var resolutions: Int { calls.withLock { $0 } }

    func resolve(_ host: String) throws -> [IPAddress] {
        calls.withLock { $0 += 1 }
        return table.withLock { $0[host] ?? [] }
    }
}

@Suite("Reachability in network namespaces: overruns and names")
struct ResilienceScenarioTests {
    @Test("ENOBUFS: a tiny receive buffer and a burst; state is right after, the overrun is counted")
    func overrun() throws {
        let ns = try NetworkNamespaceFixture("nobuf")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("route add default via 10.1.0.1")
        let target = ReachabilityTarget.address(address("198.51.100.7"))
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target], receiveBufferSize: 1)
        defer { monitor.stop() }
        // A synchronous handler sees the overflow notice too (added after start: the current value first).
        let notices = Mutex<[ReachabilityNotice]>([])
        monitor.addSynchronousHandler { notice in notices.withLock { $0.append(notice) } }
        #expect(monitor.sync())
        #expect(notices.withLock { $0.count } == 1)

        // One `ip -batch` makes hundreds of messages faster than the monitor can drain a ~2 KiB buffer,
        // and ends with the egress going down.
        var lines: [String] = []
        for index in 0..<150 {
            lines.append("link add b\(index) type veth peer name c\(index)")
            lines.append("link set b\(index) up")
        }
        lines.append("link set veth0 down")
        let batch = FileManager.default.temporaryDirectory.appendingPathComponent("\(ns.name).batch")
        try lines.joined(separator: "\n").appending("\n").write(to: batch, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: batch) }
        try NetworkNamespaceFixture.run(["-n", ns.name, "-batch", batch.path])

        #expect(recorder.waitFor(target) { linkIsGone($0) })
        #expect(monitor.sync())
        #expect(monitor.statistics.overruns >= 1)
        #expect(monitor.statistics.dumps >= 2)
        let seen = notices.withLock { $0 }
        let overflows = seen.compactMap { notice -> ReachabilityOverflow? in
            if case .overflow(let overflow) = notice { return overflow }
            return nil
        }
        #expect(!overflows.isEmpty)
        #expect(overflows.last?.overruns == monitor.statistics.overruns)
        let changes = seen.compactMap { notice -> ReachabilityChange? in
            if case .event(.changed(let change)) = notice { return change }
            return nil
        }
        #expect(changes.count == 2)
        #expect(changes.last.map { linkIsGone($0.result) } == true)
        #expect(recorder.changes(target).count == 2)
        #expect(monitor.model.links.count >= 300)

        // Still listening after the overrun.
        try ns.ip("link set veth0 up")
        try ns.ip("route add default via 10.1.0.1")
        #expect(recorder.waitFor(target) { $0.path.status == .satisfied })
        #expect(monitor.sync())
        #expect(recorder.changes(target).count == 3)
    }

    @Test("Host-name target whose resolution changes (injected resolver; re-resolved on network change)")
    func hostNameResolutionChanges() throws {
        let ns = try NetworkNamespaceFixture("name")
        defer { ns.delete() }
        try ns.addVeth(address: "10.1.0.2/24")
        try ns.ip("route add default via 10.1.0.1")
        let resolver = ScriptedResolver()
        resolver.set("sip.example.test", [address("198.51.100.7")])
        let target = ReachabilityTarget.host("sip.example.test")
        let (monitor, recorder) = try startMonitor(in: ns, targets: [target], resolver: resolver)
        defer { monitor.stop() }
        #expect(recorder.waitFor(target) { $0.path.status == .satisfied })
        #expect(monitor.result(for: target)?.flags == [.reachable])
        #expect(monitor.result(for: target)?.path.remoteAddress == address("198.51.100.7"))

        // The name moves onto the directly attached network; an explicit refresh picks it up.
        resolver.set("sip.example.test", [address("10.1.0.9")])
        monitor.refreshNames()
        #expect(recorder.waitFor(target) { $0.flags.contains(.isDirect) })
        #expect(monitor.sync())
        #expect(recorder.changes(target).count == 2)

        // The name stops resolving; a network change (a new global address) re-resolves it.
        resolver.set("sip.example.test", [])
        try ns.ip("addr add 10.1.0.3/24 dev veth0")
        #expect(recorder.waitFor(target) { $0.path.status == .unsatisfied(.nameNotResolved) })
        #expect(monitor.sync())
        #expect(recorder.changes(target).count == 3)
    }
}
