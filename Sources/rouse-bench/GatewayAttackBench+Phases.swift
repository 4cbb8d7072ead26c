import Foundation
import RouseChildProcess
import RouseGateway
import RouseHTTP2

extension GatewayAttackBench {
    struct PushFigures {
        var ingestRate = 0.0
        var unloadedP99 = 0.0
        var loadedP99 = 0.0
        var loadedCount = 0
        var loaded503 = 0
        var floodRate = 0.0
        /// p99 while a busy loop takes one core instead of the flood: what the CPU contention alone costs.
        var controlP99 = 0.0
    }

    /// (b) provider pushes one at a time on one connection, alone and while h2load floods the device port with a
    /// bogus bearer; then (d) the ingest figure.
    static func pushesUnderFlood(_ context: Context, detail: (String, String) -> Void) async throws -> PushFigures {
        let database = context.directory + "/pushes.sqlite"
        let store = try SQLiteGatewayStore(path: database)
        let now = Gateway.systemMilliseconds()
        let ids = ["attack-0", "attack-1"]
        _ = try Gateway.provisionDevices(store: store, ids: ids, now: now)
        let tokens = try Gateway.provisionTokens(store: store, deviceIDs: ids, topic: "com.example.rouse", now: now)
        let gateway = try await ChildGateway.start(
            executable: context.executable, directory: context.directory, database: database, certs: context.certs,
            name: "pushes")
        defer { gateway.stop() }
        let jwt = try context.jwt()
        var figures = PushFigures()

        if context.options.attackSizes.phases.contains("b") {
            try await providerUnderFlood(
                context, gateway: gateway, token: tokens[1], jwt: jwt, into: &figures, detail: detail)
        }
        if context.options.attackSizes.phases.contains("d") {
            // Last: 20 000 stored pushes leave SQLite a large WAL to checkpoint, which would weigh on (b).
            let ingest = try await GatewayBench.h2loadIngest(
                context.options, port: gateway.providerPort, token: tokens[0], jwt: jwt, directory: context.directory)
            figures.ingestRate = ingest.rate
            detail("ingest_h2load_per_second", String(format: "%.0f", ingest.rate))
            detail("ingest_h2load_succeeded", "\(ingest.succeeded)/\(context.options.pushes)")
        }
        return figures
    }

