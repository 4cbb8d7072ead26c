import Foundation
import RouseAPNs
import RouseChildProcess
import RouseCurl
import RouseEventLoop
import RouseGateway
import RouseHTTP2

/// `rouse-bench gateway --nodes 1,3 --store sqlite,postgres`: per configuration (store × number of gateway
/// processes), durable ingest (h2load, one per node, at once), provider → device latency when the push lands on
/// the node holding the channel and when it lands on another node, failover (SIGKILL of the node holding the
/// channel while a provider pushes through another: time to the first push delivered through a surviving node,
/// and pushes answered 200 that never arrived), and the CPU time of the gateways and of PostgreSQL during ingest.
///
/// PostgreSQL is a cluster the benchmark creates (`initdb` in a temporary directory, Debian's defaults: `fsync` on,
/// `synchronous_commit` on) on a free loopback port, one fresh database per configuration, stopped at the end. SQLite
/// runs one node only (a file is not shared across machines).
enum GatewayNodesBench {
    struct Configuration: CustomStringConvertible {
        var store: String
        var nodes: Int
        var description: String { "\(store)×\(nodes)" }
    }

    static func run(_ options: GatewayBench.Options, nodes: [Int], stores: [String]) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-nodes-bench-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certs = try GatewayBench.certsDirectory()
        let executable = try options.gateway ?? GatewayBench.sibling("rouse-gateway")
        var postgres: BenchPostgres?
        if stores.contains("postgres") { postgres = try await BenchPostgres.start(in: directory + "/pg") }
        defer { postgres?.stop() }
        var results: [(String, String)] = []
        func report(_ name: String, _ value: String) {
            results.append((name, value))
            if !options.json { print("\(name): \(value)") }
        }
        report("machine", GatewayBench.machine())
        if let postgres { report("postgres", postgres.version) }
        var index = 0
        for store in stores {
            for count in nodes {
                let configuration = Configuration(store: store, nodes: count)
                if store == "sqlite" && count > 1 {
                    report("\(configuration)", "skipped: SQLite serves one node")
                    continue
                }
                index += 1
                let database: String
                if let postgres, store == "postgres" {
                    database = try await postgres.createDatabase("bench\(index)")
                } else {
                    database = directory + "/bench\(index).sqlite"
                }
                try await measure(
                    configuration, database: database, options: options, executable: executable, certs: certs,
                    directory: directory, postgres: store == "postgres" ? postgres : nil, report: report)
            }
        }
        if options.json {
            let body = results.map { "\(JSONText.quoted($0.0)):\(JSONText.quoted($0.1))" }.joined(separator: ",")
            print("{" + body + "}")
        }
    }

    static func measure(
        _ configuration: Configuration, database: String, options: GatewayBench.Options, executable: String,
        certs: String, directory: String, postgres: BenchPostgres?, report: (String, String) -> Void
    ) async throws {
        let name = "\(configuration)"
        let store = try GatewayConfiguration.openStore(database: database)
        let now = Gateway.systemMilliseconds()
        // One ingest device per node: pushes for one device serialize on its row across nodes (its order), so a
        // shared device would measure that lock, not ingest.
        let ids = ["latency", "failover"] + (0..<configuration.nodes).map { "ingest-\($0)" }
        let credentials = try Gateway.provisionDevices(store: store, ids: ids, now: now)
        let tokens = try Gateway.provisionTokens(store: store, deviceIDs: ids, topic: "com.example.rouse", now: now)
        var gateways: [ChildGateway] = []
        defer { for gateway in gateways { gateway.stop() } }
        for node in 0..<configuration.nodes {
            gateways.append(
                try await ChildGateway.start(
                    executable: executable, directory: directory, database: database, certs: certs,
                    name: "\(name)-n\(node)", node: configuration.nodes > 1 ? "n\(node)" : nil))
        }
        let jwt = try ProviderToken(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: now / 1000)
            .signed(
                with: ProviderToken.privateKey(pem: String(contentsOfFile: certs + "/apns-key.p8", encoding: .utf8)))
        let loop = try EventLoop(name: "bench-nodes")
        loop.start()

        // 1. Durable ingest: one h2load per node at once, each with its share of the pushes.
        let gatewayTicks = gateways.map { ProcessProbe.cpuTicks($0.process.processIdentifier) ?? 0 }.reduce(0, +)
        let pgTicks = postgres?.cpuTicks() ?? 0
        let start = ContinuousClock.now
        var perNode = options
        perNode.pushes = max(options.pushes / configuration.nodes, 1)
        let share = perNode
        let succeeded = try await withThrowingTaskGroup(of: Int.self) { group in
            for (node, gateway) in gateways.enumerated() {
                group.addTask {
                    let nodeDirectory = directory + "/h2load-\(node)"
                    try FileManager.default.createDirectory(atPath: nodeDirectory, withIntermediateDirectories: true)
                    return try await GatewayBench.h2loadIngest(
                        share, port: gateway.providerPort, token: tokens[2 + node], jwt: jwt, directory: nodeDirectory
                    ).succeeded
                }
            }
            return try await group.reduce(0, +)
        }
        let seconds = (ContinuousClock.now - start).seconds
        let gatewayCPU =
            Double(
                gateways.map { ProcessProbe.cpuTicks($0.process.processIdentifier) ?? 0 }.reduce(0, +) - gatewayTicks)
            / Double(ProcessProbe.ticksPerSecond)
        report("\(name) ingest_per_second", String(format: "%.0f", Double(succeeded) / seconds))
        report("\(name) ingest_succeeded", "\(succeeded)/\(share.pushes * configuration.nodes)")
        report(
            "\(name) gateway_cpu_seconds_per_10k",
            String(format: "%.2f", gatewayCPU * 10_000 / Double(max(succeeded, 1))))
        if let postgres {
            let cpu = Double((postgres.cpuTicks() ?? 0) - pgTicks) / Double(ProcessProbe.ticksPerSecond)
            report(
                "\(name) postgres_cpu_seconds_per_10k", String(format: "%.2f", cpu * 10_000 / Double(max(succeeded, 1)))
            )
        }

        // 2. Latency: the channel on node 0; pushes through node 0 (same node) and node 1 (across nodes), alternated.
        let channel = try await BenchChannel.open(
            port: gateways[0].devicePort, credential: credentials[0], certs: certs)
        let providers = try await gateways.prefix(2).asyncMap {
            try await GatewayBench.connect(port: $0.providerPort, loop: loop)
        }
        var same: [Double] = []
        var cross: [Double] = []
        for sample in 0..<options.latencySamples {
            let across = configuration.nodes > 1 && sample % 2 == 1
            let start = ContinuousClock.now
            guard await push(providers[across ? 1 : 0], token: tokens[0], jwt: jwt, n: sample) == 200 else {
                throw GatewayBench.BenchError(description: "latency push refused")
            }
            _ = try await channel.nextPush()
            let milliseconds = (ContinuousClock.now - start).seconds * 1000
            if across { cross.append(milliseconds) } else { same.append(milliseconds) }
            if channel.unacked.count >= 32 { try await channel.ack() }
        }
        report(
            "\(name) latency_same_node_p50_p99_ms",
            String(format: "%.3f / %.3f", GatewayBench.percentile(same, 0.5), GatewayBench.percentile(same, 0.99)))
        if !cross.isEmpty {
            report(
                "\(name) latency_cross_node_p50_p99_ms",
                String(format: "%.3f / %.3f", GatewayBench.percentile(cross, 0.5), GatewayBench.percentile(cross, 0.99))
            )
        }
        await channel.close()
        for provider in providers { provider.close() }

        // 3. Failover: pushes through node 1 while node 0 holds the channel; node 0 SIGKILLed after 200 deliveries;
        // the device reconnects at once to node 1 (an agent adds its backoff, 0.25-0.5 s at the first failure).
        if configuration.nodes > 1 {
            try await failover(
                name: name, gateways: gateways, token: tokens[1], credential: credentials[1], jwt: jwt, loop: loop,
                certs: certs, report: report)
        }
        for gateway in gateways { gateway.stop() }
    }

    static func failover(
        name: String, gateways: [ChildGateway], token: String, credential: String, jwt: String, loop: EventLoop,
        certs: String, report: (String, String) -> Void
    ) async throws {
        var channel = try await BenchChannel.open(port: gateways[0].devicePort, credential: credential, certs: certs)
        let provider = try await GatewayBench.connect(port: gateways[1].providerPort, loop: loop)
        let total = 1000
        let pusher = Task {
            var accepted: Set<Int> = []
            for n in 0..<total where await push(provider, token: token, jwt: jwt, n: n) == 200 { accepted.insert(n) }
            return accepted
        }
        var received: Set<Int> = []
        var killedAt: ContinuousClock.Instant?
        var failover: Duration?
        let deadline = ContinuousClock.now + .seconds(120)
        while received.count < total, ContinuousClock.now < deadline {
            guard let n = try? await channel.nextPush() else {
                // The channel ended with its node: reconnect to the next one.
                await channel.close()
                channel = try await BenchChannel.open(
                    port: gateways[1].devicePort, credential: credential, certs: certs)
                continue
            }
            if let killedAt, failover == nil { failover = .now - killedAt }
            received.insert(n)
            if channel.unacked.count >= 32 { try? await channel.ack() }
            if received.count == 200, killedAt == nil {
                gateways[0].process.kill()
                killedAt = .now
            }
        }
        let accepted = await pusher.value
        await channel.close()
        provider.close()
        report(
            "\(name) failover_first_delivery_ms",
            failover.map { String(format: "%.0f", $0.seconds * 1000) } ?? "none")
        report("\(name) failover_lost", "\(accepted.subtracting(received).count) of \(accepted.count) answered 200")
    }

    static func push(_ client: HTTP2Client, token: String, jwt: String, n: Int) async -> Int {
        let request = HTTP2ClientRequest(
            path: "/3/device/\(token)", authority: "localhost",
            headers: [
                HTTP2Header("authorization", "bearer \(jwt)", neverIndex: true),
                HTTP2Header("apns-topic", "com.example.rouse"), HTTP2Header("apns-push-type", "alert"),
            ], body: Array(#"{"n":\#(n)}"#.utf8))
        if case .response(let status, _, _) = await client.send(request) { return status }
        return -1
    }
}

/// A device channel over libcurl for the benchmark: reads push records, acknowledges in batches.
final class BenchChannel: @unchecked Sendable {  // used by one task at a time
    private let curl: CurlHTTPClient
    private var lines: LineReader
    private let port: UInt16
    private let credential: String
    private let tls: CurlTLSOptions
    var unacked: [String] = []

    private init(curl: CurlHTTPClient, lines: LineReader, port: UInt16, credential: String, tls: CurlTLSOptions) {
        self.curl = curl
        self.lines = lines
        self.port = port
        self.credential = credential
        self.tls = tls
    }

    static func open(port: UInt16, credential: String, certs: String) async throws -> BenchChannel {
        let curl = try CurlHTTPClient()
        let tls = CurlTLSOptions(caFile: certs + "/ca.pem")
        let response = try await curl.stream(
            CurlRequest(
                url: "https://127.0.0.1:\(port)/device/v1/channel",
                headers: [(name: "authorization", value: "Bearer \(credential)")], timeout: .seconds(3600), tls: tls))
        guard response.head.status == 200 else {
            await curl.shutdown()
            throw GatewayBench.BenchError(description: "channel: \(response.head.status)")
        }
        var lines = LineReader(response.body.makeAsyncIterator())
        _ = try await lines.next()  // hello
        return BenchChannel(curl: curl, lines: lines, port: port, credential: credential, tls: tls)
    }

    /// The `n` of the next push; throws when the channel ends.
    func nextPush() async throws -> Int {
        while let line = try await lines.next() {
            guard line.contains("\"type\":\"push\"") else {
                if line.contains("\"type\":\"replaced\"") || line.contains("\"type\":\"shutdown\"") { break }
                continue
            }
            if let id = line.split(separator: "\"id\":\"").dropFirst().first?.split(separator: "\"").first {
                unacked.append(String(id))
            }
            guard let payload = line.split(separator: "\"payload\":\"").dropFirst().first?.split(separator: "\"").first,
                let data = Data(base64Encoded: String(payload)),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let n = object["n"] as? Int
            else { return -1 }
            return n
        }
        throw GatewayBench.BenchError(description: "channel ended")
    }

    func ack() async throws {
        let body = "{\"ids\":[" + unacked.map { "\"\($0)\"" }.joined(separator: ",") + "]}"
        unacked.removeAll()
        _ = try await curl.send(
            CurlRequest(
                method: "POST", url: "https://127.0.0.1:\(port)/device/v1/ack",
                headers: [
                    (name: "authorization", value: "Bearer \(credential)"),
                    (name: "content-type", value: "application/json"),
                ], body: Array(body.utf8), tls: tls))
    }

    func close() async { await curl.shutdown() }
}

/// A PostgreSQL server for the benchmark: Debian's binaries, a cluster in a temporary directory owned by
/// `postgres`, on a free loopback port, Debian's durability defaults (`fsync` on).
struct BenchPostgres {
    let bin: String
    let data: String
    let port: Int
    let version: String

    /// `listen`: the addresses it listens on; `trust`: a network (CIDR) whose clients it lets in besides loopback.
    static func start(in directory: String, listen: [String] = ["127.0.0.1"], trust: String? = nil) async throws
        -> BenchPostgres
    {
        let root = "/usr/lib/postgresql"
        let majors = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap { Int($0) }
        guard let major = majors.max() else {
            throw GatewayBench.BenchError(description: "PostgreSQL not found under \(root): run deploy/install-deps.sh")
        }
        let bin = "\(root)/\(major)/bin"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let owner = getpwnam("postgres") != nil ? "postgres" : "nobody"
        _ = try await ChildProcess.run("/bin/chown", ["-R", owner, directory])
        let data = directory + "/data"
        try await runAs(owner, bin + "/initdb", ["-D", data, "-U", "rouse", "--auth=trust", "-E", "UTF8"])
        if let trust {
            let hba = try FileHandle(forWritingTo: URL(fileURLWithPath: data + "/pg_hba.conf"))
            try hba.seekToEnd()
            try hba.write(contentsOf: Data("host all all \(trust) trust\n".utf8))
            try hba.close()
        }
        let port = Int.random(in: 20_000..<60_000)
        try await runAs(
            owner, bin + "/pg_ctl",
            [
                "-D", data, "-l", directory + "/server.log", "-w", "-o",
                "-p \(port) -c listen_addresses=\(listen.joined(separator: ",")) -c unix_socket_directories=''",
                "start",
            ])
        let version = (try? await ChildProcess.run(bin + "/postgres", ["--version"]).stdout) ?? ""
        return BenchPostgres(
            bin: bin, data: data, port: port,
            version: version.trimmingCharacters(in: .whitespacesAndNewlines) + " (fsync on, synchronous_commit on)")
    }

    private static func runAs(_ owner: String, _ tool: String, _ arguments: [String]) async throws {
        let output = try await ChildProcess.run("/usr/sbin/runuser", ["-u", owner, "--", tool] + arguments)
        guard output.status == 0 else {
            throw GatewayBench.BenchError(description: "\(tool): \(output.stderr)\(output.stdout)")
        }
    }

    /// Creates a database; returns its URL.
    func createDatabase(_ name: String) async throws -> String {
        let url = "postgresql://rouse@127.0.0.1:\(port)/postgres"
        let output = try await ChildProcess.run(
            bin + "/psql", ["-X", "-q", "-d", url, "-c", "CREATE DATABASE \(name)"])
        guard output.status == 0 else { throw GatewayBench.BenchError(description: "createdb: \(output.stderr)") }
        return "postgresql://rouse@127.0.0.1:\(port)/\(name)"
    }

    /// CPU ticks of the server: the postmaster (with its reaped children) and its live processes.
    func cpuTicks() -> Int? {
        guard let text = try? String(contentsOfFile: data + "/postmaster.pid", encoding: .utf8),
            let first = text.split(separator: "\n").first, let postmaster = Int32(first)
        else { return nil }
        var total = 0
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 15, let parent = Int32(fields[1]) else { continue }
            if pid == postmaster {
                // utime, stime, cutime, cstime: the exited backends' time is in the last two.
                total += (11...14).compactMap { Int(fields[$0]) }.reduce(0, +)
            } else if parent == postmaster {
                total += (11...12).compactMap { Int(fields[$0]) }.reduce(0, +)
            }
        }
        return total
    }

    /// Restarts the server: `immediate` as a crash (no checkpoint; recovery at start), else a fast shutdown.
    func restart(immediate: Bool) {
        let owner = getpwnam("postgres") != nil ? "postgres" : "nobody"
        let process = try? ChildProcess.start(
            "/usr/sbin/runuser",
            ["-u", owner, "--", bin + "/pg_ctl", "-D", data, "-m", immediate ? "immediate" : "fast", "-w", "restart"],
            stdout: .discard, stderr: .inherit)
        process?.waitUntilExit()
    }

    func stop() {
        let owner = getpwnam("postgres") != nil ? "postgres" : "nobody"
        let process = try? ChildProcess.start(
            "/usr/sbin/runuser", ["-u", owner, "--", bin + "/pg_ctl", "-D", data, "-m", "fast", "-w", "stop"],
            stdout: .discard, stderr: .inherit)
        process?.waitUntilExit()
    }
}

extension Sequence {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
