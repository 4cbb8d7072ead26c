import Dispatch
import Foundation
import RouseNetlink
import Synchronization

/// `rouse-bench reach --cli`: the command-line watcher as a user runs it. `rouse reach watch --json
/// 0.0.0.0` (one per `--rouse PATH`, by default the `rouse` next to this benchmark; a path named
/// `rouse-reach…` runs the lean build's `watch`) and `ip monitor link
/// route` run side by side on the same namespace, both read from a pipe; each change (link down, default
/// route add/del/add) is timed from the netlink request to the first line each one prints. Then both
/// sit idle: wake-ups are counted from every thread's context switches, and resident memory is split
/// by mapping (Swift runtime, Foundation, the executable, other libraries, anonymous).
extension ReachBench {
    struct WatcherFigures {
        var path: String
        var p50: Double
        var p99: Double
        var missed: Int
        var linesPerChange: Double
        var cpuPerChangeMicroseconds: Double
        var idleWakeupsPerMinute: Double
        var threads: Int
        var memory: ResidentMemory
    }

    struct CLIReport {
        var iterations: Int
        var changes: Int
        var idleSeconds: Double
        var watchers: [WatcherFigures]
        var floor: WatcherFigures

        var text: String {
            func ms(_ value: Double) -> String { String(format: "%.3f ms", value) }
            func ratio(_ ours: Double, _ theirs: Double) -> String { String(format: "%.2f×", ours / theirs) }
            var lines = [
                "rouse-bench reach --cli: \(iterations) iterations, \(changes) changes (link down, default route "
                    + "add/del/add), each line read from a pipe; idle \(String(format: "%.0f", idleSeconds)) s"
            ]
            for figures in watchers + [floor] {
                let isFloor = figures.path == floor.path
                lines.append("\(isFloor ? "ip monitor link route (floor)" : "watch --json 0.0.0.0"): \(figures.path)")
                var latency = "  change → line      p50 \(ms(figures.p50))  p99 \(ms(figures.p99))"
                if !isFloor {
                    latency += "  (\(ratio(figures.p50, floor.p50)) / \(ratio(figures.p99, floor.p99)) ip monitor)"
                }
                lines.append(latency)
                lines.append(
                    "  missed \(figures.missed)  lines/change \(String(format: "%.4f", figures.linesPerChange))"
                        + "  CPU/change \(String(format: "%.1f µs", figures.cpuPerChangeMicroseconds)) (10 ms ticks)")
                lines.append(
                    "  idle wake-ups/min \(String(format: "%.1f", figures.idleWakeupsPerMinute))  threads \(figures.threads)"
                )
                lines.append("  RSS \(figures.memory.text)")
            }
            return lines.joined(separator: "\n")
        }

        var json: String {
            func object(_ figures: WatcherFigures) -> [String: Any] {
                [
                    "path": figures.path, "latencyP50Ms": figures.p50, "latencyP99Ms": figures.p99,
                    "ratioP50": figures.p50 / floor.p50, "ratioP99": figures.p99 / floor.p99, "missed": figures.missed,
                    "linesPerChange": figures.linesPerChange, "cpuPerChangeUs": figures.cpuPerChangeMicroseconds,
                    "idleWakeupsPerMinute": figures.idleWakeupsPerMinute, "threads": figures.threads,
                    "rss": figures.memory.object,
                ]
            }
            let report: [String: Any] = [
                "iterations": iterations, "changes": changes, "idleSeconds": idleSeconds,
                "watchers": watchers.map(object), "floor": object(floor),
            ]
            guard let data = try? JSONSerialization.data(withJSONObject: report, options: [.sortedKeys]) else {
                return "{}"
            }
            return String(decoding: data, as: UTF8.self)
        }
    }

    static func runCLI(_ options: Options) throws -> CLIReport {
        let paths = options.rousePaths.isEmpty ? [try Bench.product("rouse")] : options.rousePaths
        let namespace = "rz-bench-cli-\(getpid())"
        try makeNamespace(namespace)
        defer { _ = try? ip(["netns", "del", namespace]) }
        let floor = try LineMonitor(arguments: ["-n", namespace, "monitor", "link", "route"])
        defer { floor.stop() }
        var watchers: [LineMonitor] = []
        defer { for watcher in watchers { watcher.stop() } }
        for path in paths {
            // `rouse reach watch …`, or the lean `rouse-reach watch …` (same monitor and lines).
            let command =
                path.split(separator: "/").last?.hasPrefix("rouse-reach") == true ? ["watch"] : ["reach", "watch"]
            watchers.append(
                try LineMonitor(
                    executable: path,
                    arguments: command + ["--json", "--netns", "/run/netns/\(namespace)", "0.0.0.0"], readyLines: 1))
        }
        let all = watchers
        return try inNamespace(namespace) {
            try measureCLI(watchers: all, paths: paths, floor: floor, options: options)
        }
    }

