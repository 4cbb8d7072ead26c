import ArgumentParser
import FoundationEssentials
import Glibc
import Logging
import RouseAPNs
import RouseDaemon
import RouseMockAPNs
import ServiceLifecycle

/// `rouse mock-apns`: an APNs-faithful HTTP/2 endpoint for tests and CI.
struct MockAPNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-apns",
        abstract: "Run a mock APNs endpoint that checks what APNs checks, with fault injection.",
        discussion: """
            Token connections need --keys (certs/keys.json format); certificate connections need --client-ca.
            SIGTERM/SIGINT shut down gracefully (GOAWAY {"reason":"Shutdown"}, drain, close).
            """
    )

    @Option(help: "Provider endpoint address (host:port, [v6]:port).")
    var listen = "127.0.0.1:2197"
    @Option(help: "Server certificate chain (PEM).")
    var cert: String?
    @Option(help: "Server private key (PEM).")
    var key: String?
    @Option(name: .customLong("client-ca"), help: "CA for provider client certificates (enables certificate auth).")
    var clientCA: String?
    @Option(help: "Signing keys accepted for token auth (JSON, certs/keys.json format).")
    var keys: String?
    @Option(help: "Device-token registry (JSON).")
    var tokens: String?
    @Option(help: "Fault script (JSON).")
    var faults: String?
    @Flag(help: "Answer as the sandbox environment (adds apns-unique-id).")
    var sandbox = false
    @Flag(help: "Answer as the production environment (default: sandbox).")
    var production = false
    @Option(help: "Admin endpoint (h2c) address for records, stats and faults.")
    var admin: String?
    @Option(help: "Event-loop threads.")
    var workers = 1
    @Option(name: .customLong("max-streams"), help: "MAX_CONCURRENT_STREAMS for authenticated connections.")
    var maxStreams = 1000
    @Option(name: .customLong("record-limit"), help: "Push records kept in memory for inspection (oldest dropped).")
    var recordLimit = 100_000
    @Flag(name: .customLong("no-stream-limit-drop"), help: "Do not drop the stream limit to 1 after a rejection.")
    var noStreamLimitDrop = false
    @Option(name: .customLong("rate-limit"), help: "Per-token limit for 429 TooManyRequests, as N/MS (e.g. 10/1000).")
    var rateLimit: String?
    @Flag(name: .customLong("h2c"), help: "Serve cleartext HTTP/2 (debugging only; APNs is TLS-only).")
    var cleartext = false
    @Flag(help: "Print one JSON line per push on stdout, and the startup line as JSON.")
    var json = false
    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error.")
    var logLevel = "info"

    func validate() throws {
        if sandbox && production { throw ValidationError("--sandbox and --production exclude each other") }
        if !cleartext && (cert == nil || key == nil) {
            throw ValidationError("--cert and --key are required (or --h2c for cleartext debugging)")
        }
        if let rateLimit, parseRate(rateLimit) == nil {
            throw ValidationError("--rate-limit must look like N/MS, e.g. 10/1000")
        }
    }

    func parseRate(_ text: String) -> MockRateLimit? {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let n = Int(parts[0]), let ms = Int64(parts[1]), n > 0, ms > 0 else { return nil }
        return MockRateLimit(maxRequests: n, windowMilliseconds: ms)
    }

    func run() async throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        RouseLogging.bootstrap(level: level)
        let logger = Logger(label: "rouse.mock-apns")
        var configuration = MockAPNsConfiguration(environment: production ? .production : .sandbox)
        configuration.maxConcurrentStreams = maxStreams
        configuration.recordLimit = max(recordLimit, 0)
        configuration.dropStreamLimitAfterRejection = !noStreamLimitDrop
        configuration.perTokenRateLimit = rateLimit.flatMap(parseRate)
        do {
            if let keys {
                let directory = URL(fileURLWithPath: keys).deletingLastPathComponent()
                configuration.keys = try MockKeyFile.parse(json: try readFile(keys)) { name in
                    let url = name.hasPrefix("/") ? URL(fileURLWithPath: name) : directory.appendingPathComponent(name)
                    return try? String(contentsOf: url, encoding: .utf8)
                }
            }
            if let tokens { configuration.devices = try DeviceTokenRegistry.parse(json: try readFile(tokens)) }
            if let faults { configuration.faults = try MockFaultScript.parse(json: try readFile(faults)) }
        } catch let error as MockAPNsError {
            throw ValidationError("\(error)")
        }
        let printer = LinePrinter()
        let printRecords = json
        let mock = MockAPNs(configuration: configuration, startedAt: .now(), logger: logger) { record in
            if printRecords { printer.print(record.jsonLine()) }
        }
        var options = MockAPNsServer.Options()
        options.listenAddress = listen
        options.certificateChainFile = cleartext ? nil : cert
        options.privateKeyFile = cleartext ? nil : key
        options.clientCAFile = clientCA
        options.adminAddress = admin
        options.workers = workers
        let server = try MockAPNsServer(mock: mock, options: options, logger: logger)
        let environment = production ? "production" : "sandbox"
        if json {
            let adminField = server.adminAddress.map { ",\"admin\":\"\($0)\"" } ?? ""
            printer.print(
                "{\"event\":\"listening\",\"address\":\"\(server.address)\",\"environment\":\"\(environment)\"\(adminField)}"
            )
        } else {
            let adminText = server.adminAddress.map { ", admin on http://\($0)" } ?? ""
            printer.print("mock-apns (\(environment)) listening on \(server.address)\(adminText)")
        }
        // Signals are taken by the main thread (see RouseMain), not by ServiceLifecycle's libdispatch sources.
        let group = ServiceGroup(services: [MockAPNsService(server: server)], logger: logger)
        for signal in [SIGTERM, SIGINT] {
            DaemonSignals.on(signal) { Task { await group.triggerGracefulShutdown() } }
        }
        try await group.run()
    }

    func readFile(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ValidationError("cannot read \(path)")
        }
        return Array(data)
    }
}

/// Keeps the mock running until graceful shutdown, then drains it.
struct MockAPNsService: Service {
    let server: MockAPNsServer

    func run() async throws {
        try? await gracefulShutdown()
        await server.shutdown()
    }
}
