import Foundation
import RouseAPNs
import RouseChildProcess
import RouseCurl
import RouseEventLoop
import RouseGateway
import RouseHTTP2

/// `rouse-bench gateway`: ingest rate with durable storage (h2load and the native HTTP/2 client as providers),
/// end-to-end latency provider → connected device channel (p50/p99), and the gateway's memory with many open
/// device channels. The gateway runs as a child process (`rouse-gateway` next to this executable) on a fresh
/// SQLite file (WAL, synchronous=FULL) in a temporary directory.
enum GatewayBench {
    struct Options {
        var pushes = 20_000
        var connections = 4
        var streams = 100
        var latencySamples = 1000
        var channels = 10_000
        var json = false
        var gateway: String?
        var h2load = "/usr/bin/h2load"
        /// `--attack`: the gateway under attack instead (see `GatewayAttackBench`).
        var attack = false
        var attackSizes = GatewayAttackBench.Sizes()
        /// A PostgreSQL URL (an empty database) instead of a fresh SQLite file.
        var database: String?
        /// `--nodes 1,3`: gateway processes per configuration (`GatewayNodesBench`).
        var nodes: [Int]?
        /// `--store sqlite,postgres`: the stores to run the node configurations on.
        var stores: [String]?
    }

    typealias BenchError = Bench.Failure

    static let usage = """
        usage: rouse-bench gateway [--pushes N] [--connections N] [--streams N] [--latency-samples N]
                                   [--channels N] [--gateway PATH] [--h2load PATH] [--json]
                                   [--database postgresql://…]   (an empty PostgreSQL database instead of SQLite)
               rouse-bench gateway --nodes 1,3 --store sqlite,postgres [--pushes N] [--latency-samples N] [--json]
                                   (several gateway processes on one store; PostgreSQL: a server it starts)
               rouse-bench gateway --attack [--pushes N] [--attack-connections N] [--attack-streams N]
                                   [--attack-body BYTES] [--provider-samples N] [--flood-seconds N]
                                   [--flood-connections N] [--flood-streams N] [--quiet-channels N]
                                   [--half-open N] [--heartbeat SECONDS] [--idle-timeout SECONDS]
                                   [--idle-window SECONDS] [--phases abcd] [--python PATH] [--gateway PATH]
                                   [--h2load PATH] [--json]
        """

