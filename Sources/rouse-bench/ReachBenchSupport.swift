import Dispatch
import Foundation
import RouseChildProcess
import RouseNetlink
import RouseSystem
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

/// A line-printing monitor read from a pipe (`ip … monitor …`, the floor; or `rouse reach watch`), each
/// output line timestamped when read.
final class LineMonitor: Sendable {
    private let process: RunningChild
    private let stamps = Stamps()
    let processID: Int32

    /// Arrival times of the lines, written by the reader thread.
    private final class Stamps: Sendable {
        let lines = Mutex<[UInt64]>([])
        let arrived = DispatchSemaphore(value: 0)
    }

    static let ipPath = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"

    /// Starts `executable` (`ip` by default). With `readyLines` it is ready once that many lines were read
    /// (a watcher prints its targets' current values); otherwise (`ip monitor` prints nothing until
    /// something changes) after a moment to bind its socket.
    init(executable: String = LineMonitor.ipPath, arguments: [String], readyLines: Int = 0) throws {
        // Each line is stamped on the reader thread, as soon as it was read.
        let stamps = stamps
        process = try ChildProcess.start(executable, arguments, stdout: .lines, stderr: .inherit) { _ in
            let now = DispatchTime.now().uptimeNanoseconds
            stamps.lines.withLock { $0.append(now) }
            stamps.arrived.signal()
        }
        processID = process.processIdentifier
        if readyLines > 0 {
            guard waitForLine(after: readyLines - 1, timeout: 10) != nil else {
                process.kill()
                throw Bench.Failure(description: "\(executable) printed no first line within 10 s")
            }
        } else {
            Thread.sleep(forTimeInterval: 0.2)
        }
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

    /// utime + stime of the process, in clock ticks.
    var cpuTicks: Int { ProcessProbe.cpuTicks(processID) ?? 0 }

    /// Voluntary + involuntary context switches of each thread of the process now, by thread id.
    var contextSwitchesByThread: [String: Int] { ProcessProbe.switches(processID) }

    /// Voluntary + involuntary context switches of the thread group leader (`ip monitor` has no other).
    var contextSwitches: Int { contextSwitchesByThread["\(processID)"] ?? 0 }

    /// Threads of the process.
    var threadCount: Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(processID)/task")) ?? []).count
    }

    /// Kills the child (SIGKILL) and waits until it is gone.
    func stop() { process.kill() }
}

/// Wake-ups of every thread of some processes over a window: each thread's context switches, sampled
/// twice a second so threads that come and go (a thread pool's workers) are counted too.
struct WakeupCounter {
    private var last: [Int: [String: Int]] = [:]
    private(set) var totals: [Int: Int] = [:]

    /// Takes one sample of each monitor; the first sample sets the baseline.
    mutating func sample(_ monitors: [LineMonitor]) {
        for (position, monitor) in monitors.enumerated() {
            let now = monitor.contextSwitchesByThread
            if let before = last[position] {
                for (thread, count) in now { totals[position, default: 0] += count - (before[thread] ?? 0) }
            } else {
                totals[position] = 0
            }
            last[position] = now
        }
    }

    /// Samples every half second for `seconds`.
    mutating func watch(_ monitors: [LineMonitor], seconds: Double) {
        sample(monitors)
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            Thread.sleep(forTimeInterval: min(0.5, max(0, end.timeIntervalSinceNow)))
            sample(monitors)
        }
    }
}

/// Where a process's resident memory is, from `/proc/PID/smaps`: the Swift runtime's libraries,
/// Foundation's (with ICU), the executable itself, other shared libraries, and anonymous memory.
struct ResidentMemory: Sendable {
    var totalKiB = 0
    var swiftRuntimeKiB = 0
    var foundationKiB = 0
    var executableKiB = 0
    var otherLibrariesKiB = 0
    var anonymousKiB = 0

    init(processID: Int32) {
        // /proc files have no size: read until the end (Foundation's file reading may stop at a page).
        guard let smaps = Sys.readText("/proc/\(processID)/smaps", maxBytes: 16 << 20) else { return }
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(processID)/exe")) ?? "?"
        var mapping = ""
        for line in smaps.split(separator: "\n", omittingEmptySubsequences: false) {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let first = fields.first, first.contains("-"), first.allSatisfy({ $0.isHexDigit || $0 == "-" }) {
                mapping = fields.count >= 6 ? String(fields[5]) : ""
                continue
            }
            guard line.hasPrefix("Rss:"), fields.count >= 2, let kib = Int(fields[1]) else { continue }
            totalKiB += kib
            let name = mapping.split(separator: "/").last.map(String.init) ?? ""
            if mapping == executable {
                executableKiB += kib
            } else if name.hasPrefix("libFoundation") || name.hasPrefix("lib_FoundationICU") {
                foundationKiB += kib
            } else if name.hasPrefix("libswift") || name.hasPrefix("libdispatch") || name.hasPrefix("libBlocksRuntime")
            {
                swiftRuntimeKiB += kib
            } else if mapping.hasPrefix("/") {
                otherLibrariesKiB += kib
            } else {
                anonymousKiB += kib
            }
        }
    }

    var text: String {
        "\(totalKiB) KiB (Swift runtime \(swiftRuntimeKiB), Foundation \(foundationKiB), executable \(executableKiB), "
            + "other libraries \(otherLibrariesKiB), anonymous \(anonymousKiB))"
    }

    var object: [String: Int] {
        [
            "totalKiB": totalKiB, "swiftRuntimeKiB": swiftRuntimeKiB, "foundationKiB": foundationKiB,
            "executableKiB": executableKiB, "otherLibrariesKiB": otherLibrariesKiB, "anonymousKiB": anonymousKiB,
        ]
    }
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
