import Foundation
import RouseAPNs
import RouseEventLoop
import RouseGateway
import RouseHTTP2

/// `rouse-bench gateway --attack`: the gateway as an attacker without credentials meets it.
/// (a) RSS with half-open streams on both public ports (Python h2, `Tests/Interop/h2_attack.py`);
/// (b) provider push p99 while h2load floods the device port with bogus bearers, against the unloaded p99 of the
/// same run; (c) wake-ups per minute of an idle gateway with many quiet device channels and half-open streams held
/// past the device idle limit; (d) the ingest figure (h2load). Each phase runs its own `rouse-gateway`.
enum GatewayAttackBench {
    /// Sizes and durations, all flags of `rouse-bench gateway --attack`.
    struct Sizes {
        /// (a) connections per port, half-open streams per connection, body bytes attempted per stream.
        var connections = 100
        var streams = 1000
        var bodyBytes = 65536
        /// (b) unloaded pushes; the flood's length and shape (one h2load thread: one client core).
        var providerSamples = 2000
        var floodSeconds = 15
        var floodConnections = 16
        var floodStreams = 16
        /// (c) quiet channels, half-open streams (10 per connection), heartbeat and idle limit, the window.
        var quietChannels = 1000
        var halfOpenStreams = 100
        var heartbeatSeconds = 30
        var idleSeconds = 10
        var idleWindowSeconds = 60
        /// Python with h2 (default: the interop venv that deploy/interop-venv.sh creates under .build).
        var python: String?
        /// The phases to run (`--phases abcd`).
        var phases: Set<Character> = ["a", "b", "c", "d"]
    }

    /// One line of the summary table.
    struct Row {
        /// The figure's name in `--json`.
        let key: String
        let measure: String
        let value: Double
        let unit: String
        /// The value must not exceed it; nil: no target here (the ingest rate is compared across commits).
        let target: Double?
        let note: String

        var met: Bool { target.map { value <= $0 } ?? true }
        var valueText: String { String(format: "%.1f", value) + (unit.isEmpty ? "" : " \(unit)") }
        var targetText: String {
            guard let target else { return "(vs previous)" }
            return "≤ " + String(format: "%.1f", target) + (unit.isEmpty ? "" : " \(unit)")
        }
        var ratioText: String {
            guard let target else { return "-" }
            let verdict = met ? "" : " MISSED"
            return (target > 0 ? String(format: "%.2f", value / target) : (met ? "ok" : "")) + verdict
        }
    }

    static let bogusBearer = "Bearer d0123456789abcdef." + String(repeating: "0", count: 64)

