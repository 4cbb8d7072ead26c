import Foundation
import RouseAPNs
import RouseChildProcess

/// The mock as a child process (`rouse mock-apns`), so the bench measures only the client's CPU.
final class BenchMock {
    let process: RunningChild
    let port: UInt16

    init(rouse: String, certs: String, workers: Int) async throws {
        guard FileManager.default.isExecutableFile(atPath: rouse) else {
            throw SendBench.BenchError(description: "\(rouse) not found: build the rouse product first")
        }
        process = try ChildProcess.start(
            rouse,
            [
                "mock-apns", "--listen", "127.0.0.1:0", "--cert", certs + "/server.pem", "--key",
                certs + "/server.key", "--keys", certs + "/keys.json", "--log-level", "error", "--workers",
                String(workers),
            ], stdout: .lines, stderr: .inherit)
        let line = await process.lines.first(timeout: .seconds(60)) { _ in true } ?? ""
        guard let range = line.range(of: "listening on 127.0.0.1:"),
            let port = UInt16(line[range.upperBound...].prefix { $0.isNumber })
        else {
            process.kill()
            throw SendBench.BenchError(description: "mock-apns did not start: \(line)")
        }
        self.port = port
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

extension SendBench {
    static func runProcess(_ path: String, _ arguments: [String]) throws -> (
        status: Int32, output: String, seconds: Double
    ) {
        let start = ContinuousClock.now
        let output = try ChildProcess.runSync(path, arguments)
        let seconds = milliseconds(ContinuousClock.now - start) / 1000
        return (output.status, output.stdout + output.stderr, seconds)
    }

    static func jwt(keyPEM: String) throws -> String {
        let key = try ProviderToken.privateKey(pem: keyPEM)
        return try ProviderToken(keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", issuedAt: APNsTime.now().seconds)
            .signed(with: key)
    }

    /// h2load with the same requests (URI file of the 100k tokens, the same headers and payload).
    static func h2load(
        connections: Int, size: Int, count: Int, tokens: [String], keyPEM: String, options: Options, port: UInt16
    ) throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let uris = directory.appendingPathComponent("uris.txt").path
        let data = directory.appendingPathComponent("payload-\(size).json").path
        try tokens.map { "https://127.0.0.1:\(port)/3/device/\($0)" }.joined(separator: "\n")
            .write(toFile: uris, atomically: true, encoding: .utf8)
        try Data(payload(size)).write(to: URL(fileURLWithPath: data))
        let token = try jwt(keyPEM: keyPEM)
        let result = try runProcess(
            "/usr/bin/h2load",
            [
                "-n", String(count), "-c", String(connections), "-m", "1000", "-i", uris, "-d", data,
                "-H", "authorization: bearer \(token)", "-H", "apns-push-type: voip",
                "-H", "apns-topic: com.example.rouse.voip", "-H", "apns-expiration: 0",
            ])
        let finished = result.output.split(separator: "\n").first { $0.hasPrefix("finished in") } ?? "no result"
        let statuses = result.output.split(separator: "\n").first { $0.hasPrefix("status codes:") } ?? ""
        return String(
            format: "h2load  %5d %7d  %@ (%@)", connections, size, String(finished), String(statuses))
    }

    /// `rouse send voip` versus `curl --http2` for the same single request, process start to exit.
    static func oneShot(keyPEM: String, options: Options, port: UInt16) throws -> String {
        let token = String(repeating: "ab", count: 32)
        let rouseArguments = [
            "send", "voip", "--token", token, "--topic", "com.example.rouse", "--env", "https://127.0.0.1:\(port)",
            "--ca-file", options.certs + "/ca.pem", "--auth-key", options.certs + "/apns-key.p8", "--key-id",
            "ROUSEKEY01", "--team-id", "ROUSETEAM1",
        ]
        let jwt = try jwt(keyPEM: keyPEM)
        let curlArguments = [
            "--http2", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", options.certs + "/ca.pem",
            "-H", "authorization: bearer \(jwt)", "-H", "apns-push-type: voip", "-H",
            "apns-topic: com.example.rouse.voip", "-H", "apns-expiration: 0", "-d", #"{"aps":{}}"#,
            "https://127.0.0.1:\(port)/3/device/\(token)",
        ]
        var rouseTimes: [Double] = []
        var curlTimes: [Double] = []
        for _ in 0..<max(1, options.oneshotRuns) {
            let r = try runProcess(options.rouse, rouseArguments)
            if r.status == 0 { rouseTimes.append(r.seconds * 1000) }
            let c = try runProcess("/usr/bin/curl", curlArguments)
            if c.output == "200" { curlTimes.append(c.seconds * 1000) }
        }
        let rouseMedian = rouseTimes.sorted()[safe: rouseTimes.count / 2] ?? 0
        let curlMedian = curlTimes.sorted()[safe: curlTimes.count / 2] ?? 0
        return String(
            format:
                "one-shot VoIP push, process start to exit (median of %d): rouse send %.1f ms (%d ok), curl --http2 %.1f ms (%d ok), ratio %.2f",
            options.oneshotRuns, rouseMedian, rouseTimes.count, curlMedian, curlTimes.count,
            curlMedian > 0 ? rouseMedian / curlMedian : 0)
    }
}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
