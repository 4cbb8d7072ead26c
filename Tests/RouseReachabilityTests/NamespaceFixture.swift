import Dispatch
import Foundation
import Logging
import RouseClock
import RouseNetlink
import RouseReachability
import RouseTestSupport
import Synchronization
import Testing

/// A uniquely named network namespace for one test, driven with `ip -n NAME …`, deleted by `delete()`
/// (call it in a `defer`, so it runs even when the test fails), or at the latest when the fixture goes away.
final class NetworkNamespaceFixture: Sendable {
    let name: String
    var path: String { "/run/netns/\(name)" }
    private let deleted = Mutex(false)

    init(_ tag: String) throws {
        guard getuid() == 0 else {
            throw FixtureError(description: "network-namespace tests need root (uid \(getuid())); CI runs them as root")
        }
        guard FileManager.default.isExecutableFile(atPath: Self.ipPath) else {
            throw FixtureError(description: "\(Self.ipPath) not found: install iproute2 (deploy/install-deps.sh)")
        }
        name = "rz-\(TestRun.name)-\(tag)-\(getpid())-\(UInt32.random(in: 0..<1_000_000))"
        try Self.run(["netns", "add", name])
        do {
            try ip("link set lo up")
        } catch {
            delete()
            throw error
        }
    }

    deinit { delete() }

    static let ipPath = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"

    /// Runs `ip -n NAME ARGS` (arguments split on spaces) and throws with stderr on failure.
    func ip(_ arguments: String) throws {
        try Self.run(["-n", name] + arguments.split(separator: " ").map(String.init))
    }

    /// Sets a sysctl inside the namespace (`ip netns exec NAME sysctl -w KEY=VALUE`).
    func sysctl(_ assignment: String) throws {
        try Self.run(["netns", "exec", name, "sysctl", "-q", "-w", assignment])
    }

    /// Deletes the namespace (and every interface in it), once.
    func delete() {
        let first = deleted.withLock { deleted in
            defer { deleted = true }
            return !deleted
        }
        if first { _ = try? Self.run(["netns", "del", name]) }
    }

    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let result = try ChildProcess.runSync(ipPath, arguments)
        guard result.status == 0 else {
            throw FixtureError(description: "ip \(arguments.joined(separator: " ")) failed: \(result.stderr)")
        }
        return result.stdout
    }

    /// Creates `veth0` (here) ↔ `veth1` (peer, also here), both up, `veth0` with `address`.
    func addVeth(_ name: String = "veth0", peer: String = "veth1", address: String? = nil) throws {
        try ip("link add \(name) type veth peer name \(peer)")
        try ip("link set \(peer) up")
        try ip("link set \(name) up")
        if let address { try ip("addr add \(address) dev \(name)") }
    }
}

/// Records a monitor's events through the callback form, on a private serial queue.
final class EventRecorder: Sendable {
    private let queue = DispatchQueue(label: "rouse.test.recorder")
    private let recorded = Mutex<[ReachabilityEvent]>([])
    private let arrived = DispatchSemaphore(value: 0)

    init(_ monitor: ReachabilityMonitor) {
        monitor.addHandler(on: queue) { [self] event in
            recorded.withLock { $0.append(event) }
            arrived.signal()
        }
    }

    /// Everything delivered so far (after flushing the delivery queue).
    var events: [ReachabilityEvent] {
        queue.sync {}
        return recorded.withLock { $0 }
    }

    /// `.changed` events for a target.
    func changes(_ target: ReachabilityTarget) -> [ReachabilityChange] {
        events.compactMap { event in
            if case .changed(let change) = event, change.target == target { return change }
            return nil
        }
    }

    /// `.sourceAddressChanged` events for a target.
    func sourceChanges(_ target: ReachabilityTarget) -> [SourceAddressChange] {
        events.compactMap { event in
            if case .sourceAddressChanged(let change) = event, change.target == target { return change }
            return nil
        }
    }

    /// Waits (woken by each delivered event, with a deadline) until `predicate` holds.
    @discardableResult
    func wait(timeout: Double = 10, _ predicate: ([ReachabilityEvent]) -> Bool) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while true {
            if predicate(events) { return true }
            if arrived.wait(timeout: deadline) == .timedOut { return predicate(events) }
        }
    }

    /// Waits until the target's latest result satisfies `predicate`.
    @discardableResult
    func waitFor(_ target: ReachabilityTarget, timeout: Double = 10, _ predicate: (ReachabilityResult) -> Bool) -> Bool
    {
        wait(timeout: timeout) { events in
            let latest = events.last { event in
                if case .changed(let change) = event { return change.target == target }
                return false
            }
            if case .changed(let change) = latest { return predicate(change.result) }
            return false
        }
    }
}

/// Starts a monitor inside a fixture's namespace with the given targets.
func startMonitor(
    in fixture: NetworkNamespaceFixture, targets: [ReachabilityTarget], receiveBufferSize: Int = 4 << 20,
    resolver: any HostResolver = SystemHostResolver(), clock: any RouseClock = SystemClock()
) throws -> (ReachabilityMonitor, EventRecorder) {
    let configuration = ReachabilityMonitor.Configuration(
        networkNamespacePath: fixture.path, receiveBufferSize: receiveBufferSize, resolver: resolver, clock: clock)
    let monitor = ReachabilityMonitor(configuration: configuration, logger: Logger(label: "rouse.test"))
    for target in targets { monitor.watch(target) }
    try monitor.start()
    let recorder = EventRecorder(monitor)
    #expect(monitor.sync())
    return (monitor, recorder)
}

func address(_ text: String) -> IPAddress {
    guard let parsed = IPAddress(text) else {
        Issue.record("bad test address \(text)")
        return .unspecified(.v4)
    }
    return parsed
}

/// The result after the egress link went administratively down: no usable path, reported as "link
/// down" (decided while the kernel was still flushing the link's routes) or "no route" (after).
func linkIsGone(_ result: ReachabilityResult) -> Bool {
    result.flags == []
        && (result.path.status == .unsatisfied(.noRoute) || result.path.status == .unsatisfied(.linkDown))
}