    /// Runs on a thread inside the namespace.
    static func measureCLI(watchers: [LineMonitor], paths: [String], floor: LineMonitor, options: Options) throws
        -> CLIReport
    {
        let socket = try NetlinkSocket(groups: 0)
        defer { socket.close() }
        func veth0() throws -> LinkMessage? {
            for case .newLink(let link) in try socket.exchange(.dump(.links, sequence: socket.makeSequence()))
            where link.name == "veth0" {
                return link
            }
            return nil
        }
        guard let index = try veth0()?.index else { throw BenchError(description: "veth0 not found") }
        let gateway = IPAddress(bytes: [10, 1, 0, 1]) ?? .unspecified(.v4)
        func request(_ make: (UInt32) -> NetlinkRequest) throws {
            _ = try socket.exchange(make(socket.makeSequence()))
        }
        func route(_ add: Bool) throws {
            try request {
                .route(
                    add: add, destination: .unspecified(.v4), prefixLength: 0, gateway: gateway, interfaceIndex: index,
                    sequence: $0)
            }
        }
        let everyone = watchers + [floor]
        var latencies = [[UInt64]](repeating: [], count: everyone.count)
        var missed = [Int](repeating: 0, count: everyone.count)
        let startLines = everyone.map(\.lineCount)
        let startTicks = everyone.map(\.cpuTicks)
        var changes = 0
        func change(_ action: () throws -> Void) throws {
            let before = everyone.map(\.lineCount)
            let start = DispatchTime.now().uptimeNanoseconds
            try action()
            changes += 1
            for (position, monitor) in everyone.enumerated() {
                if let at = monitor.waitForLine(after: before[position], timeout: 2) {
                    latencies[position].append(at > start ? at - start : 0)
                } else {
                    missed[position] += 1
                }
            }
        }
        for _ in 0..<options.iterations {
            try change { try request { .setLink(index: index, up: false, sequence: $0) } }
            try request { .setLink(index: index, up: true, sequence: $0) }
            // The carrier comes back through the kernel's link watch; add the route once it is there, so
            // the route addition is one change.
            let deadline = DispatchTime.now() + 2
            while try veth0()?.hasCarrier != true && DispatchTime.now() < deadline {
                Thread.sleep(forTimeInterval: 0.0002)
            }
            try change { try route(true) }
            try change { try route(false) }
            try change { try route(true) }
        }
        for monitor in everyone { monitor.settle() }
        let lines = everyone.enumerated().map { $1.lineCount - startLines[$0] }
        let ticks = everyone.enumerated().map { $1.cpuTicks - startTicks[$0] }

        var wakeups = WakeupCounter()
        wakeups.watch(everyone, seconds: options.idleSeconds)
        let idle = everyone.indices.map { wakeups.totals[$0] ?? 0 }

        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        let figures = everyone.enumerated().map { position, monitor in
            WatcherFigures(
                path: position < paths.count ? paths[position] : LineMonitor.ipPath,
                p50: percentile(latencies[position], 0.50), p99: percentile(latencies[position], 0.99),
                missed: missed[position], linesPerChange: Double(lines[position]) / Double(max(changes, 1)),
                cpuPerChangeMicroseconds: Double(ticks[position]) / ticksPerSecond * 1_000_000
                    / Double(max(changes, 1)),
                idleWakeupsPerMinute: options.idleSeconds > 0
                    ? Double(idle[position]) * 60 / options.idleSeconds : .nan,
                threads: monitor.threadCount, memory: ResidentMemory(processID: monitor.processID))
        }
        return CLIReport(
            iterations: options.iterations, changes: changes, idleSeconds: options.idleSeconds,
            watchers: Array(figures.dropLast()), floor: figures[figures.count - 1])
    }
}