    static func run(_ options: GatewayBench.Options) async throws {
        let sizes = options.attackSizes
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-gateway-attack-\(UUID())"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let context = try Context(options: options, directory: directory)
        var details: [(String, String)] = [("machine", GatewayBench.machine())]
        func detail(_ name: String, _ value: String) {
            details.append((name, value))
            if !options.json { print("\(name): \(value)") }
        }
        if !options.json { print("machine: \(details[0].1)") }

        var rows: [Row] = []
        // (b) and (d) on one gateway with the benchmark's limits (quotas out of the way, as the ingest figure).
        if sizes.phases.contains("b") || sizes.phases.contains("d") {
            let pushes = try await pushesUnderFlood(context, detail: detail)
            if sizes.phases.contains("b") {
                rows.append(
                    Row(
                        key: "provider_p99_flood_ms", measure: "(b) provider push p99 under a bogus-bearer flood",
                        value: pushes.loadedP99, unit: "ms", target: 2 * pushes.unloadedP99,
                        note: String(
                            format: "unloaded p99 %.3f ms (target 2×); flood %.0f req/s; control: p99 %.3f ms with "
                                + "a busy loop on one core instead of the flood", pushes.unloadedP99,
                            pushes.floodRate, pushes.controlP99)))
                rows.append(
                    Row(
                        key: "provider_503_flood", measure: "(b) provider 503s under the flood",
                        value: Double(pushes.loaded503), unit: "", target: 0,
                        note: "of \(pushes.loadedCount) pushes during the flood"))
            }
            if sizes.phases.contains("d") {
                rows.append(
                    Row(
                        key: "ingest_h2load_per_second",
                        measure: "(d) ingest, h2load -c \(options.connections) -m \(options.streams), "
                            + "\(options.pushes) pushes",
                        value: pushes.ingestRate, unit: "pushes/s", target: nil,
                        note: "compare with the same figure of the previous commit"))
            }
        }
        // (a) on a gateway with the shipped defaults.
        if sizes.phases.contains("a") {
            let memory = try await halfOpenMemory(context, detail: detail)
            rows.append(
                Row(
                    key: "rss_peak_mib",
                    measure:
                        "(a) gateway RSS, \(sizes.connections) conn × \(sizes.streams) half-open streams on each port",
                    value: Double(memory.peakKiB) / 1024, unit: "MiB", target: 200,
                    note: "VmHWM; \(Int(Double(memory.beforeKiB) / 1024)) MiB before, "
                        + "\(Int(Double(memory.afterKiB) / 1024)) MiB after the client left"))
        }
        // (c) on a gateway with heartbeats and a short device idle limit.
        if sizes.phases.contains("c") {
            let idle = try await idleWakeUps(context, detail: detail)
            let expected =
                Double(sizes.quietChannels * 60) / Double(sizes.heartbeatSeconds) + 60.0 / 30.0
                + Double(halfOpenConnections(sizes) * 60) / Double(sizes.idleSeconds)
            rows.append(
                Row(
                    key: "idle_wakeups_per_minute", measure: "(c) idle wake-ups per minute", value: idle.perMinute,
                    unit: "/min", target: expected,
                    note: "\(sizes.quietChannels) quiet channels, heartbeat \(sizes.heartbeatSeconds) s, "
                        + "\(sizes.halfOpenStreams) half-open streams past \(sizes.idleSeconds) s; "
                        + "target: a heartbeat per channel, sweeps, one idle look per half-open connection per period; "
                        + String(format: "%.1f/min with no connection at all", idle.baselinePerMinute)))
        }
        rows.sort { $0.measure < $1.measure }
        if options.json {
            var fields = details.map { "\(JSONText.quoted($0.0)):\(JSONText.quoted($0.1))" }
            fields += rows.map { row in
                let target = row.target.map { "\($0)" } ?? "null"
                return "\(JSONText.quoted(row.key)):{\"value\":\(row.value),\"target\":\(target),\"met\":\(row.met)}"
            }
            print("{" + fields.joined(separator: ",") + "}")
        } else {
            printTable(rows)
        }
    }

    static func printTable(_ rows: [Row]) {
        func pad(_ text: String, _ width: Int) -> String {
            text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
        }
        print("")
        print(pad("measure", 76) + pad("value", 20) + pad("target", 18) + "ratio")
        for row in rows {
            print(pad(row.measure, 76) + pad(row.valueText, 20) + pad(row.targetText, 18) + row.ratioText)
            print("    " + row.note)
        }
    }

    /// (c)'s half-open streams go 10 to a connection (the device port admits 16), rounded up to whole connections.
    static func halfOpenConnections(_ sizes: Sizes) -> Int { (sizes.halfOpenStreams + 9) / 10 }
    static func halfOpenPerConnection(_ sizes: Sizes) -> Int { min(10, sizes.halfOpenStreams) }
}

/// What every phase needs: paths, the signing key, a client event loop.
struct AttackContext {
    let options: GatewayBench.Options
    let directory: String
    let certs: String
    /// The package's checkout (certs/, Tests/Interop/, deploy/).
    let repository: String
    let executable: String
    let python: String
    let loop: EventLoop

    init(options: GatewayBench.Options, directory: String) throws {
        self.options = options
        self.directory = directory
        certs = try GatewayBench.certsDirectory()
        repository = URL(fileURLWithPath: certs).deletingLastPathComponent().path
        executable = try options.gateway ?? GatewayBench.sibling("rouse-gateway")
        python = try options.attackSizes.python ?? AttackClient.venvPython(repository: repository)
        loop = try EventLoop(name: "bench-attack-client")
        loop.start()
    }

    /// A provider token for the bench key, issued now.
    func jwt() throws -> String {
        try ProviderToken(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: Gateway.systemMilliseconds() / 1000)
            .signed(
                with: ProviderToken.privateKey(pem: String(contentsOfFile: certs + "/apns-key.p8", encoding: .utf8)))
    }
}

extension GatewayAttackBench {
    typealias Context = AttackContext
}
