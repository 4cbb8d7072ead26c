import Foundation
import Glibc
import RouseClock
import RouseSystem

/// What the kernel shows of a running process in `/proc`: memory, CPU time, sockets, and wake-ups (context switches
/// of its threads). The one reader of these figures for the tests and the benchmarks.
package enum ProcessProbe {
    /// One thread's context switches so far. A voluntary switch is a sleep that ended (a wake-up); an involuntary
    /// one is a preemption.
    package struct ThreadSwitches: Sendable, Equatable {
        package let name: String
        package let voluntary: Int
        package let involuntary: Int
        package var total: Int { voluntary + involuntary }
    }

    /// The context switches of each thread of `pid` now, by thread id. A thread may end between the listing and the
    /// read: it is left out.
    package static func threads(_ pid: pid_t) -> [String: ThreadSwitches] {
        var result: [String: ThreadSwitches] = [:]
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            else { continue }
            var name = task
            var voluntary = 0
            var involuntary = 0
            for line in status.split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let value = parts[1].trimmingCharacters(in: .whitespaces)
                switch parts[0] {
                case "Name": name = value
                case "voluntary_ctxt_switches": voluntary = Int(value) ?? 0
                case "nonvoluntary_ctxt_switches": involuntary = Int(value) ?? 0
                default: break
                }
            }
            result[task] = ThreadSwitches(name: name, voluntary: voluntary, involuntary: involuntary)
        }
        return result
    }

    /// Context switches of each thread of `pid` by thread id: voluntary ones only (wake-ups), or all.
    package static func switches(_ pid: pid_t, voluntaryOnly: Bool = false) -> [String: Int] {
        threads(pid).mapValues { voluntaryOnly ? $0.voluntary : $0.total }
    }

    /// Switches between two samples of `switches`: each thread's growth, threads new in `after` counted in full,
    /// threads gone since `before` left out.
    package static func growth(from before: [String: Int], to after: [String: Int]) -> Int {
        after.reduce(0) { $0 + $1.value - (before[$1.key] ?? 0) }
    }

    /// Wake-ups of all of `pid`'s threads over `window`. Threads come and go (a thread pool's workers) and an ended
    /// thread's counts leave /proc with it, so each thread is sampled every 100 ms and its growth summed.
    package static func wakeUps(_ pid: pid_t, over window: Duration, voluntaryOnly: Bool = false) async throws -> Int {
        try await wakeTimeline(pid, over: window, voluntaryOnly: voluntaryOnly).reduce(0) { $0 + $1.count }
    }

    /// Wake-ups seen in one sample of ``wakeTimeline(_:over:voluntaryOnly:)``: when (wall clock, ms since the
    /// epoch, to line them up with other logs), how many, and which threads (by name) woke how often.
    package struct WakeSample: Sendable, Equatable {
        package let wallMilliseconds: Int64
        package let count: Int
        package let threads: [String: Int]
    }

    /// The samples (every 100 ms) over `window` in which any of `pid`'s threads woke, in order: where a
    /// ``wakeUps(_:over:voluntaryOnly:)`` figure comes from (a timer's period, a peer's keep-alive, one event waking
    /// three threads).
    package static func wakeTimeline(
        _ pid: pid_t, over window: Duration, voluntaryOnly: Bool = false
    ) async throws -> [WakeSample] {
        var last = threads(pid)
        var timeline: [WakeSample] = []
        let clock = SystemClock()
        let end = clock.deadline(after: window)
        while clock.now < end {
            try await Task.sleep(for: .milliseconds(100))
            let now = threads(pid)
            var woken: [String: Int] = [:]
            for (task, sample) in now {
                let before = last[task]
                let grown =
                    voluntaryOnly
                    ? sample.voluntary - (before?.voluntary ?? 0) : sample.total - (before?.total ?? 0)
                if grown > 0 { woken[sample.name, default: 0] += grown }
            }
            last.merge(now) { $1 }
            let count = woken.values.reduce(0, +)
            if count > 0 {
                timeline.append(WakeSample(wallMilliseconds: clock.wallMilliseconds, count: count, threads: woken))
            }
        }
        return timeline
    }

    /// Waits until `pid` went `quiet` without a wake-up (voluntary context switch of any thread), checking every
    /// 250 ms: the timers that the set-up armed fire once and are gone. False when it did not go quiet within `limit`.
    package static func settle(_ pid: pid_t, quiet: Duration, limit: Duration) async throws -> Bool {
        var last = switches(pid, voluntaryOnly: true)
        let clock = SystemClock()
        var since = clock.now
        let deadline = clock.deadline(after: limit)
        while since.duration(to: clock.now) < quiet {
            guard clock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(250))
            let now = switches(pid, voluntaryOnly: true)
            if now != last {
                last = now
                since = clock.now
            }
        }
        return true
    }

    /// A `kB` field of /proc/PID/status (`VmRSS`, `VmHWM`), in KiB; nil when the process or the field is gone.
    package static func statusKiB(_ pid: pid_t, _ field: String) -> Int? { statusNumber(pid, field) }

    /// The number a field of /proc/PID/status starts with (`Threads`; a `kB` one in KiB); nil when the process or
    /// the field is gone.
    package static func statusNumber(_ pid: pid_t, _ field: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") })
        else { return nil }
        return line.split(whereSeparator: \.isWhitespace).dropFirst().first.flatMap { Int($0) }
    }

    /// CPU time (user + system) of `pid` so far, in clock ticks (`ticksPerSecond`); nil when the process is gone.
    package static func cpuTicks(_ pid: pid_t) -> Int? {
        // The fields after the command's closing parenthesis (the command may hold spaces): utime and stime are
        // fields 14 and 15 of the line, 12th and 13th after it.
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    /// Clock ticks per second, the unit of `cpuTicks`.
    package static let ticksPerSecond = Int(Sys.clockTicksPerSecond)

    /// Open sockets of `pid` (its listeners and connections).
    package static func sockets(_ pid: pid_t) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?.hasPrefix("socket:")
                ?? false
        }
    }
}
