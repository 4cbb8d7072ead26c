import FoundationEssentials
import Prometheus
import RouseHTTP2
import RouseText
import Synchronization

/// The gateway's Prometheus metrics, in its own registry (so several gateways can live in one test process):
/// pushes in by push type and outcome, pushes out, acknowledgements, drops, queue depth, connected devices,
/// delivery latency (acceptance → written to the device channel).
package final class GatewayMetrics: Sendable {
    /// The registry `/metrics` renders.
    package let registry = PrometheusCollectorRegistry()
    private let connected: Gauge
    private let queueDepth: Gauge
    private let http2Sessions: Gauge
    private let http2SessionBytes: Gauge
    private let timerEntries: Gauge
    private let latency: ValueHistogram
    private let acks: Counter
    private let expiredCounter: Counter
    /// Counters by (name, type, outcome), created on first use.
    private let counters = Mutex<[String: Counter]>([:])
    /// Budget-hit counts already added to the counters, per listener and limit.
    private let limitSeen = Mutex<[String: UInt64]>([:])
    /// Plain totals for tests and the benchmark.
    private let totals = Mutex<[String: Int]>([:])

    /// Metrics with every fixed series registered.
    package init() {
        connected = registry.makeGauge(descriptor: Self.name("connected", "devices", "Device channels open"))
        queueDepth = registry.makeGauge(
            descriptor: Self.name("pending", "pushes", "Pushes stored, not yet acknowledged"))
        http2Sessions = registry.makeGauge(
            descriptor: Self.name("http2_sessions", "open", "nghttp2 server sessions open in this process"))
        http2SessionBytes = registry.makeGauge(
            descriptor: Self.name("http2_session", "bytes", "Memory nghttp2 holds for the server sessions"))
        timerEntries = registry.makeGauge(
            descriptor: Self.name(
                "timer", "entries", "Timers the provider and device listeners' loops hold, live and cancelled"))
        latency = registry.makeValueHistogram(
            descriptor: Self.name(
                "delivery_latency", "seconds", "Time from acceptance to the write on the device channel"),
            buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 60, 3600, 86_400])
        acks = registry.makeCounter(descriptor: Self.name("acks", "total", "Pushes acknowledged by devices"))
        expiredCounter = registry.makeCounter(
            descriptor: Self.name("expired", "total", "Stored pushes dropped at their expiration"))
    }

    /// A push arrived from a provider and ended as `outcome` (`stored`, `delivered-now`, `dropped-offline`,
    /// `expired`, or an APNs reason).
    package func pushIn(type: String?, outcome: String) {
        count("rouse_gateway_pushes_in_total", type: MetricLabel.pushType(type), outcome: outcome)
    }

    /// A push was written to a device channel.
    package func pushOut(type: String?, latencyMilliseconds: Int64) {
        count("rouse_gateway_pushes_out_total", type: MetricLabel.pushType(type), outcome: "sent")
        latency.record(Double(max(latencyMilliseconds, 0)) / 1000)
    }

    /// A push was dropped without delivery: `reason` is `collapsed`, `background-slot`,
    /// `expiration-zero-offline`, `channel-closed`, or a storage quota (`token-quota`, `device-quota`).
    package func dropped(type: String?, reason: String, count amount: Int = 1) {
        for _ in 0..<amount { count("rouse_gateway_dropped_total", type: MetricLabel.pushType(type), outcome: reason) }
    }

    /// Pushes acknowledged.
    package func acknowledged(count amount: Int) {
        acks.increment(by: Int64(amount))
        add("acks", amount)
    }

    /// Stored pushes expired.
    package func expired(count amount: Int) {
        expiredCounter.increment(by: Int64(amount))
        add("expired", amount)
    }

    /// Brings `rouse_gateway_limit_hits_total{listener,limit}` up to a listener's budget-hit counts: connections
    /// refused (in total, per address), accept pauses (EMFILE), streams refused (buffer budget), request
    /// timeouts, connections that did not authenticate in time. An attack shows here.
    package func recordLimitCounts(listener: String, _ counts: HTTP2ServerLimitCounts) {
        let listener = MetricLabel.listener(listener)
        let values: [(String, UInt64)] = [
            ("connections-refused", counts.connectionsRefused),
            ("connections-refused-per-address", counts.connectionsRefusedPerAddress),
            ("accept-paused", counts.acceptPauses), ("streams-refused-buffer", counts.streamsRefusedBufferBudget),
            ("streams-refused-listener-buffer", counts.streamsRefusedListenerBuffer),
            ("request-timeout", counts.requestTimeouts), ("authentication-timeout", counts.authenticationTimeouts),
        ]
        for (limit, value) in values {
            let key = "\(listener)|\(limit)"
            let delta = limitSeen.withLock { seen -> UInt64 in
                let old = seen[key] ?? 0
                seen[key] = max(old, value)
                return value > old ? value - old : 0
            }
            let counter = limitCounter(listener: listener, limit: limit)
            if delta > 0 {
                counter.increment(by: Int64(delta))
                add("limit/\(listener)/\(limit)", Int(delta))
            }
        }
    }

    /// One hit of a gateway-level budget (not the HTTP/2 kernel's), counted in the same series.
    package func limitHit(listener: String, limit: String) {
        let (listener, limit) = (MetricLabel.listener(listener), MetricLabel.limit(limit))
        limitCounter(listener: listener, limit: limit).increment()
        add("limit/\(listener)/\(limit)", 1)
    }

    /// The `rouse_gateway_limit_hits_total{listener,limit}` counter.
    private func limitCounter(listener: String, limit: String) -> Counter {
        let (listener, limit) = (MetricLabel.listener(listener), MetricLabel.limit(limit))
        return counter(
            key: "limit_hits|\(listener)|\(limit)",
            descriptor: Self.name("limit_hits", "total", "Budgets hit on a listener, by limit"),
            labels: [("listener", listener), ("limit", limit)])
    }

    /// The counter registered under `key`, made on first use.
    private func counter(key: String, descriptor: MetricNameDescriptor, labels: [(String, String)]) -> Counter {
        counters.withLock { counters -> Counter in
            if let counter = counters[key] { return counter }
            let counter = registry.makeCounter(descriptor: descriptor, labels: labels)
            counters[key] = counter
            return counter
        }
    }

    /// A channel close was queued for the store thread (tests: only opened channels queue one).
    func channelCloseQueued() { add("channel-closes-queued", 1) }

    /// Timers held by the listeners' loops (`HTTP2Server.timerEntries`).
    package func setTimerEntries(_ value: Int) { timerEntries.set(to: Double(value)) }

    /// Open device channels now.
    package func setConnectedDevices(_ value: Int) { connected.set(to: Double(value)) }

    /// Pending pushes now.
    package func setPending(_ value: Int) { queueDepth.set(to: Double(value)) }

    /// nghttp2's server sessions and the bytes it holds for them (`HTTP2Server.sessionMemory`).
    package func setHTTP2SessionMemory(sessions: Int, bytes: Int) {
        http2Sessions.set(to: Double(sessions))
        http2SessionBytes.set(to: Double(bytes))
    }

    /// The Prometheus text exposition.
    package func render() -> [UInt8] { registry.emitToBuffer() }

    /// A plain total, e.g. `rouse_gateway_dropped_total{reason=expiration-zero-offline}` as
    /// `dropped/expiration-zero-offline` (tests).
    package func total(_ key: String) -> Int { totals.withLock { $0[key] ?? 0 } }

    private func count(_ name: String, type: String, outcome: String) {
        // Every label value from a closed set: a header a peer sent never names a series.
        let type = MetricLabel.pushType(type)
        let outcome = MetricLabel.outcome(outcome)
        let label = name == "rouse_gateway_dropped_total" ? "reason" : "outcome"
        let base = String(name.dropFirst("rouse_gateway_".count).dropLast("_total".count))
        counter(
            key: "\(name)|\(type)|\(outcome)", descriptor: Self.name(base, "total", Self.help[base] ?? base),
            labels: [("type", type), (label, outcome)]
        ).increment()
        let short = name.replacingAll("rouse_gateway_", with: "").replacingAll("_total", with: "")
        add("\(short)/\(outcome)", 1)
        add("\(short)/\(type)/\(outcome)", 1)
    }

    private static let help = [
        "pushes_in": "Pushes received from providers, by push type and outcome",
        "pushes_out": "Pushes written to device channels, by push type",
        "dropped": "Pushes dropped without delivery, by push type and reason",
    ]

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "rouse", subsystem: "gateway", metricName: metric, unitName: unit, helpText: help)
    }

    private func add(_ key: String, _ amount: Int) {
        totals.withLock { $0[key, default: 0] += amount }
    }
}
