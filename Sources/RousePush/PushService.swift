import FoundationEssentials
import Glibc
import Logging
import RouseAPNs
import RouseClock
import RouseEventLoop
import RousePushCore
import RouseSender
import RouseSystem
import Synchronization

/// The push service's core: the apps of the configuration, their warm pools (one per credential and endpoint,
/// shared by the apps that use the same), the per-app rate limits, the global budget of pushes without an outcome,
/// and SIGHUP reloads that keep in-flight pushes.
package final class PushService: Sendable {
    struct AppEntry: Sendable {
        let name: String
        let app: PushServiceConfiguration.App
        let pool: PushPool
        let limiter: AppLimiter?
        let prune: PruneOutput?
    }

    struct Table: Sendable {
        var configuration: PushServiceConfiguration
        var apps: [String: AppEntry]
        var pools: [PushPoolKey: PushPool]
        /// App names by bundle ID, for pushes that name a topic but no app.
        var byTopic: [String: String]
    }

    /// Why a push was not taken (answered before anything is sent).
    package struct Refusal: Error, Sendable, Equatable {
        /// 400, 404, 429 or 503.
        package var status: Int
        /// Why.
        package var message: String
        /// 429: seconds until the app's bucket has room again.
        package var retryAfter: Int?
    }

    private let table: Mutex<Table>
    private let pendingCount = Atomic<Int>(0)
    /// Pushes without an outcome that this service took (the budget `limits.maxPendingPushes`).
    package var pending: Int { pendingCount.load(ordering: .relaxed) }
    /// Metrics.
    package let metrics: PushServiceMetrics
    private let logger: Logger
    private let clock: any RouseClock = SystemClock()
    private let retiring = Mutex<[Task<Void, Never>]>([])
    /// The loop every pool's bulk connections run on, for the API server to serve on and start (`sharedLoop`), or nil.
    package let sharedLoop: EventLoop?

    /// Builds every pool; a credential that cannot be read throws here (the daemon refuses to start).
    ///
    /// With `sharedLoop`, every pool's bulk connections run on one loop (``sharedLoop``: the API server made with it
    /// starts it, the end of ``shutdown()`` stops it) that the API connections use too: a push goes from its API
    /// connection to its pool connection and its outcome comes back by direct calls, where each push crossed threads
    /// twice (the API loop to the pool's, and back: docs/push-service.md, "Figures"). VoIP keeps each pool's own
    /// thread.
    package init(
        configuration: PushServiceConfiguration, metrics: PushServiceMetrics, logger: Logger, sharedLoop: Bool = false
    ) throws(PushServiceError) {
        self.metrics = metrics
        self.logger = logger
        var loop: EventLoop?
        if sharedLoop {
            do {
                loop = try EventLoop(name: "rouse-pushd-io")
            } catch {
                throw .configuration("cannot make the service's loop: \(error)")
            }
        }
        self.sharedLoop = loop
        do {
            table = Mutex(try Self.build(configuration, reusing: [:], loop: loop, logger: logger))
        } catch {
            loop?.stopAndWait()
            throw error
        }
        metrics.setPools(table.withLock { $0.pools.count })
    }

    private static func build(
        _ configuration: PushServiceConfiguration, reusing old: [PushPoolKey: PushPool], loop: EventLoop?,
        logger: Logger
    ) throws(PushServiceError) -> Table {
        var pools: [PushPoolKey: PushPool] = [:]
        var apps: [String: AppEntry] = [:]
        var byTopic: [String: String] = [:]
        for (name, app) in configuration.apps.sorted(by: { $0.key < $1.key }) {
            let key = PushPoolKey(app)
            let pool: PushPool
            if let made = pools[key] {
                pool = made
            } else {
                // A pool whose settings and credential files did not change keeps its warm connections.
                if let kept = old[key], kept.fingerprint == PushPool.fingerprint(app) {
                    pool = kept
                } else {
                    do {
                        pool = try PushPool(key: key, app: app, loop: loop, logger: logger)
                    } catch {
                        // The pools this attempt made close again; the configuration in force keeps its own.
                        for made in pools.values where old[made.key] !== made { Task { await made.sender.shutdown() } }
                        throw .configuration("apps.\(name): \(error.message)")
                    }
                }
                pools[key] = pool
            }
            let limiter = app.ratePerSecond.map { AppLimiter(RateLimiter(rate: $0, burst: app.burst ?? $0)) }
            apps[name] = AppEntry(
                name: name, app: app, pool: pool, limiter: limiter, prune: app.pruneFile.map { PruneOutput(path: $0) })
            byTopic[app.topic] = byTopic[app.topic] == nil ? name : ""
        }
        return Table(configuration: configuration, apps: apps, pools: pools, byTopic: byTopic)
    }

    /// The configuration in force.
    package var configuration: PushServiceConfiguration { table.withLock { $0.configuration } }

    /// Pools (credential × endpoint) now.
    package var poolCount: Int { table.withLock { $0.pools.count } }

    /// Updates the pool gauges (sizes, token mints) before `/metrics` renders them.
    func refreshPoolMetrics() {
        let pools = table.withLock { t -> [(String, PushPool)] in
            var names: [PushPoolKey: [String]] = [:]
            for (name, entry) in t.apps { names[entry.pool.key, default: []].append(name) }
            return t.pools.map { (names[$0.key, default: []].sorted().joined(separator: "+"), $0.value) }
        }
        for (name, pool) in pools {
            metrics.setPool(name, connections: pool.sender.openConnections, tokensMinted: pool.sender.tokensMinted)
        }
        metrics.setPending(pending)
    }

    /// Replaces the configuration: new apps and pools start, pools that did not change stay warm, retired pools
    /// finish the pushes they took before they close. Nothing accepted is dropped. Throws (and keeps the old
    /// configuration) when the new one is wrong.
    package func reload(_ configuration: PushServiceConfiguration) throws(PushServiceError) {
        let old = table.withLock { $0.pools }
        let fresh: Table
        do {
            fresh = try Self.build(configuration, reusing: old, loop: sharedLoop, logger: logger)
        } catch {
            metrics.reloaded("failed")
            throw error
        }
        table.withLock { $0 = fresh }
        let kept = Set(fresh.pools.values.map { ObjectIdentifier($0) })
        for pool in old.values where !kept.contains(ObjectIdentifier(pool)) {
            let task = Task { await pool.retire() }
            retiring.withLock { $0.append(task) }
        }
        metrics.setPools(fresh.pools.count)
        metrics.reloaded("ok")
        logger.notice(
            "configuration reloaded",
            metadata: ["apps": "\(fresh.apps.count)", "pools": "\(fresh.pools.count)", "kept": "\(kept.count)"])
    }

    /// Resolves, admits (rate limit, pending budget) and sends `requests`; `completion` gets one outcome per request,
    /// in order, once all have theirs. A refusal answers the whole call before anything is sent.
    package func send(
        _ requests: [PushAPIRequest], completion: @escaping @Sendable ([PushAPIOutcome]) -> Void
    ) -> Refusal? {
        let (maxPending, lookup) = table.withLock { t in
            (t.configuration.limits?.maxPendingPushes ?? 10_000, (t.apps, t.byTopic))
        }
        var resolved: [(AppEntry, PushAPIRequest)] = []
        resolved.reserveCapacity(requests.count)
        for (index, request) in requests.enumerated() {
            let name: String
            if let app = request.app {
                name = app
            } else if let topic = request.topic {
                let bundle = Self.bundle(of: topic, type: request.type)
                guard let found = lookup.1[bundle], !found.isEmpty else {
                    return Refusal(
                        status: 404,
                        message: "no app for topic '\(topic)'" + (requests.count > 1 ? " (push \(index))" : ""))
                }
                name = found
            } else {
                return Refusal(status: 400, message: "a push needs 'app' or 'topic'")
            }
            guard let entry = lookup.0[name] else {
                return Refusal(status: 404, message: "no app named '\(name)'")
            }
            resolved.append((entry, request))
        }
        // Rate limits: the whole call is admitted or refused, per app (one push: its app alone, no table).
        var perApp: [(String, Int)] = []
        if resolved.count == 1 {
            if resolved[0].0.limiter != nil { perApp = [(resolved[0].0.name, 1)] }
        } else {
            var counts: [String: Int] = [:]
            for (entry, _) in resolved where entry.limiter != nil { counts[entry.name, default: 0] += 1 }
            perApp = counts.sorted(by: { $0.key < $1.key }).map { ($0.key, $0.value) }
        }
        let now = perApp.isEmpty ? .zero : clock.now.offset
        for (name, count) in perApp {
            guard let entry = lookup.0[name], let limiter = entry.limiter else { continue }
            if let wait = limiter.state.withLock({ $0.take(count, now: now) }) {
                metrics.limitHit(.rate)
                let seconds = max(
                    1, Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up)))
                return Refusal(status: 429, message: "app '\(name)' is over its rate limit", retryAfter: seconds)
            }
        }
        let admitted = pendingCount.add(requests.count, ordering: .relaxed).newValue
        if admitted > maxPending {
            pendingCount.subtract(requests.count, ordering: .relaxed)
            metrics.limitHit(.pending)
            return Refusal(status: 503, message: "\(maxPending) pushes are pending: try again later", retryAfter: 1)
        }
        metrics.setPending(admitted)
        // One push (the usual call): its outcome goes straight to `completion`, no collector and its lock.
        let collector = resolved.count == 1 ? nil : OutcomeCollector(count: resolved.count, completion: completion)
        for (index, (entry, request)) in resolved.enumerated() {
            let push = request.push(bundle: entry.app.topic)
            let deadline = request.deadlineMs.map { Duration.milliseconds(Int64($0)) }
            let lane = APNsSender.defaultLane(for: push)
            entry.pool.sender.send(push, lane: lane, deadline: deadline) { [self] result in
                let outcome = PushAPIOutcome(result)
                let left = pendingCount.subtract(1, ordering: .relaxed).newValue
                metrics.setPending(left)
                metrics.finished(
                    app: entry.name, type: push.pushType, outcome: outcome, lane: lane == .priority ? "voip" : "bulk")
                if case .rejected(let reason, let timestamp) = result.outcome, reason.invalidatesDeviceToken,
                    let prune = entry.prune
                {
                    prune.write(token: push.deviceToken, reason: reason.rawValue, timestamp: timestamp)
                    metrics.pruned(app: entry.name)
                }
                if let collector { collector.set(index, outcome) } else { completion([outcome]) }
            }
        }
        return nil
    }

    /// The bundle ID of a topic: the push type's suffix removed.
    static func bundle(of topic: String, type: APNsPushType) -> String {
        if let suffix = type.topicSuffix, !suffix.isEmpty, topic.hasSuffix(suffix) {
            return String(topic.dropLast(suffix.count))
        }
        return topic
    }

    /// Whether app `name` exists now.
    package func hasApp(_ name: String) -> Bool { table.withLock { $0.apps[name] != nil } }

    /// Lets every pending push end (bounded by their deadlines) and closes all pools, then stops the shared loop
    /// (the API server's shutdown comes first).
    package func shutdown() async {
        let pools = table.withLock { Array($0.pools.values) }
        for pool in pools { await pool.retire() }
        for task in retiring.withLock({ $0 }) { await task.value }
        sharedLoop?.stopAndWait()
    }
}

