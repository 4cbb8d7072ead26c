import Foundation
import RouseAPNs
import RouseChildProcess
import RouseEventLoop
import RouseHTTP2

/// `rouse-bench mock-apns`: h2load against `rouse mock-apns` with every check on (token auth, 100k distinct
/// device tokens, a valid JWT, VoIP topic and payload rules) and against `nghttpd` serving a static file, same
/// machine, same h2load settings over TLS, the same number of server threads on both sides (`--workers`, default
/// one per core: the mock's event loops, nghttpd's `-n`); then the mock's memory with 1,000 idle TLS connections.
enum MockAPNsBench {
    struct Result: Codable {
        var server: String
        var clients: Int
        var streams: Int
        var requests: Int
        var succeeded: Int
        /// Streams h2load counts as errored (against the mock: refused before a valid token was seen).
        var errored: Int
        var requestsPerSecond: Double
        var serverCPUMicrosecondsPerRequest: Double
        var serverPeakRSSKiB: Int
    }

    static func run(arguments: [String]) async throws {
        if arguments.contains("--help") {
            print(
                """
                usage: rouse-bench mock-apns [--requests N] [--tokens N] [--idle N] [--record-limit N] [--workers N]
                                             [--certs DIR] [--json] [--prepare DIR]
                --prepare DIR: only write the inputs (tokens.json, payload.json, uris.txt with PORT for the port,
                  headers.txt: h2load's -H arguments, one a line) into DIR and stop, for profiling runs by hand.
                --workers N: server threads on both sides (the mock's --workers, nghttpd's -n); default: one per core.
                Needs release builds of rouse and rouse-bench (swift build -c release), h2load and nghttpd.
                """)
            return
        }
        let requests = Int(Bench.option(arguments, "--requests") ?? "") ?? 300_000
        let tokenCount = Int(Bench.option(arguments, "--tokens") ?? "") ?? 100_000
        let idleCount = Int(Bench.option(arguments, "--idle") ?? "") ?? 1000
        let recordLimit = Bench.option(arguments, "--record-limit") ?? "100000"
        let workers = max(
            1, Int(Bench.option(arguments, "--workers") ?? "") ?? ProcessInfo.processInfo.activeProcessorCount)
        let loadBefore = loadAverage()
        let certs = Bench.option(arguments, "--certs") ?? "certs"
        let json = arguments.contains("--json")
        let rouse = try Bench.product("rouse")
        let h2load = try Bench.tool("/usr/bin/h2load")
        let nghttpd = try Bench.tool("/usr/sbin/nghttpd")
        guard FileManager.default.fileExists(atPath: "\(certs)/server.pem") else {
            throw Bench.Failure(
                description: "\(certs)/server.pem not found: run from the repository root or pass --certs")
        }

        let prepare = Bench.option(arguments, "--prepare")
        let work =
            prepare.map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("rouse-bench-\(getpid())")
        try FileManager.default.createDirectory(
            at: work.appendingPathComponent("docroot/3/device"), withIntermediateDirectories: true)
        defer { if prepare == nil { try? FileManager.default.removeItem(at: work) } }
        // 100k distinct tokens registered for the VoIP topic, and one URI per token.
        var tokensJSON = #"{"unknownTokens":"reject","tokens":["#
        var uris = ""
        for i in 0..<tokenCount {
            let token = String(format: "%064x", i + 1)
            tokensJSON += (i == 0 ? "" : ",") + #"{"token":"\#(token)","topics":["com.example.rouse.voip"]}"#
            uris += "https://127.0.0.1:PORT/3/device/\(token)\n"
        }
        tokensJSON += "]}"
        try tokensJSON.write(to: work.appendingPathComponent("tokens.json"), atomically: true, encoding: .utf8)
        var payload = #"{"aps":{},"call":{"id":"bench","from":"#
        payload += "\"" + String(repeating: "x", count: 256 - payload.count - 4) + "\"}}"
        try payload.write(to: work.appendingPathComponent("payload.json"), atomically: true, encoding: .utf8)
        try Data().write(to: work.appendingPathComponent("docroot/3/device/static"))
        let key = try ProviderToken.privateKey(pem: String(contentsOfFile: "\(certs)/apns-key.p8", encoding: .utf8))
        let jwt = try ProviderToken(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: APNsTime.now().seconds)
            .signed(with: key)
        let headers = [
            "-H", "authorization: bearer \(jwt)", "-H", "apns-topic: com.example.rouse.voip",
            "-H", "apns-push-type: voip", "-H", "apns-expiration: 0",
        ]
        if prepare != nil {
            try uris.write(to: work.appendingPathComponent("uris.txt"), atomically: true, encoding: .utf8)
            let lines = stride(from: 1, to: headers.count, by: 2).map { headers[$0] }.joined(separator: "\n")
            try (lines + "\n").write(to: work.appendingPathComponent("headers.txt"), atomically: true, encoding: .utf8)
            print("inputs written to \(work.path)")
            return
        }

        var results: [Result] = []
        for (clients, streams) in [(1, 100), (4, 100)] {
            // rouse mock-apns
            let port = Bench.freePort()
            let uriFile = work.appendingPathComponent("uris-\(port).txt")
            try uris.replacingOccurrences(of: "PORT", with: String(port)).write(
                to: uriFile, atomically: true, encoding: .utf8)
            let mock = try Bench.startServer(
                rouse,
                [
                    "mock-apns", "--listen", "127.0.0.1:\(port)", "--cert", "\(certs)/server.pem", "--key",
                    "\(certs)/server.key", "--keys", "\(certs)/keys.json", "--tokens",
                    work.appendingPathComponent("tokens.json").path, "--log-level", "error", "--record-limit",
                    recordLimit, "--workers", String(workers),
                ], port: port)
            results.append(
                try measure(
                    "rouse mock-apns", process: mock, h2load: h2load, clients: clients, streams: streams,
                    requests: requests,
                    args: ["-i", uriFile.path, "-d", work.appendingPathComponent("payload.json").path] + headers))
            Bench.stop(mock)
            // nghttpd, a static file, same TLS and h2load settings
            let nport = Bench.freePort()
            let server = try Bench.startServer(
                nghttpd,
                [
                    "--address=127.0.0.1", "-n", String(workers), "-d", work.appendingPathComponent("docroot").path,
                    String(nport),
                    "\(certs)/server.key", "\(certs)/server.pem",
                ], port: nport)
            results.append(
                try measure(
                    "nghttpd", process: server, h2load: h2load, clients: clients, streams: streams, requests: requests,
                    args: ["-d", work.appendingPathComponent("payload.json").path] + headers
                        + ["https://127.0.0.1:\(nport)/3/device/static"]))
            Bench.stop(server)
        }
        let idleRSS = try await idleConnections(rouse: rouse, certs: certs, count: idleCount, work: work)

        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            for r in results { print(String(decoding: try encoder.encode(r), as: UTF8.self)) }
            print(
                #"{"idleConnections":\#(idleCount),"mockRSSKiB":\#(idleRSS.after),"mockRSSKiBBefore":\#(idleRSS.before)}"#
            )
            return
        }
        print("h2load over TLS, \(requests) requests, 256-byte VoIP payload, token auth, \(tokenCount) device tokens")
        print("server threads: \(workers) on both sides; load average \(loadBefore) before, \(loadAverage()) after")
        print("server            -c -m     req/s   server µs/req  peak RSS      errored")
        for r in results {
            print(
                r.server.padding(toLength: 17, withPad: " ", startingAt: 0)
                    + String(
                        format: " %2d %3d %9.0f %10.2f %9d KiB %7d", r.clients, r.streams, r.requestsPerSecond,
                        r.serverCPUMicrosecondsPerRequest, r.serverPeakRSSKiB, r.errored))
        }
        for (clients, _) in [(1, 100), (4, 100)] {
            let m = results.first { $0.server == "rouse mock-apns" && $0.clients == clients }
            let n = results.first { $0.server == "nghttpd" && $0.clients == clients }
            if let m, let n, n.requestsPerSecond > 0 {
                print(
                    String(
                        format: "-c%d: mock reaches %.0f%% of nghttpd's rate", clients,
                        100 * m.requestsPerSecond / n.requestsPerSecond))
            }
        }
        print(
            "rouse mock-apns RSS: \(idleRSS.before) KiB idle, \(idleRSS.after) KiB with \(idleCount) idle TLS connections"
        )
    }

    static func measure(
        _ name: String, process: RunningChild, h2load: String, clients: Int, streams: Int, requests: Int, args: [String]
    ) throws -> Result {
        let pid = process.processIdentifier
        let cpuBefore = Bench.cpuSeconds(pid: pid)
        let out = try Bench.run(
            h2load, ["-n", String(requests), "-c", String(clients), "-m", String(streams), "-t", "1"] + args)
        let cpu = Bench.cpuSeconds(pid: pid) - cpuBefore
        let rate = number(in: out, after: "finished in ", before: " req/s") ?? 0
        let succeeded = Int(number(in: out, after: "done, ", before: " succeeded") ?? 0)
        let errored = Int(number(in: out, after: "done, ", before: " errored") ?? 0)
        return Result(
            server: name, clients: clients, streams: streams, requests: requests, succeeded: succeeded,
            errored: errored,
            requestsPerSecond: rate, serverCPUMicrosecondsPerRequest: cpu * 1e6 / Double(max(succeeded, 1)),
            serverPeakRSSKiB: Bench.memoryKiB(pid: pid, field: "VmHWM"))
    }

    /// The 1-minute load average (/proc/loadavg), as text: every figure is quoted with it.
    static func loadAverage() -> String {
        let text = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? ""
        return String(text.split(separator: " ").first ?? "?")
    }

    /// The number just before `before` on the line containing `after` (h2load's summary lines).
    static func number(in text: String, after: String, before: String) -> Double? {
        for line in text.split(separator: "\n") where line.contains(after) && line.contains(before) {
            guard let end = line.range(of: before) else { continue }
            let head = line[..<end.lowerBound]
            let token = head.split(whereSeparator: { $0 == " " || $0 == "," }).last ?? ""
            return Double(token)
        }
        return nil
    }

    static func idleConnections(rouse: String, certs: String, count: Int, work: URL) async throws -> (
        before: Int, after: Int
    ) {
        let port = Bench.freePort()
        let mock = try Bench.startServer(
            rouse,
            [
                "mock-apns", "--listen", "127.0.0.1:\(port)", "--cert", "\(certs)/server.pem", "--key",
                "\(certs)/server.key", "--log-level", "error",
            ], port: port)
        defer { Bench.stop(mock) }
        let before = Bench.memoryKiB(pid: mock.processIdentifier, field: "VmRSS")
        let loop = try EventLoop(name: "bench-idle")
        loop.start()
        var tls = TLSConfiguration()
        tls.trustRootsFile = "\(certs)/ca.pem"
        var clients: [HTTP2Client] = []
        for _ in 0..<count {
            clients.append(
                try await HTTP2Client.connect(
                    HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: tls), on: loop))
        }
        let after = Bench.memoryKiB(pid: mock.processIdentifier, field: "VmRSS")
        for c in clients { c.abort() }
        return (before, after)
    }
}
