import Metrics
import RouseAPNs
import Synchronization

/// The sender's swift-metrics: pushes sent, outcomes by reason, latency, retries, connections.
///
/// Names: `rouse_sender_attempts_total`, `rouse_sender_outcomes_total{outcome,reason}`,
/// `rouse_sender_latency_seconds`, `rouse_sender_retries_total`, `rouse_sender_connections_opened_total`,
/// `rouse_sender_connections` (gauge).
final class SenderMetrics: Sendable {
    private let attempts: Counter
    private let retries: Counter
    private let latency: Metrics.Timer
    private let opened: Counter
    private let open: Gauge
    private let openCount = Atomic<Int>(0)
    private let outcomes = Mutex<[String: Counter]>([:])
    /// `outcomes_total{outcome="delivered"}`, made up front: the outcome of almost every push, counted without the
    /// table's lock and string key.
    private let delivered: Counter
    private let label: String

    init(label: String) {
        self.label = label
        let dimensions = [("sender", label)]
        attempts = Counter(label: "rouse_sender_attempts_total", dimensions: dimensions)
        retries = Counter(label: "rouse_sender_retries_total", dimensions: dimensions)
        latency = Metrics.Timer(label: "rouse_sender_latency_seconds", dimensions: dimensions)
        opened = Counter(label: "rouse_sender_connections_opened_total", dimensions: dimensions)
        open = Gauge(label: "rouse_sender_connections", dimensions: dimensions)
        delivered = Counter(
            label: "rouse_sender_outcomes_total", dimensions: dimensions + [("outcome", "delivered"), ("reason", "")])
    }

    func attempt() { attempts.increment() }

    /// Connections open now.
    var openConnections: Int { openCount.load(ordering: .relaxed) }

    func connectionOpened() {
        opened.increment()
        open.record(openCount.add(1, ordering: .relaxed).newValue)
    }

    func connectionClosed() {
        open.record(openCount.subtract(1, ordering: .relaxed).newValue)
    }

    func finished(_ outcome: PushOutcome, retries count: Int, latency duration: Duration) {
        let key: String
        switch outcome {
        case .delivered:
            delivered.increment()
            record(retries: count, latency: duration)
            return
        case .rejected(let reason, _): key = "rejected|" + reason.rawValue
        case .failed(let error, _): key = "failed|" + error.kind
        }
        let counter = outcomes.withLock { table -> Counter in
            if let counter = table[key] { return counter }
            let parts = key.split(separator: "|", omittingEmptySubsequences: false)
            let counter = Counter(
                label: "rouse_sender_outcomes_total",
                dimensions: [("sender", label), ("outcome", String(parts[0])), ("reason", String(parts[1]))])
            table[key] = counter
            return counter
        }
        counter.increment()
        record(retries: count, latency: duration)
    }

    private func record(retries count: Int, latency duration: Duration) {
        if count > 0 { retries.increment(by: count) }
        latency.recordNanoseconds(
            Int64(duration.components.seconds) * 1_000_000_000
                + duration.components.attoseconds / 1_000_000_000)
    }
}
