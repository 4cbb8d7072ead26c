import Dispatch
import Foundation
import Logging
import RouseChildProcess
import RouseNetlink
import RouseReachability
import Synchronization

/// `rouse-bench reach [--iterations N] [--idle-seconds S] [--json]` (`--cli [--rouse PATH]…`: the command-line
/// watcher instead, see `ReachBench+CLI.swift`): in a fresh network namespace with a
/// veth pair, toggles the egress link and adds/removes the default route N times (4 result changes per
/// iteration: link down, default route added after the link is back, removed, added), and measures the
/// monitor against `ip monitor link route` in the same run: change-to-notification latency p50/p99,
/// notifications per change, CPU per netlink message, idle wake-ups over a window, RSS.
enum ReachBench {
    struct Options {
        var iterations = 1000
        var idleSeconds = 60.0
        var json = false
        /// Measure `rouse reach watch` as a child process instead of the library in this process.
        var cli = false
        /// `rouse` executables to compare (`--rouse PATH`, repeatable; default: the one next to this).
        var rousePaths: [String] = []
    }

    typealias BenchError = Bench.Failure

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--iterations":
                options.iterations =
                    try Bench.value(
                        after: "--iterations", from: &iterator, "a positive integer", where: { value in value > 0 })
                    as Int
            case "--idle-seconds":
                options.idleSeconds =
                    try Bench.value(
                        after: "--idle-seconds", from: &iterator, "a number ≥ 0", where: { value in value >= 0 })
                    as Double
            case "--json": options.json = true
            case "--cli": options.cli = true
            case "--rouse":
                options.rousePaths.append(
                    try Bench.value(after: "--rouse", from: &iterator, "a rouse executable", where: { _ in true })
                        as String)
            default:
                throw BenchError(
                    description:
                        "unknown argument \(argument) (--iterations N, --idle-seconds S, --json, --cli, --rouse PATH)")
            }
        }
        return options
    }

    static func run(arguments: [String]) async throws {
        let options = try parse(arguments)
        // Everything blocking (child processes, waits) runs on a dedicated thread, off the main actor.
        let text = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<String, any Error>) in
            Thread {
                do {
                    if options.cli {
                        let report = try runCLI(options)
                        continuation.resume(returning: options.json ? report.json : report.text)
                    } else {
                        let report = try runBlocking(options)
                        continuation.resume(returning: options.json ? report.json : report.text)
                    }
                } catch {
                    continuation.resume(throwing: error)
                }
            }.start()
        }
        print(text)
    }

    static func runBlocking(_ options: Options) throws -> Report {
        let namespace = "rz-bench-\(getpid())"
        try makeNamespace(namespace)
        defer { _ = try? ip(["netns", "del", namespace]) }
        let floor = try LineMonitor(arguments: ["-n", namespace, "monitor", "link", "route"])
        defer { floor.stop() }

        var logger = Logger(label: "rouse.bench.reach")
        logger.logLevel = .notice
        let monitor = ReachabilityMonitor(
            configuration: .init(networkNamespacePath: "/run/netns/\(namespace)"), logger: logger)
        let target = ReachabilityTarget.anyNetwork
        monitor.watch(target)
        try monitor.start()
        defer { monitor.stop() }
        let notifications = NotificationClock()
        monitor.addHandler(on: notifications.queue) { event in
            if event.target == target { notifications.record() }
        }
        monitor.sync()
        notifications.waitForCount(1, timeout: 5)

        // The changes are made from a thread inside the namespace.
        return try inNamespace(namespace) {
            try measure(monitor: monitor, notifications: notifications, floor: floor, options: options)
        }
    }

    /// A namespace with veth0 (10.1.0.2/24, default route via 10.1.0.1) ↔ veth1, both up; deleted by the caller.
    static func makeNamespace(_ namespace: String) throws {
        try ip(["netns", "add", namespace])
        for command in [
            "link set lo up", "link add veth0 type veth peer name veth1",
            // No IPv6 autoconfiguration: its late DAD events would land in the idle window.
            "link set veth0 addrgenmode none", "link set veth1 addrgenmode none", "link set veth1 up",
            "link set veth0 up", "addr add 10.1.0.2/24 dev veth0", "route add default via 10.1.0.1",
        ] {
            do {
                try ip(["-n", namespace] + command.split(separator: " ").map(String.init))
            } catch {
                _ = try? ip(["netns", "del", namespace])
                throw error
            }
        }
    }

    /// Runs `body` on a thread that entered the namespace, and waits for it.
    static func inNamespace<T: Sendable>(_ namespace: String, _ body: @escaping @Sendable () throws -> T) throws -> T {
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            defer { done.signal() }
            do {
                try NetlinkSystem.enterNetworkNamespace(path: "/run/netns/\(namespace)")
                let value = try body()
                outcome.withLock { $0 = .success(value) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
        }.start()
        done.wait()
        guard let result = outcome.withLock({ $0 }) else { throw BenchError(description: "measurement thread ended") }
        return try result.get()
    }

    /// Runs on a thread inside the namespace: makes the changes with netlink requests and waits for
    /// both observers after each one.
    static func measure(
        monitor: ReachabilityMonitor, notifications: NotificationClock, floor: LineMonitor, options: Options
    ) throws -> Report {
        let socket = try NetlinkSocket(groups: 0)
        defer { socket.close() }
        guard let index = monitor.model.links.first(where: { $0.value.name == "veth0" })?.key else {
            throw BenchError(description: "veth0 not seen by the monitor")
        }
        let gateway = IPAddress(bytes: [10, 1, 0, 1]) ?? .unspecified(.v4)
        func request(_ make: (UInt32) -> NetlinkRequest) throws {
            _ = try socket.exchange(make(socket.makeSequence()))
        }
        func setLink(_ up: Bool) throws { try request { .setLink(index: index, up: up, sequence: $0) } }
        func route(_ add: Bool) throws {
            try request {
                .route(
                    add: add, destination: .unspecified(.v4), prefixLength: 0, gateway: gateway, interfaceIndex: index,
                    sequence: $0)
            }
        }

        var ours: [UInt64] = []
        var theirs: [UInt64] = []
        var missed = 0
        var floorMissed = 0
        var changes = 0
        let startStatistics = monitor.statistics
        let startNotifications = notifications.count
        let floorStartCPU = floor.cpuTicks
        let floorStartLines = floor.lineCount
        var anomalies: [String: Int] = [:]
        func change(_ label: String, _ action: () throws -> Void) throws {
            let expected = notifications.count + 1
            let floorLines = floor.lineCount
            let start = DispatchTime.now().uptimeNanoseconds
            try action()
            changes += 1
            if let at = notifications.waitForCount(expected, timeout: 2) {
                ours.append(at - start)
            } else {
                missed += 1
                anomalies["\(label): missed", default: 0] += 1
            }
            if let at = floor.waitForLine(after: floorLines, timeout: 2) {
                theirs.append(at > start ? at - start : 0)
            } else {
                floorMissed += 1
            }
            // Exactly one notification per change: let the monitor finish the burst and count.
            monitor.sync()
            notifications.flush()
            if notifications.count > expected {
                anomalies["\(label): extra", default: 0] += notifications.count - expected
            }
        }
        for _ in 0..<options.iterations {
            try change("link down") { try setLink(false) }
            try setLink(true)
            // The carrier comes back through the kernel's link watch; add the route once it is there
            // so the route addition is one change, not a no-carrier step and then a second one.
            let deadline = DispatchTime.now() + 2
            while monitor.model.links[index]?.hasCarrier != true && DispatchTime.now() < deadline {
                monitor.sync()
                if monitor.model.links[index]?.hasCarrier == true { break }
                Thread.sleep(forTimeInterval: 0.0002)
            }
            let before = notifications.count
            monitor.sync()
            notifications.flush()
            if notifications.count > before { anomalies["link up: extra", default: 0] += notifications.count - before }
            try change("route add") { try route(true) }
            try change("route del") { try route(false) }
            try change("route re-add") { try route(true) }
        }
        monitor.sync()
        floor.settle()
        let endStatistics = monitor.statistics
        let delivered = notifications.count - startNotifications
        let floorCPU = floor.cpuTicks - floorStartCPU
        let floorLines = floor.lineCount - floorStartLines

        // Idle: nothing changes; count wake-ups.
        let idleStartWakeups = monitor.statistics.wakeups
        let idleStartMessages = monitor.statistics.messages
        let floorIdleStart = floor.contextSwitches
        if options.idleSeconds > 0 { Thread.sleep(forTimeInterval: options.idleSeconds) }
        let idleWakeups = monitor.statistics.wakeups - idleStartWakeups
        let idleMessages = monitor.statistics.messages - idleStartMessages
        let floorIdleWakeups = floor.contextSwitches - floorIdleStart

        let messages = endStatistics.messages - startStatistics.messages
        let cpu = endStatistics.cpuNanoseconds - startStatistics.cpuNanoseconds
        let ticksPerSecond = 100.0
        return Report(
            iterations: options.iterations, changes: changes, missed: missed, floorMissed: floorMissed,
            p50: percentile(ours, 0.50), p99: percentile(ours, 0.99), floorP50: percentile(theirs, 0.50),
            floorP99: percentile(theirs, 0.99), notificationsPerChange: Double(delivered) / Double(max(changes, 1)),
            messages: messages, cpuPerMessageMicroseconds: Double(cpu) / 1000 / Double(max(messages, 1)),
            floorCPUPerMessageMicroseconds: Double(floorCPU) / ticksPerSecond * 1_000_000 / Double(max(floorLines, 1)),
            overruns: endStatistics.overruns - startStatistics.overruns, anomalies: anomalies,
            idleSeconds: options.idleSeconds,
            idleWakeups: idleWakeups, idleMessages: idleMessages, floorIdleWakeups: floorIdleWakeups,
            rssKiB: ProcessProbe.statusKiB(getpid(), "VmRSS") ?? 0,
            floorRSSKiB: ProcessProbe.statusKiB(floor.processID, "VmRSS") ?? 0)
    }

    static func percentile(_ values: [UInt64], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count) * fraction).rounded(.up)) - 1)
        return Double(sorted[max(index, 0)]) / 1_000_000
    }

    @discardableResult
    static func ip(_ arguments: [String]) throws -> Int32 {
        let ip = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"
        let output = try ChildProcess.runSync(ip, arguments)
        guard output.status == 0 else {
            throw BenchError(
                description: "ip \(arguments.joined(separator: " ")) failed (run as root): \(output.stderr)")
        }
        return output.status
    }
}