    static func run(arguments: [String]) async throws {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            return
        }
        let options = try parse(arguments)
        if options.attack {
            try await GatewayAttackBench.run(options)
            return
        }
        if options.nodes != nil || options.stores != nil {
            try await GatewayNodesBench.run(
                options, nodes: options.nodes ?? [1, 3], stores: options.stores ?? ["sqlite", "postgres"])
            return
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-gateway-bench-\(UUID())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let certs = try certsDirectory()
        let database = options.database ?? directory + "/bench.sqlite"

        // Devices and tokens are provisioned before the gateway starts.
        let store = try GatewayConfiguration.openStore(database: database)
        let now = Gateway.systemMilliseconds()
        let ids = (0..<(options.channels + 2)).map { "bench-\($0)" }
        let credentials = try Gateway.provisionDevices(store: store, ids: ids, now: now)
        let tokens = try Gateway.provisionTokens(
            store: store, deviceIDs: Array(ids.prefix(2)), topic: "com.example.rouse", now: now)

        let gateway = try await ChildGateway.start(
            executable: try options.gateway ?? sibling("rouse-gateway"), directory: directory, database: database,
            certs: certs)
        defer { gateway.stop() }
        let jwt = try ProviderToken(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: now / 1000)
            .signed(
                with: ProviderToken.privateKey(pem: String(contentsOfFile: certs + "/apns-key.p8", encoding: .utf8)))
        let loop = try EventLoop(name: "bench-client")
        loop.start()

        var results: [(String, String)] = []
        func report(_ name: String, _ value: String) {
            results.append((name, value))
            if !options.json { print("\(name): \(value)") }
        }
        report("machine", machine())
        report(
            "durability",
            options.database == nil
                ? "SQLite WAL, synchronous=FULL, 200 after COMMIT"
                : "PostgreSQL, synchronous_commit=on, 200 after COMMIT")

        // 1. Ingest with h2load.
        let h2 = try await h2loadIngest(
            options, port: gateway.providerPort, token: tokens[0], jwt: jwt, directory: directory)
        report("ingest_h2load_per_second", String(format: "%.0f", h2.rate))
        report("ingest_h2load_succeeded", "\(h2.succeeded)/\(options.pushes)")

        // 2. Ingest with the native client.
        let native = try await clientIngest(options, port: gateway.providerPort, token: tokens[0], jwt: jwt, loop: loop)
        report("ingest_client_per_second", String(format: "%.0f", native.rate))
        report("ingest_client_succeeded", "\(native.succeeded)/\(native.sent)")

        // 3. End-to-end latency to a connected device.
        let latency = try await endToEnd(
            options, gateway: gateway, token: tokens[1], credential: credentials[1], jwt: jwt, loop: loop, certs: certs)
        report("latency_samples", "\(latency.count)")
        report("latency_p50_ms", String(format: "%.3f", percentile(latency, 0.50)))
        report("latency_p99_ms", String(format: "%.3f", percentile(latency, 0.99)))

        // 4. Memory with many channels.
        if options.channels > 0 {
            let memory = try await channels(
                options, gateway: gateway, credentials: Array(credentials.dropFirst(2)), loop: loop, certs: certs)
            report("channels_open", "\(memory.open)")
            report("gateway_rss_before_mib", String(format: "%.1f", Double(memory.before) / 1024))
            report("gateway_rss_with_channels_mib", String(format: "%.1f", Double(memory.after) / 1024))
            report(
                "rss_per_channel_kib",
                String(format: "%.1f", Double(memory.after - memory.before) / Double(max(memory.open, 1))))
            // nghttp2's share, counted by its allocator in the gateway (every server session: the channels and
            // the admin connection asking).
            if let sessions = memory.http2Sessions, let bytes = memory.http2Bytes, sessions > 0 {
                report("nghttp2_sessions", String(format: "%.0f", sessions))
                report("nghttp2_kib_per_session", String(format: "%.1f", bytes / sessions / 1024))
            }
        }
        if options.json {
            let body = results.map { "\(JSONText.quoted($0.0)):\(JSONText.quoted($0.1))" }.joined(separator: ",")
            print("{" + body + "}")
        }
    }

    // MARK: Phases