/// An app's token bucket, shared by the threads that submit its pushes.
final class AppLimiter: Sendable {
    let state: Mutex<RateLimiter>
    init(_ limiter: RateLimiter) { state = Mutex(limiter) }
}

/// Gathers the outcomes of one call and hands them over when the last arrives.
final class OutcomeCollector: Sendable {
    private let state: Mutex<(left: Int, outcomes: [PushAPIOutcome?])>
    private let completion: @Sendable ([PushAPIOutcome]) -> Void

    init(count: Int, completion: @escaping @Sendable ([PushAPIOutcome]) -> Void) {
        state = Mutex((count, Array(repeating: nil, count: count)))
        self.completion = completion
    }

    func set(_ index: Int, _ outcome: PushAPIOutcome) {
        let done = state.withLock { s -> [PushAPIOutcome]? in
            s.outcomes[index] = outcome
            s.left -= 1
            return s.left == 0 ? s.outcomes.compactMap { $0 } : nil
        }
        if let done { completion(done) }
    }
}

/// An app's invalid-token output: `token<TAB>reason<TAB>timestamp` lines appended to a file (the `rouse send
/// --prune-file` format), one `write(2)` with `O_APPEND` per token so lines never interleave.
final class PruneOutput: Sendable {
    let path: String

    init(path: String) { self.path = path }

    func write(token: String, reason: String, timestamp: Int64?) {
        let line = "\(token)\t\(reason)\t\(timestamp.map(String.init) ?? "")\n"
        guard let fd = try? Sys.open(path, O_WRONLY | O_APPEND | O_CREAT, mode: 0o640) else { return }
        defer { Sys.close(fd) }
        try? Sys.writeAll(fd, Array(line.utf8), path: path)
    }
}
