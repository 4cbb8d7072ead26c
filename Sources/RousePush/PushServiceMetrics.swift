import Prometheus
import RouseAPNs
import RousePushCore
import Synchronization

/// rouse-pushd's Prometheus metrics, every label from a closed set: `app` from the configuration's app names, `type`
/// from the known APNs push types (others count as `other`), `outcome` delivered/rejected/failed, `reason` from the
/// documented APNs reasons (others: `other`), `limit` from the budgets below.
package final class PushServiceMetrics: Sendable {
    /// The registry `/metrics` renders (the senders' swift-metrics report here too when the daemon bootstraps it).
    package let registry = PrometheusCollectorRegistry()
    private let counters = Mutex<[String: Counter]>([:])
    private let histograms = Mutex<[String: DurationHistogram]>([:])
    private let pending: Gauge
    private let pools: Gauge
    private let connections: Gauge
    private let totals = Mutex<[String: Int]>([:])
    /// The series a push's outcome updates, looked up by one small key (made on first use).
    private let series = Mutex<[SeriesKey: Series]>([:])
    private let delivered = Atomic<Int>(0)
    private let rejected = Atomic<Int>(0)
    private let failed = Atomic<Int>(0)

    private struct SeriesKey: Hashable {
        var app: String
        var type: String
        var kind: PushAPIOutcome.Kind
        var lane: String
    }

    private struct Series {
        var pushes: Counter
        var latency: DurationHistogram
    }

    /// The budgets counted by `limitHit`.
    package enum Limit: String, Sendable, CaseIterable {
        case connections, bodySize = "body_size", headerSize = "header_size", pending, rate, batch, peer, auth
        case timeout, parse
    }

    /// Metrics with the fixed series registered.
    package init() {
        pending = registry.makeGauge(descriptor: Self.descriptor("rouse_pushd_pending_pushes"), labels: [])
        pools = registry.makeGauge(descriptor: Self.descriptor("rouse_pushd_pools"), labels: [])
        connections = registry.makeGauge(descriptor: Self.descriptor("rouse_pushd_api_connections"), labels: [])
        for limit in Limit.allCases { _ = counter("rouse_pushd_limit_hits_total", [("limit", limit.rawValue)]) }
    }

    private static let help: [String: String] = [
        "rouse_pushd_pushes_total": "Pushes by app, push type and outcome",
        "rouse_pushd_rejections_total": "Rejected pushes by app and APNs reason",
        "rouse_pushd_retries_total": "Resends by app",
        "rouse_pushd_latency_seconds": "API request to outcome, by app and lane",
        "rouse_pushd_limit_hits_total": "Budgets hit, by limit",
        "rouse_pushd_reloads_total": "Configuration reloads by result",
        "rouse_pushd_pruned_tokens_total": "Invalid tokens written to the prune output, by app",
        "rouse_pushd_pending_pushes": "Pushes taken and without an outcome yet",
        "rouse_pushd_pools": "Pools of connections (credential and endpoint)",
        "rouse_pushd_api_connections": "API connections open",
        "rouse_pushd_pool_connections": "Connections open per pool",
        "rouse_pushd_token_refreshes_total": "Provider tokens minted per pool",
    ]

    /// The full metric name as given, with its help text.
    private static func descriptor(_ name: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help[name] ?? "")
    }

    private static let knownTypes = Set(APNsPushType.known.map(\.rawValue))
    private static let knownReasons = Set(APNsReason.documented.map(\.rawValue))

    private func counter(_ name: String, _ labels: [(String, String)]) -> Counter {
        let key = name + labels.map { "|\($0.0)=\($0.1)" }.joined()
        return counters.withLock { table in
            if let c = table[key] { return c }
            let c = registry.makeCounter(descriptor: Self.descriptor(name), labels: labels)
            table[key] = c
            return c
        }
    }

    /// A push of `app` ended with `outcome` after `seconds` from request to outcome.
    func finished(app: String, type: APNsPushType, outcome: PushAPIOutcome, lane: String) {
        let key = SeriesKey(app: app, type: type.rawValue, kind: outcome.kind, lane: lane)
        let found = series.withLock { $0[key] }
        let handles: Series
        if let found {
            handles = found
        } else {
            handles = makeSeries(key)
            series.withLock { $0[key] = handles }
        }
        handles.pushes.increment()
        handles.latency.recordNanoseconds(Int64(outcome.latencyMs * 1_000_000))
        if let reason = outcome.reason {
            let r = Self.knownReasons.contains(reason) ? reason : "other"
            counter("rouse_pushd_rejections_total", [("app", app), ("reason", r)]).increment()
        }
        if outcome.retries > 0 {
            counter("rouse_pushd_retries_total", [("app", app)]).increment(by: Int64(outcome.retries))
        }
        switch outcome.kind {
        case .delivered: delivered.add(1, ordering: .relaxed)
        case .rejected: rejected.add(1, ordering: .relaxed)
        case .failed: failed.add(1, ordering: .relaxed)
        }
    }

    /// The counter and histogram of one app, type, outcome and lane (the registry returns the same series when asked
    /// again, so two threads making one at once is harmless).
    private func makeSeries(_ key: SeriesKey) -> Series {
        let typeLabel = Self.knownTypes.contains(key.type) ? key.type : "other"
        let pushes = counter(
            "rouse_pushd_pushes_total", [("app", key.app), ("type", typeLabel), ("outcome", key.kind.rawValue)])
        let histogramKey = key.app + "|" + key.lane
        let latency = histograms.withLock { table in
            if let h = table[histogramKey] { return h }
            let h = registry.makeDurationHistogram(
                descriptor: Self.descriptor("rouse_pushd_latency_seconds"),
                labels: [("app", key.app), ("lane", key.lane)],
                buckets: [
                    .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
                    .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
                    .milliseconds(500), .seconds(1), .seconds(5), .seconds(30),
                ])
            table[histogramKey] = h
            return h
        }
        return Series(pushes: pushes, latency: latency)
    }

    func limitHit(_ limit: Limit) {
        counter("rouse_pushd_limit_hits_total", [("limit", limit.rawValue)]).increment()
        add("limit/\(limit.rawValue)", 1)
    }

    /// A configuration reload ended (`ok` or `failed`).
    func reloaded(_ result: String) {
        counter("rouse_pushd_reloads_total", [("result", result)]).increment()
    }

    /// An invalid token was written to an app's prune output.
    func pruned(app: String) { counter("rouse_pushd_pruned_tokens_total", [("app", app)]).increment() }

    private let poolGauges = Mutex<[String: Gauge]>([:])
    private let mintsSeen = Mutex<[String: Int]>([:])

    /// A pool's size and its token mints so far (`pool` names the apps that share it, e.g. `app1+app2`).
    func setPool(_ pool: String, connections: Int, tokensMinted: Int) {
        let gauge = poolGauges.withLock { table in
            if let g = table[pool] { return g }
            let g = registry.makeGauge(
                descriptor: Self.descriptor("rouse_pushd_pool_connections"), labels: [("pool", pool)])
            table[pool] = g
            return g
        }
        gauge.set(to: Double(connections))
        let delta = mintsSeen.withLock { seen -> Int in
            defer { seen[pool] = max(seen[pool] ?? 0, tokensMinted) }
            return tokensMinted - (seen[pool] ?? 0)
        }
        let mints = counter("rouse_pushd_token_refreshes_total", [("pool", pool)])
        if delta > 0 { mints.increment(by: Int64(delta)) }
    }

    func setPending(_ n: Int) { pending.set(to: Double(n)) }
    func setPools(_ n: Int) { pools.set(to: Double(n)) }
    func setConnections(_ n: Int) { connections.set(to: Double(n)) }

    private func add(_ key: String, _ n: Int) { totals.withLock { $0[key, default: 0] += n } }

    /// Plain totals for tests (`limit/<name>`, `pushes/<outcome>`).
    package func total(_ key: String) -> Int {
        switch key {
        case "pushes/delivered": delivered.load(ordering: .relaxed)
        case "pushes/rejected": rejected.load(ordering: .relaxed)
        case "pushes/failed": failed.load(ordering: .relaxed)
        default: totals.withLock { $0[key] ?? 0 }
        }
    }

    /// The Prometheus text exposition.
    package func render() -> [UInt8] { registry.emitToBuffer() }
}