    static func h2loadIngest(_ options: Options, port: UInt16, token: String, jwt: String, directory: String)
        async throws -> (rate: Double, succeeded: Int)
    {
        guard FileManager.default.isExecutableFile(atPath: options.h2load) else {
            throw BenchError(description: "\(options.h2load) is missing: run deploy/install-deps.sh")
        }
        let payload = directory + "/payload.json"
        try Data(#"{"aps":{"alert":"bench"}}"#.utf8).write(to: URL(fileURLWithPath: payload))
        let output = try await runProcess(
            options.h2load,
            [
                "-n", "\(options.pushes)", "-c", "\(options.connections)", "-m", "\(options.streams)", "-d", payload,
                "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: com.example.rouse",
                "-H", "apns-push-type: alert", "https://127.0.0.1:\(port)/3/device/\(token)",
            ])
        var rate = 0.0
        var succeeded = 0
        for line in output.split(separator: "\n") {
            if line.hasPrefix("finished in"), let field = line.split(separator: ",").dropFirst().first {
                rate = Double(field.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") ?? 0
            }
            if line.hasPrefix("status codes:") {
                succeeded =
                    Int(
                        line.dropFirst("status codes:".count).trimmingCharacters(in: .whitespaces)
                            .split(separator: " ").first ?? "") ?? 0
            }
        }
        return (rate, succeeded)
    }

    static func clientIngest(_ options: Options, port: UInt16, token: String, jwt: String, loop: EventLoop)
        async throws -> (rate: Double, succeeded: Int, sent: Int)
    {
        var clients: [HTTP2Client] = []
        for _ in 0..<options.connections { clients.append(try await connect(port: port, loop: loop)) }
        let request = HTTP2ClientRequest(
            path: "/3/device/\(token)", authority: "localhost",
            headers: [
                HTTP2Header("authorization", "bearer \(jwt)", neverIndex: true),
                HTTP2Header("apns-topic", "com.example.rouse"), HTTP2Header("apns-push-type", "alert"),
            ], body: Array(#"{"aps":{"alert":"bench"}}"#.utf8))
        let perWorker = max(options.pushes / (options.connections * options.streams), 1)
        let start = ContinuousClock.now
        let succeeded = await withTaskGroup(of: Int.self) { group in
            for worker in 0..<(options.connections * options.streams) {
                let client = clients[worker % clients.count]
                group.addTask {
                    var ok = 0
                    for _ in 0..<perWorker {
                        if case .response(200, _, _) = await client.send(request) { ok += 1 }
                    }
                    return ok
                }
            }
            return await group.reduce(0, +)
        }
        let seconds = (ContinuousClock.now - start).seconds
        for client in clients { client.close() }
        let sent = perWorker * options.connections * options.streams
        return (Double(sent) / seconds, succeeded, sent)
    }

    static func endToEnd(
        _ options: Options, gateway: ChildGateway, token: String, credential: String, jwt: String, loop: EventLoop,
        certs: String
    ) async throws -> [Double] {
        let curl = try CurlHTTPClient()
        let tls = CurlTLSOptions(caFile: certs + "/ca.pem")
        let response = try await curl.stream(
            CurlRequest(
                url: "https://127.0.0.1:\(gateway.devicePort)/device/v1/channel",
                headers: [(name: "authorization", value: "Bearer \(credential)")], timeout: .seconds(3600), tls: tls))
        guard response.head.status == 200 else { throw BenchError(description: "channel: \(response.head.status)") }
        var lines = LineReader(response.body.makeAsyncIterator())
        _ = try await lines.next()  // hello
        let provider = try await connect(port: gateway.providerPort, loop: loop)
        let request = HTTP2ClientRequest(
            path: "/3/device/\(token)", authority: "localhost",
            headers: [
                HTTP2Header("authorization", "bearer \(jwt)", neverIndex: true),
                HTTP2Header("apns-topic", "com.example.rouse"), HTTP2Header("apns-push-type", "alert"),
            ], body: Array(#"{"aps":{"alert":"latency"}}"#.utf8))
        var samples: [Double] = []
        var unacked: [String] = []
        for _ in 0..<options.latencySamples {
            let start = ContinuousClock.now
            guard case .response(200, _, _) = await provider.send(request) else {
                throw BenchError(description: "latency push refused")
            }
            var line = try await lines.next()
            while line?.contains("\"type\":\"push\"") == false { line = try await lines.next() }
            guard let line else { throw BenchError(description: "channel ended") }
            samples.append((ContinuousClock.now - start).seconds * 1000)
            if let id = line.split(separator: "\"id\":\"").dropFirst().first?.split(separator: "\"").first {
                unacked.append(String(id))
            }
            if unacked.count >= 32 {
                let body = "{\"ids\":[" + unacked.map { "\"\($0)\"" }.joined(separator: ",") + "]}"
                _ = try await curl.send(
                    CurlRequest(
                        method: "POST", url: "https://127.0.0.1:\(gateway.devicePort)/device/v1/ack",
                        headers: [
                            (name: "authorization", value: "Bearer \(credential)"),
                            (name: "content-type", value: "application/json"),
                        ], body: Array(body.utf8), tls: tls))
                unacked.removeAll()
            }
        }
        provider.close()
        await curl.shutdown()
        return samples
    }

    static func channels(
        _ options: Options, gateway: ChildGateway, credentials: [String], loop: EventLoop, certs: String
    ) async throws -> (open: Int, before: Int, after: Int, http2Sessions: Double?, http2Bytes: Double?) {
        let before = gateway.rssKiB()
        let loops = try channelLoops()
        let clients = try await openChannels(port: gateway.devicePort, credentials: credentials, loops: loops)
        let open = try await waitForConnectedDevices(credentials.count, gateway: gateway, loop: loop)
        let after = gateway.rssKiB()
        let sessions = try await adminMetric("rouse_gateway_http2_sessions_open", gateway: gateway, loop: loop)
        let bytes = try await adminMetric("rouse_gateway_http2_session_bytes", gateway: gateway, loop: loop)
        for client in clients { client.abort() }
        return (open, before, after, sessions, bytes)
    }

    /// Two client event loops for many channel connections.
    static func channelLoops() throws -> [EventLoop] {
        try (0..<2).map { index -> EventLoop in
            let loop = try EventLoop(name: "bench-channels-\(index)")
            loop.start()
            return loop
        }
    }

    /// Opens one channel per credential, each on a TLS connection of its own (200 at a time); the clients hold them
    /// until aborted.
    static func openChannels(port: UInt16, credentials: [String], loops: [EventLoop]) async throws -> [HTTP2Client] {
        var clients: [HTTP2Client] = []
        var index = 0
        while index < credentials.count {
            let batch = credentials[index..<min(index + 200, credentials.count)]
            let connected = try await withThrowingTaskGroup(of: HTTP2Client.self) { group in
                for (offset, credential) in batch.enumerated() {
                    group.addTask {
                        let client = try await connect(port: port, loop: loops[offset % loops.count])
                        client.send(
                            HTTP2ClientRequest(
                                method: "GET", path: "/device/v1/channel", authority: "localhost",
                                headers: [HTTP2Header("authorization", "Bearer \(credential)")])
                        ) { _ in }
                        return client
                    }
                }
                var all: [HTTP2Client] = []
                for try await client in group { all.append(client) }
                return all
            }
            clients += connected
            index += batch.count
        }
        return clients
    }

    /// A sample of the gateway's admin `/metrics` (the first line starting with `name `), or nil.
    static func adminMetric(_ name: String, gateway: ChildGateway, loop: EventLoop) async throws -> Double? {
        let admin = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: gateway.adminPort, tls: nil), on: loop)
        defer { admin.close() }
        guard
            case .response(200, _, let body) = await admin.send(
                HTTP2ClientRequest(method: "GET", path: "/metrics", authority: "localhost", scheme: "http"))
        else { return nil }
        let line = String(decoding: body, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(name + " ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    /// Waits until the gateway counts `count` connected devices (admin metrics), up to a minute; the count seen.
    static func waitForConnectedDevices(_ count: Int, gateway: ChildGateway, loop: EventLoop) async throws -> Int {
        let deadline = ContinuousClock.now + .seconds(60)
        var open = 0
        while ContinuousClock.now < deadline {
            open = Int(try await adminMetric("rouse_gateway_connected_devices", gateway: gateway, loop: loop) ?? 0)
            if open >= count { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        return open
    }

    // MARK: Helpers

    static func connect(port: UInt16, loop: EventLoop) async throws -> HTTP2Client {
        var tls = TLSConfiguration()
        tls.verifyPeer = false
        return try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: tls), on: loop)
    }

    static func percentile(_ samples: [Double], _ p: Double) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sorted = samples.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))]
    }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var index = 0
        func value() throws -> String {
            index += 1
            guard index < arguments.count else {
                throw BenchError(description: "\(arguments[index - 1]) needs a value\n\(usage)")
            }
            return arguments[index]
        }
        func number() throws -> Int {
            let text = try value()
            guard let n = Int(text), n >= 0 else { throw BenchError(description: "'\(text)' is not a count\n\(usage)") }
            return n
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--pushes": options.pushes = max(try number(), 1)
            case "--connections": options.connections = max(try number(), 1)
            case "--streams": options.streams = max(try number(), 1)
            case "--latency-samples": options.latencySamples = max(try number(), 1)
            case "--channels": options.channels = try number()
            case "--gateway": options.gateway = try value()
            case "--h2load": options.h2load = try value()
            case "--database": options.database = try value()
            case "--nodes":
                let text = try value()
                let counts = text.split(separator: ",").compactMap { Int($0) }
                guard !counts.isEmpty, counts.allSatisfy({ (1...8).contains($0) }) else {
                    throw BenchError(description: "--nodes: '\(text)' is not a list of 1 to 8\n\(usage)")
                }
                options.nodes = counts
            case "--store":
                let text = try value()
                let stores = text.split(separator: ",").map(String.init)
                guard !stores.isEmpty, stores.allSatisfy({ $0 == "sqlite" || $0 == "postgres" }) else {
                    throw BenchError(description: "--store: '\(text)' is not sqlite,postgres\n\(usage)")
                }
                options.stores = stores
            case "--json": options.json = true
            case "--attack": options.attack = true
            case "--attack-connections": options.attackSizes.connections = max(try number(), 1)
            case "--attack-streams": options.attackSizes.streams = max(try number(), 1)
            case "--attack-body": options.attackSizes.bodyBytes = try number()
            case "--provider-samples": options.attackSizes.providerSamples = max(try number(), 1)
            case "--flood-seconds": options.attackSizes.floodSeconds = max(try number(), 3)
            case "--flood-connections": options.attackSizes.floodConnections = max(try number(), 1)
            case "--flood-streams": options.attackSizes.floodStreams = max(try number(), 1)
            case "--quiet-channels": options.attackSizes.quietChannels = try number()
            case "--half-open": options.attackSizes.halfOpenStreams = try number()
            case "--heartbeat": options.attackSizes.heartbeatSeconds = max(try number(), 1)
            case "--idle-timeout": options.attackSizes.idleSeconds = max(try number(), 1)
            case "--idle-window": options.attackSizes.idleWindowSeconds = max(try number(), 1)
            case "--python": options.attackSizes.python = try value()
            case "--phases":
                let phases = Set(try value())
                guard !phases.isEmpty, phases.isSubset(of: ["a", "b", "c", "d"]) else {
                    throw BenchError(description: "--phases takes letters of abcd\n\(usage)")
                }
                options.attackSizes.phases = phases
            default: throw BenchError(description: "unknown argument \(arguments[index])\n\(usage)")
            }
            index += 1
        }
        return options
    }

    static func sibling(_ name: String) throws -> String {
        let path = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            name
        ).path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchError(description: "\(path) is not built: swift build --product \(name) (or --gateway PATH)")
        }
        return path
    }

    static func certsDirectory() throws -> String {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let path = url.appendingPathComponent("certs").path
        guard FileManager.default.fileExists(atPath: path + "/server.pem") else {
            throw BenchError(description: "certs/ not found at \(path)")
        }
        return path
    }

    /// A server certificate for `addresses` (IP subject alternative names) from the test CA, written to
    /// `directory/gw.pem`, for the key `certs/server.key`; returns its path.
    static func serverCertificate(for addresses: [String], directory: String, certs: String) throws -> String {
        let names = addresses.map { "IP:\($0)" }.joined(separator: ",")
        try Data("subjectAltName=\(names)\n".utf8).write(to: URL(fileURLWithPath: directory + "/gw.ext"))
        try AgentNetworkBench.tool(
            "/usr/bin/openssl",
            ["req", "-new", "-key", certs + "/server.key", "-subj", "/CN=bench", "-out", directory + "/gw.csr"])
        try AgentNetworkBench.tool(
            "/usr/bin/openssl",
            [
                "x509", "-req", "-in", directory + "/gw.csr", "-CA", certs + "/ca.pem", "-CAkey", certs + "/ca.key",
                "-set_serial", "7", "-days", "1", "-extfile", directory + "/gw.ext", "-out", directory + "/gw.pem",
            ])
        return directory + "/gw.pem"
    }

    static func machine() -> String {
        let cpu =
            ((try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? "").split(separator: "\n")
            .first { $0.hasPrefix("model name") }?.split(separator: ":").last?.trimmingCharacters(in: .whitespaces)
            ?? "unknown CPU"
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return "\(ProcessInfo.processInfo.activeProcessorCount) × \(cpu), Linux \(release), loopback"
    }

    /// Runs a program (h2load) to completion; its stdout, then its stderr.
    static func runProcess(_ path: String, _ arguments: [String]) async throws -> String {
        let output = try await ChildProcess.run(path, arguments, timeout: .seconds(30 * 60))
        return output.stdout + output.stderr
    }
}

/// Splits a channel's body chunks into lines.
struct LineReader {
    var iterator: AsyncThrowingStream<[UInt8], any Error>.Iterator
    var buffer: [UInt8] = []

    init(_ iterator: AsyncThrowingStream<[UInt8], any Error>.Iterator) {
        self.iterator = iterator
    }

    mutating func next() async throws -> String? {
        while true {
            if let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            guard let chunk = try await iterator.next() else { return nil }
            buffer += chunk
        }
    }
}
