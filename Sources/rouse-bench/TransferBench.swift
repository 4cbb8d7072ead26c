import Foundation
import Logging
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseChildProcess

/// `rouse-bench transfers`: a background download through the agent (in this process: IPC from a real handler,
/// libcurl on the agent's loop, the file written to its spool and handed over as a descriptor) against `curl`
/// downloading the same file from the same server in the same run (nghttpd over loopback TLS, HTTP/2), rounds
/// alternating. Figures: MiB/s of each (best round), their ratio, and the agent's CPU per MiB (this process's
/// user+system time during its download: the agent and the benchmark's own waiting, so an upper bound).
/// `--link-drop` and `--discretionary-idle SECONDS` add the network parts (TransferBench+Network.swift); `--rounds 0`
/// leaves the download comparison out.
enum TransferBench {
    static func run(arguments: [String]) async throws {
        var mib = 256
        var rounds = 3
        var json = false
        var linkDrop = false
        var idleSeconds: Int?
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--mib":
                mib = try Bench.value(after: argument, from: &iterator, "a size in MiB (1-8192)") {
                    (1...8192).contains($0)
                }
            case "--rounds":
                rounds = try Bench.value(after: argument, from: &iterator, "a count (0-20)") { (0...20).contains($0) }
            case "--json": json = true
            case "--link-drop": linkDrop = true
            case "--discretionary-idle":
                idleSeconds = try Bench.value(after: argument, from: &iterator, "seconds (1-3600)") {
                    (1...3600).contains($0)
                }
            default:
                throw Bench.Failure(
                    description:
                        "unknown option \(argument) (--mib N, --rounds N, --link-drop, --discretionary-idle SECONDS, "
                        + "--json)")
            }
        }
        if linkDrop || idleSeconds != nil {
            try await network(
                certs: try GatewayBench.certsDirectory(), handlerPath: try Bench.product("rouse-example-handler"),
                linkDrop: linkDrop, idleSeconds: idleSeconds, json: json)
        }
        guard rounds > 0 else { return }
        let certs = try GatewayBench.certsDirectory()
        let nghttpd = try Bench.tool("/usr/sbin/nghttpd")
        let curl = try Bench.tool("/usr/bin/curl")
        let handlerPath = try Bench.product("rouse-example-handler")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-bench-transfers-\(getpid())"
        )
        .path
        try FileManager.default.createDirectory(atPath: directory + "/docroot", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // The file: a random MiB repeated (compression plays no part over TLS here).
        let block = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255) }
        _ = FileManager.default.createFile(atPath: directory + "/docroot/file.bin", contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/docroot/file.bin"))
        for _ in 0..<mib { try out.write(contentsOf: Data(block)) }
        try out.close()

        let port = Bench.freePort()
        let server = try Bench.startServer(
            nghttpd,
            [
                "--address=127.0.0.1", "-d", directory + "/docroot", String(port), certs + "/server.key",
                certs + "/server.pem",
            ],
            port: port)
        defer { Bench.stop(server) }
        let url = "https://127.0.0.1:\(port)/file.bin"

        // The agent, in this process, with one handler driven through its command pipe.
        let fifo = directory + "/handler.fifo"
        guard mkfifo(fifo, 0o600) == 0 else { throw Bench.Failure(description: "mkfifo: errno \(errno)") }
        var rules = HandlerRules()
        rules.suspendAfter = .seconds(3600)
        let handler = HandlerConfiguration(
            name: "bench", topic: "com.example.bench",
            command: [
                handlerPath, "--quiet", "--no-fingerprint", "--commands", fifo, "--log", directory + "/handler.log",
                "--transfer-session", "bench",
            ], allowRoot: true, rules: rules)
        var logger = Logger(label: "rouse.bench.transfers")
        logger.logLevel = .critical
        var configuration = AgentConfiguration(
            endpoint: GatewayEndpoint(baseURL: "https://127.0.0.1:1", caFile: certs + "/ca.pem"),
            socketPath: directory + "/agent.sock", handlers: [handler])
        configuration.transferSpool = directory + "/spool"
        configuration.transferCAFile = certs + "/ca.pem"
        configuration.transferLimits.spoolBytesPerHandler = Int64(mib + 1) << 20
        let agent = try Agent(
            configuration: configuration, store: JSONFileAgentStateStore(path: directory + "/state.json"),
            logger: logger)
        try await agent.start()
        await agent.reachabilityChanged(true)  // no gateway here: the network is declared usable
        defer { Task { await agent.shutdown() } }
        let admin = try AgentClient(socketPath: configuration.socketPath)
        _ = try await admin.request(.userControl(.init(handler: "bench", state: "started")))
        admin.close()
        func log() -> String { (try? String(contentsOfFile: directory + "/handler.log", encoding: .utf8)) ?? "" }
        try await until("the handler reattached its session") { log().contains("session name=bench") }
        let commands = try FileHandle(forWritingTo: URL(fileURLWithPath: fifo))

        var agentRates: [Double] = []
        var curlRates: [Double] = []
        var cpuPerMiB: [Double] = []
        for round in 1...rounds {
            // curl: the same URL, the same TLS, to a file.
            // curl's own time_total (connect and TLS included, its process start not).
            let result = try ChildProcess.runSync(
                curl,
                [
                    "--http2", "-s", "-o", directory + "/curl.out", "--cacert", certs + "/ca.pem", "-w",
                    "%{time_total}",
                    url,
                ])
            let curlTime = Double(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? .infinity
            let curlSize =
                (try? FileManager.default.attributesOfItem(atPath: directory + "/curl.out")[.size] as? Int) ?? 0
            guard result.status == 0, curlSize == mib << 20 else {
                throw Bench.Failure(description: "curl failed (status \(result.status), \(curlSize) bytes)")
            }
            try? FileManager.default.removeItem(atPath: directory + "/curl.out")
            curlRates.append(Double(mib) / curlTime)

            // The agent: command → the handler's "completed" line (IPC both ways included).
            let marker = "transfer task=\(round) state=completed bytes=\(mib << 20) status=200 file=yes"
            let cpuBefore = processCPU()
            let start = ContinuousClock.now
            try commands.write(contentsOf: Data("download bench \(url)\n".utf8))
            try await until("download \(round)", timeout: .seconds(600)) { log().contains(marker) }
            let agentTime = (ContinuousClock.now - start).seconds
            cpuPerMiB.append((processCPU() - cpuBefore) * 1000 / Double(mib))
            agentRates.append(Double(mib) / agentTime)
            if !json {
                print(
                    String(
                        format: "round %d: agent %.0f MiB/s, curl %.0f MiB/s", round, agentRates.last ?? 0,
                        curlRates.last ?? 0)
                )
            }
        }
        try commands.close()
        let agentBest = agentRates.max() ?? 0
        let curlBest = curlRates.max() ?? 0
        let ratio = curlBest > 0 ? agentBest / curlBest : 0
        let cpu = cpuPerMiB.min() ?? 0
        if json {
            print(
                String(
                    format:
                        #"{"name":"transfers","mib":%d,"agentMiBps":%.1f,"curlMiBps":%.1f,"ratio":%.3f,"agentCPUmsPerMiB":%.3f}"#,
                    mib, agentBest, curlBest, ratio, cpu))
        } else {
            print(
                String(
                    format:
                        "download %d MiB, loopback TLS, nghttpd (HTTP/2), best of %d: agent %.0f MiB/s, curl %.0f MiB/s, "
                        + "ratio %.2f; agent CPU %.2f ms/MiB (this process, upper bound)",
                    mib, rounds, agentBest, curlBest, ratio, cpu))
        }
    }

    /// User + system CPU seconds of this process.
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func until(_ what: String, timeout: Duration = .seconds(30), _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw Bench.Failure(description: "timed out waiting for \(what)")
    }
}
