import FoundationEssentials
import RouseAPNs
import RouseClock
import RouseSender
import RouseSystem
import RouseText
import Synchronization

/// What `rouse send` learned: counters for the progress bar and summary, latencies, prune list, JSON lines.
final class SendReport: Sendable {
    struct Counts {
        var done = 0
        var delivered = 0
        var rejected: [String: Int] = [:]
        var failed = 0
        var failedUnknown = 0
        var retries = 0
        var latenciesMS: [Double] = []
        var prune: [(token: String, reason: String, timestamp: Int64?)] = []
    }

    let total: Int
    let json: Bool
    let started = SystemClock().now
    private let counts = Mutex(Counts())
    private let printer = LinePrinter()

    init(total: Int, json: Bool) {
        self.total = total
        self.json = json
    }

    func add(_ result: PushResult) {
        let milliseconds = Self.milliseconds(result.latency)
        counts.withLock { c in
            c.done += 1
            c.retries += result.retries
            c.latenciesMS.append(milliseconds)
            switch result.outcome {
            case .delivered: c.delivered += 1
            case .rejected(let reason, let timestamp):
                c.rejected[reason.rawValue, default: 0] += 1
                if reason.invalidatesDeviceToken {
                    c.prune.append((result.push.deviceToken, reason.rawValue, timestamp))
                }
            case .failed(_, let processed):
                c.failed += 1
                if processed == .unknown { c.failedUnknown += 1 }
            }
        }
        if json {
            printer.print(Self.jsonLine(result, milliseconds: milliseconds))
        } else if total <= 20 {
            printer.print(Self.textLine(result, milliseconds: milliseconds))
        }
    }

    var snapshot: Counts { counts.withLock { $0 } }

    static func milliseconds(_ d: Duration) -> Double {
        d.inMilliseconds
    }

    static func textLine(_ r: PushResult, milliseconds: Double) -> String {
        let token = r.push.deviceToken
        let ms = NumberText.fixed(milliseconds, digits: 1) + " ms"
        switch r.outcome {
        case .delivered(let id): return "delivered  \(token)  apns-id \(id)  \(ms)"
        case .rejected(let reason, let timestamp):
            let local = r.refusedBeforeSending ? " (pre-flight, nothing sent)" : ""
            let since = timestamp.map { "  timestamp \($0)" } ?? ""
            return "rejected   \(token)  \(reason)\(since)\(local)  \(ms)"
        case .failed(let error, let processed):
            return "failed     \(token)  \(error)  processed: \(processed.rawValue)  \(ms)"
        }
    }

    static func jsonLine(_ r: PushResult, milliseconds: Double) -> String {
        var s = "{\"token\":" + JSONText.quoted(r.push.deviceToken)
        if let id = r.push.apnsID { s += ",\"apnsID\":" + JSONText.quoted(id) }
        switch r.outcome {
        case .delivered: s += ",\"outcome\":\"delivered\""
        case .rejected(let reason, let timestamp):
            s += ",\"outcome\":\"rejected\",\"reason\":" + JSONText.quoted(reason.rawValue)
            if let timestamp { s += ",\"timestamp\":\(timestamp)" }
            if r.refusedBeforeSending { s += ",\"preflight\":true" }
        case .failed(let error, let processed):
            s += ",\"outcome\":\"failed\",\"error\":" + JSONText.quoted(error.description)
            s += ",\"processed\":\"\(processed.rawValue)\""
        }
        s += ",\"attempts\":\(r.attempts),\"retries\":\(r.retries)"
        s += ",\"latencyMs\":" + NumberText.fixed(milliseconds, digits: 3) + "}"
        return s
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let index = min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)
        return sorted[max(0, index)]
    }

    func printSummary() {
        let c = snapshot
        let elapsed = Self.milliseconds(started.duration(to: SystemClock().now)) / 1000
        let sorted = c.latenciesMS.sorted()
        let p50 = Self.percentile(sorted, 0.5)
        let p99 = Self.percentile(sorted, 0.99)
        let rate = elapsed > 0 ? Double(c.done) / elapsed : 0
        let rejectedTotal = c.rejected.values.reduce(0, +)
        if json {
            var s = "{\"summary\":{\"total\":\(c.done),\"delivered\":\(c.delivered),\"rejected\":{"
            s += c.rejected.sorted { $0.key < $1.key }.map { JSONText.quoted($0.key) + ":\($0.value)" }
                .joined(separator: ",")
            s += "},\"failed\":\(c.failed),\"failedUnknown\":\(c.failedUnknown),\"retries\":\(c.retries)"
            s +=
                ",\"elapsedS\":" + NumberText.fixed(elapsed, digits: 3) + ",\"rate\":"
                + NumberText.fixed(rate, digits: 1)
            s +=
                ",\"p50Ms\":" + NumberText.fixed(p50, digits: 3) + ",\"p99Ms\":" + NumberText.fixed(p99, digits: 3)
                + "}}"
            printer.print(s)
            return
        }
        var lines = [
            "\(c.done) pushes in \(NumberText.fixed(elapsed, digits: 2)) s (\(NumberText.fixed(rate, digits: 0))/s): "
                + "\(c.delivered) delivered, \(rejectedTotal) rejected, \(c.failed) failed, \(c.retries) retries"
        ]
        for (reason, n) in c.rejected.sorted(by: { $0.key < $1.key }) { lines.append("  rejected \(reason): \(n)") }
        if c.failedUnknown > 0 { lines.append("  failed with processing unknown: \(c.failedUnknown)") }
        lines.append(
            "latency p50 \(NumberText.fixed(p50, digits: 2)) ms, p99 \(NumberText.fixed(p99, digits: 2)) ms")
        for line in lines { printer.print(line) }
    }

    func pruneLines() -> String {
        snapshot.prune.map { "\($0.token)\t\($0.reason)\t\($0.timestamp.map(String.init) ?? "")\n" }.joined()
    }

    /// 0 all delivered, 1 some rejected and none failed, 2 some failed.
    var exitCode: Int32 {
        let c = snapshot
        if c.failed > 0 { return 2 }
        if c.delivered < c.done { return 1 }
        return 0
    }
}

/// A one-line progress bar on stderr: done/total, rate, outcomes so far, ETA.
final class ProgressBar: Sendable {
    private let report: SendReport
    private let task = Mutex<Task<Void, Never>?>(nil)

    init(report: SendReport) { self.report = report }

    func start() {
        let report = self.report
        task.withLock {
            $0 = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(200))
                    ProgressBar.draw(report)
                }
            }
        }
    }

    func stop() {
        task.withLock { $0?.cancel() }
        ProgressBar.draw(report)
        Sys.writeStandardError("\n")
    }

    static func draw(_ report: SendReport) {
        let c = report.snapshot
        let elapsed = SendReport.milliseconds(report.started.duration(to: SystemClock().now)) / 1000
        let rate = elapsed > 0 ? Double(c.done) / elapsed : 0
        let width = 30
        let filled = report.total > 0 ? min(width, c.done * width / report.total) : width
        let eta = rate > 0 ? Double(report.total - c.done) / rate : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let line =
            "\r[\(bar)] \(c.done)/\(report.total) \(NumberText.fixed(rate, digits: 0))/s  delivered \(c.delivered)  "
            + "rejected \(c.rejected.values.reduce(0, +))  failed \(c.failed)  ETA \(NumberText.fixed(eta, digits: 0))s "
        Sys.writeStandardError(line)
    }
}
