import Dispatch
import Foundation
import RouseChildProcess
import RouseNetlink
import Synchronization

/// Timestamps (monotonic, ns) of the monitor's notifications, with a wait for the n-th one.
final class NotificationClock: Sendable {
    private let times = Mutex<[UInt64]>([])
    private let arrived = DispatchSemaphore(value: 0)
    /// The queue the monitor delivers notifications on.
    let queue = DispatchQueue(label: "rouse.bench.handler")

    /// Waits until every notification dispatched so far has been recorded.
    func flush() { queue.sync {} }

    func record() {
        let now = DispatchTime.now().uptimeNanoseconds
        times.withLock { $0.append(now) }
        arrived.signal()
    }

    var count: Int { times.withLock { $0.count } }

    /// The arrival time of notification number `count` (1-based), waiting up to `timeout` seconds.
    @discardableResult
    func waitForCount(_ count: Int, timeout: Double) -> UInt64? {
        let deadline = DispatchTime.now() + timeout
        while true {
            if let time = times.withLock({ $0.count >= count ? $0[count - 1] : nil }) { return time }
            if arrived.wait(timeout: deadline) == .timedOut {
                return times.withLock { $0.count >= count ? $0[count - 1] : nil }
            }
        }
    }
}

/// `ip … monitor …` as the floor: each output line timestamped when read.
final class LineMonitor: Sendable {
    private let process: RunningChild
    private let stamps = Stamps()
    let processID: Int32

    /// Arrival times of the lines, written by the reader thread.
    private final class Stamps: Sendable {
        let lines = Mutex<[UInt64]>([])
        let arrived = DispatchSemaphore(value: 0)
    }

    init(arguments: [String]) throws {
        let ip = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"
        // Each line is stamped on the reader thread, as soon as it was read.
        let stamps = stamps
        process = try ChildProcess.start(ip, arguments, stdout: .lines, stderr: .inherit) { _ in
            let now = DispatchTime.now().uptimeNanoseconds
            stamps.lines.withLock { $0.append(now) }
            stamps.arrived.signal()
        }
        processID = process.processIdentifier
        // `ip monitor` is ready once it has bound its socket; give it a moment to start.
        Thread.sleep(forTimeInterval: 0.2)
    }

    var lineCount: Int { stamps.lines.withLock { $0.count } }

    /// The arrival time of the first line after the first `count` lines.
    func waitForLine(after count: Int, timeout: Double) -> UInt64? {
        let deadline = DispatchTime.now() + timeout
        while true {
            if let time = stamps.lines.withLock({ $0.count > count ? $0[count] : nil }) { return time }
            if stamps.arrived.wait(timeout: deadline) == .timedOut {
                return stamps.lines.withLock { $0.count > count ? $0[count] : nil }
            }
        }
    }

    /// Lets trailing lines of the last change arrive.
    func settle() { Thread.sleep(forTimeInterval: 0.1) }

    /// utime + stime of the `ip monitor` process, in clock ticks.
    var cpuTicks: Int {
        guard let stat = NetlinkSystem.readSmallFile("/proc/\(processID)/stat"),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return 0 }
        return user + system
    }

    /// Voluntary + involuntary context switches of the `ip monitor` process (its wake-ups).
    var contextSwitches: Int {
        guard let status = NetlinkSystem.readSmallFile("/proc/\(processID)/status", maxBytes: 8192) else { return 0 }
        var total = 0
        for line in status.split(separator: "\n") where line.contains("ctxt_switches") {
            total += Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).last ?? "") ?? 0
        }
        return total
    }

    /// Kills the child (SIGKILL) and waits until it is gone.
    func stop() { process.kill() }
}

/// The figures of one benchmark run.
struct Report {
    var iterations: Int
    var changes: Int
    var missed: Int
    var floorMissed: Int
    var p50: Double
    var p99: Double
    var floorP50: Double
    var floorP99: Double
    var notificationsPerChange: Double
    var messages: Int
    var cpuPerMessageMicroseconds: Double
    var floorCPUPerMessageMicroseconds: Double
    var overruns: Int
    var anomalies: [String: Int]
    var idleSeconds: Double
    var idleWakeups: Int
    var idleMessages: Int
    var floorIdleWakeups: Int
    var rssKiB: Int
    var floorRSSKiB: Int

    var text: String {
        func ms(_ value: Double) -> String { String(format: "%.3f ms", value) }
        return """
            rouse-bench reach: \(iterations) iterations, \(changes) changes (link down, default route add/del/add)
                                     rouse monitor     ip monitor (floor)
            latency p50              \(ms(p50).padding(toLength: 18, withPad: " ", startingAt: 0))\(ms(floorP50))
            latency p99              \(ms(p99).padding(toLength: 18, withPad: " ", startingAt: 0))\(ms(floorP99))
            missed changes           \(String(missed).padding(toLength: 18, withPad: " ", startingAt: 0))\(floorMissed)
            notifications/change     \(String(format: "%.4f", notificationsPerChange))\(anomalies.isEmpty ? "" : " " + anomalies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
            netlink messages         \(messages)
            CPU per message          \(String(format: "%.2f µs", cpuPerMessageMicroseconds).padding(toLength: 18, withPad: " ", startingAt: 0))\(String(format: "%.2f µs (per line, 10 ms ticks)", floorCPUPerMessageMicroseconds))
            overruns                 \(overruns)
            kernel messages in idle  \(idleMessages)
            idle wake-ups (\(String(format: "%.0f", idleSeconds)) s)    \(String(idleWakeups).padding(toLength: 18, withPad: " ", startingAt: 0))\(floorIdleWakeups) (context switches)
            RSS                      \(String(rssKiB) + " KiB (whole bench)")  \(floorRSSKiB) KiB
            """
    }

    var json: String {
        let object: [String: Any] = [
            "iterations": iterations, "changes": changes, "missed": missed, "floorMissed": floorMissed,
            "latencyP50Ms": p50, "latencyP99Ms": p99, "floorLatencyP50Ms": floorP50, "floorLatencyP99Ms": floorP99,
            "notificationsPerChange": notificationsPerChange, "messages": messages,
            "cpuPerMessageUs": cpuPerMessageMicroseconds, "floorCpuPerLineUs": floorCPUPerMessageMicroseconds,
            "overruns": overruns, "anomalies": anomalies, "idleSeconds": idleSeconds, "idleWakeups": idleWakeups,
            "idleKernelMessages": idleMessages,
            "floorIdleContextSwitches": floorIdleWakeups, "rssKiB": rssKiB, "floorRssKiB": floorRSSKiB,
        ]
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else {
            return "{}"
        }
        return String(decoding: data, as: UTF8.self)
    }
}