    /// (b): pushes one at a time alone, then while h2load floods the device port, then while a busy loop takes one
    /// core (the control).
    static func providerUnderFlood(
        _ context: Context, gateway: ChildGateway, token: String, jwt: String, into figures: inout PushFigures,
        detail: (String, String) -> Void
    ) async throws {
        let sizes = context.options.attackSizes
        let provider = try await GatewayBench.connect(port: gateway.providerPort, loop: context.loop)
        defer { provider.close() }
        let request = HTTP2ClientRequest(
            path: "/3/device/\(token)", authority: "localhost",
            headers: [
                HTTP2Header("authorization", "bearer \(jwt)", neverIndex: true),
                HTTP2Header("apns-topic", "com.example.rouse"), HTTP2Header("apns-push-type", "alert"),
            ], body: Array(#"{"aps":{"alert":"p99"}}"#.utf8))
        // Warm-up (first TLS records, the first transactions), then the unloaded figure.
        _ = await pushes(provider, request, count: 100, until: nil)
        let unloaded = await pushes(provider, request, count: sizes.providerSamples, until: nil)
        figures.unloadedP99 = GatewayBench.percentile(unloaded.samples, 0.99)
        detail("provider_unloaded", summary(unloaded))

        // One h2load thread (one client core), as many requests in flight as the device port lets it have.
        let h2load = context.options.h2load
        let flood = Task {
            try await GatewayBench.runProcess(
                h2load,
                [
                    "-t", "1", "-c", "\(sizes.floodConnections)", "-m", "\(sizes.floodStreams)",
                    "-D", "\(sizes.floodSeconds)", "-H", "authorization: \(bogusBearer)",
                    "https://127.0.0.1:\(gateway.devicePort)/device/v1/tokens",
                ])
        }
        // The flood's connections are up within a second; the pushes stop a second before it ends.
        try await Task.sleep(for: .seconds(1))
        let loaded = await pushes(
            provider, request, count: nil, until: ContinuousClock.now + .seconds(sizes.floodSeconds - 2))
        let floodOutput = try await flood.value
        figures.loadedP99 = GatewayBench.percentile(loaded.samples, 0.99)
        figures.loadedCount = loaded.samples.count + loaded.failures.values.reduce(0, +)
        figures.loaded503 = loaded.failures[503] ?? 0
        detail("provider_under_flood", summary(loaded))
        for line in floodOutput.split(separator: "\n") {
            if line.hasPrefix("finished in"), let field = line.split(separator: ",").dropFirst().first {
                figures.floodRate =
                    Double(field.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
            }
            if line.hasPrefix("status codes:") || line.hasPrefix("requests:") {
                detail("flood_" + (line.hasPrefix("status") ? "status_codes" : "requests"), String(line))
            }
        }
        detail("flood_per_second", String(format: "%.0f", figures.floodRate))
        let queueFull = try await GatewayBench.adminMetric(
            limitHits("device", "device-queue-full"), gateway: gateway, loop: context.loop)
        detail("flood_device_queue_full", "\(Int(queueFull ?? 0))")

        // The control: a busy loop on one core instead of the flood (the flood's client takes a core as well).
        let busy = try ChildProcess.start("/bin/sh", ["-c", "while :; do :; done"])
        defer { busy.kill() }
        let control = await pushes(
            provider, request, count: nil, until: ContinuousClock.now + .seconds(sizes.floodSeconds - 2))
        busy.kill()
        figures.controlP99 = GatewayBench.percentile(control.samples, 0.99)
        detail("provider_with_busy_loop", summary(control))
    }

    static func limitHits(_ listener: String, _ limit: String) -> String {
        #"rouse_gateway_limit_hits_total{listener="\#(listener)",limit="\#(limit)"}"#
    }

    /// Pushes one at a time: `count` of them, or until `until`. Latencies (ms) of the 200s; the other statuses.
    static func pushes(
        _ client: HTTP2Client, _ request: HTTP2ClientRequest, count: Int?, until: ContinuousClock.Instant?
    ) async -> (samples: [Double], failures: [Int: Int]) {
        var samples: [Double] = []
        var failures: [Int: Int] = [:]
        var sent = 0
        while count.map({ sent < $0 }) ?? true, until.map({ ContinuousClock.now < $0 }) ?? true {
            let start = ContinuousClock.now
            let answer = await client.send(request)
            let elapsed = (ContinuousClock.now - start).seconds * 1000
            sent += 1
            switch answer {
            case .response(200, _, _): samples.append(elapsed)
            case .response(let status, _, _): failures[status, default: 0] += 1
            case .notProcessed, .failed: failures[-1, default: 0] += 1
            }
        }
        return (samples, failures)
    }

    static func summary(_ result: (samples: [Double], failures: [Int: Int])) -> String {
        String(
            format: "%d pushes answered 200, p50 %.3f ms, p99 %.3f ms, max %.3f ms; other answers %@",
            result.samples.count, GatewayBench.percentile(result.samples, 0.5),
            GatewayBench.percentile(result.samples, 0.99), result.samples.max() ?? 0,
            result.failures.isEmpty ? "none" : "\(result.failures.sorted { $0.key < $1.key })")
    }

    struct MemoryFigures {
        var beforeKiB = 0
        var peakKiB = 0
        var afterKiB = 0
    }

    /// (a) half-open streams on both ports at once, on a gateway with the shipped limits.
    static func halfOpenMemory(_ context: Context, detail: (String, String) -> Void) async throws -> MemoryFigures {
        let sizes = context.options.attackSizes
        let gateway = try await ChildGateway.start(
            executable: context.executable, directory: context.directory,
            database: context.directory + "/memory.sqlite", certs: context.certs, limits: "{}", name: "memory")
        defer { gateway.stop() }
        let pid = gateway.process.processIdentifier
        var figures = MemoryFigures(beforeKiB: gateway.rssKiB())
        let socketsBefore = ProcessProbe.sockets(pid)
        let script = context.repository + "/Tests/Interop/h2_attack.py"
        let started = ContinuousClock.now
        let attacks = try [
            ("device", gateway.devicePort, "/device/v1/tokens"),
            ("provider", gateway.providerPort, "/3/device/" + String(repeating: "ab", count: 32)),
        ].map { name, port, path in
            (
                name,
                try HalfOpenAttackScript.start(
                    python: context.python, script: script, port: port, path: path, connections: sizes.connections,
                    streams: sizes.streams, bodyBytes: sizes.bodyBytes)
            )
        }
        for (name, attack) in attacks {
            let holding = try await attack.phase("holding", timeout: .seconds(900))
            detail(
                "attack_\(name)",
                "\(holding.connections) connections, \(holding.streams) streams, \(holding.bodyBytes) body bytes sent; "
                    + "RST_STREAM \(holding.resetSummary); GOAWAY \(holding.goAways.count), "
                    + "\(holding.closedByPeer) closed by the gateway")
        }
        detail("attack_sent_in_seconds", String(format: "%.1f", (ContinuousClock.now - started).seconds))
        figures.peakKiB = Bench.memoryKiB(pid: pid, field: "VmHWM")
        detail("rss_under_attack_mib", String(format: "%.1f", Double(gateway.rssKiB()) / 1024))
        detail("rss_peak_mib", String(format: "%.1f", Double(figures.peakKiB) / 1024))
        for (_, attack) in attacks { _ = try await attack.stop() }
        let left = try await AttackClient.waitForSockets(pid, atMost: socketsBefore, timeout: .seconds(60))
        figures.afterKiB = gateway.rssKiB()
        detail(
            "rss_before_after_mib",
            String(
                format: "%.1f → %.1f (%d connections still open)", Double(figures.beforeKiB) / 1024,
                Double(figures.afterKiB) / 1024, max(left - socketsBefore, 0)))
        return figures
    }
}
