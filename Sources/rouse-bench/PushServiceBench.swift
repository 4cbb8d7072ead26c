import Foundation
import Logging
import RouseAPNs
import RouseChildProcess
import RouseClock
import RouseDaemon
import RousePush
import RousePushCore
import RouseSender
import Synchronization

/// `rouse-bench push-service`: rouse-pushd next to the in-process `RouseSender` it is built on, one-shot `rouse send`
/// and one-shot `curl --http2`, all against one `rouse mock-apns` child on loopback TLS, in one run.
///
/// - Added latency: VoIP pushes one at a time; the API's request → outcome (the fast path over the Unix socket, one
///   kept-alive connection) minus the in-process `APNsSender.send` → outcome, p50 and p99 (samples interleaved so a
///   change of load hits both); the one-shots are process start → exit minus the same in-process figure.
/// - Sustained rate with 1, 8 and 64 API clients (each sends its next push when the last one's outcome is in) as a
///   share of the in-process sender driven by as many sequential tasks: the same background pushes, one bulk
///   connection each to the same mock, both warmed first; `--seconds` each, run as two halves in the order
///   reference, service, service, reference. Then the CPU time per push of each process in those halves (the
///   in-process side's sender and tasks, the service, its clients, the mock): where a gap between the rates goes.
///
/// - The same with independent API clients (`--clients h2load`, PushServiceBench+H2Load.swift): h2load over h2c on
///   TCP with the bearer token, VoIP fast path, against in-process VoIP tasks.
///
/// Options: `--samples N` (default 2000), `--oneshot-runs N` (default 10), `--seconds S` (default 3), `--certs DIR`,
/// `--clients swift|h2load|both` (default both: which rate phases run).
enum PushServiceBench {
    static func run(arguments: [String]) async throws {
        var samples = 2000
        var oneshots = 10
        var seconds = 3.0
        var certs = "certs"
        var clientKinds = "both"
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            guard let value = iterator.next() else { throw Bench.Failure(description: "\(argument) needs a value") }
            switch argument {
            case "--samples": samples = Int(value) ?? samples
            case "--oneshot-runs": oneshots = Int(value) ?? oneshots
            case "--seconds": seconds = Double(value) ?? seconds
            case "--certs": certs = value
            case "--clients":
                guard ["swift", "h2load", "both"].contains(value) else {
                    throw Bench.Failure(description: "--clients takes swift, h2load or both")
                }
                clientKinds = value
            default: throw Bench.Failure(description: "unknown option \(argument)")
            }
        }
        RouseLogging.bootstrap(level: .error)
        let rouse = try Bench.product("rouse")
        let pushd = try Bench.product("rouse-pushd")
        let mock = try await BenchMock(rouse: rouse, certs: certs, workers: 1)
        defer { mock.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-bench-pushd-\(getpid())")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let absoluteCerts = URL(fileURLWithPath: certs).standardizedFileURL.path
        let bearer = (0..<48).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement() ?? "x") }
            .joined()
        try (bearer + "\n").write(toFile: "\(directory)/bearer", atomically: true, encoding: .utf8)
        let config = """
            {"unix":{"path":"\(directory)/api.sock","mode":"0600"},
             "tcp":{"address":"127.0.0.1:0","bearerTokenFile":"\(directory)/bearer","h2cAddress":"127.0.0.1:0"},
             "limits":{"maxPendingPushes":100000,"maxConnections":1024},
             "apps":{"bench":{"topic":"com.example.rouse","endpoint":"https://127.0.0.1:\(mock.port)",
               "caFile":"\(absoluteCerts)/ca.pem","keyFile":"\(absoluteCerts)/apns-key.p8","keyID":"ROUSEKEY01",
               "teamID":"ROUSETEAM1"}}}
            """
        try config.write(toFile: "\(directory)/pushd.json", atomically: true, encoding: .utf8)
        let service = try ChildProcess.start(
            pushd, ["--config", "\(directory)/pushd.json", "--log-level", "error"], stdout: .lines, stderr: .inherit)
        defer {
            service.terminate()
            service.waitUntilExit()
        }
        guard
            let ready = await service.lines.first(timeout: .seconds(30), where: { $0.hasPrefix("rouse-pushd ready") }),
            let h2cAddress = ready.split(separator: " ").first(where: { $0.hasPrefix("h2c=") })?.dropFirst(4)
        else { throw Bench.Failure(description: "rouse-pushd did not start") }
        let socket = "\(directory)/api.sock"

        let keyPEM = try String(contentsOfFile: "\(certs)/apns-key.p8", encoding: .utf8)
        var configuration = APNsSenderConfiguration(
            endpoint: SenderEndpoint(host: "127.0.0.1", port: mock.port),
            credentials: .token(keyPEM: keyPEM, keyID: "ROUSEKEY01", teamID: "ROUSETEAM1"))
        configuration.trustRootsFile = "\(certs)/ca.pem"
        configuration.pool.pingWhileIdle = false
        let sender = try APNsSender(configuration: configuration)
        let client = PushServiceClient(socketPath: socket)
        func token(_ n: Int) -> String { String(format: "%08x", n) + String(repeating: "6b", count: 28) }
        func voip(_ n: Int) -> APNsPush {
            APNsPush(
                deviceToken: token(n), topic: "com.example.rouse.voip", pushType: .voip, expiration: 0,
                payload: Array(#"{"aps":{}}"#.utf8))
        }
        func background(_ token: String) -> APNsPush {
            APNsPush(
                deviceToken: token, topic: "com.example.rouse", pushType: .background, priority: .conservePower,
                payload: Array(#"{"aps":{"content-available":1}}"#.utf8))
        }
        // Warm both, both lanes: connections open, tokens minted (the rate phases' bulk connections too, so that
        // neither side's first window pays a TLS handshake).
        for i in 0..<50 {
            _ = await sender.send(voip(i))
            _ = try client.request("POST", "/v1/apps/bench/voip/\(token(i))")
            _ = await sender.send(background(token(i)))
            _ = try client.request("POST", "/v1/apps/bench/background/\(token(i))")
        }
        var inProcess: [Double] = []
        var viaService: [Double] = []
        var failures = 0
        for i in 0..<samples {
            let a = ContinuousClock.now
            if case .delivered = await sender.send(voip(1000 + i)) {} else { failures += 1 }
            inProcess.append((ContinuousClock.now - a).inMilliseconds)
            let b = ContinuousClock.now
            let response = try client.request("POST", "/v1/apps/bench/voip/\(token(1000 + i))")
            viaService.append((ContinuousClock.now - b).inMilliseconds)
            if response.status != 200 { failures += 1 }
        }
        let p = { (values: [Double], q: Double) -> Double in
            let sorted = values.sorted()
            return sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))]
        }
        let base50 = p(inProcess, 0.5)
        let base99 = p(inProcess, 0.99)
        print(
            "rouse-pushd child, rouse mock-apns child on 127.0.0.1:\(mock.port); \(samples) VoIP pushes each, one at a time"
        )
        print(
            String(
                format: "in-process RouseSender           p50 %7.3f ms  p99 %7.3f ms  (the reference)", base50, base99))
        print(
            String(
                format: "rouse-pushd (fast path, 1 conn)  p50 %7.3f ms  p99 %7.3f ms  added p50 %6.3f ms, p99 %6.3f ms",
                p(viaService, 0.5), p(viaService, 0.99), p(viaService, 0.5) - base50, p(viaService, 0.99) - base99))
        let oneShot = try SendBench.oneShotTimes(
            rouse: rouse, certs: certs, keyPEM: keyPEM, port: mock.port, runs: oneshots)
        let added = p(viaService, 0.5) - base50
        print(
            String(
                format: "one-shot rouse send (median of %d) %7.1f ms  added %6.1f ms  (%.0f× rouse-pushd's added p50)",
                oneshots, oneShot.rouse, oneShot.rouse - base50, added > 0 ? (oneShot.rouse - base50) / added : 0))
        print(
            String(
                format: "one-shot curl --http2 (median of %d) %5.1f ms  added %6.1f ms", oneshots, oneShot.curl,
                oneShot.curl - base50))
        if failures > 0 { print("failures during the latency samples: \(failures)") }
        if clientKinds != "h2load" {
            await swiftClientRates(
                sender: sender, socket: socket, seconds: seconds, pushd: service.processIdentifier,
                mock: mock.process.processIdentifier)
        }
        if clientKinds != "swift" {
            let target = H2CTarget(
                address: String(h2cAddress), bearer: bearer, directory: directory, pushd: service.processIdentifier,
                mock: mock.process.processIdentifier)
            try await h2loadRates(sender: sender, target: target, seconds: seconds)
        }
        await sender.shutdown()
    }

    /// The sustained-rate phase with the bench's own API clients: blocking HTTP/1.1 `PushServiceClient`s over the
    /// Unix socket, one thread each, `POST /v1/push` background pushes; the reference is the in-process sender's
    /// bulk lane driven by as many tasks.
    static func swiftClientRates(
        sender: APNsSender, socket: String, seconds: Double, pushd: Int32, mock: Int32
    ) async {
        print("")
        print("Swift clients (HTTP/1.1 on the Unix socket, one blocking thread each), POST /v1/push background")
        print("clients   in-process pushes/s   rouse-pushd pushes/s   share   load average")
        // CPU time per push of each process during each side's halves, in µs: where the rates' gap goes.
        var costs: [String] = []
        let pids = (bench: getpid(), pushd: pushd, mock: mock)
        func cpu() -> (bench: Double, pushd: Double, mock: Double) {
            (Bench.cpuSeconds(pid: pids.bench), Bench.cpuSeconds(pid: pids.pushd), Bench.cpuSeconds(pid: pids.mock))
        }
        for (phase, clients) in [1, 8, 64].enumerated() {
            // Two halves each, in the order reference, service, service, reference: a change of the machine's load
            // during the phase (other work on a shared host) weighs on both sides alike, not on the one that ran last.
            let half = seconds / 2
            // Distinct tokens for every push: client c's i-th push of a half is base + c × 100,000 + i.
            let base = 100_000_000 + phase * 40_000_000
            let c0 = cpu()
            var reference = await inProcessRate(sender: sender, clients: clients, seconds: half, base: base)
            let c1 = cpu()
            var served = serviceRate(socket: socket, clients: clients, seconds: half, base: base + 10_000_000)
            served += serviceRate(socket: socket, clients: clients, seconds: half, base: base + 20_000_000)
            let c2 = cpu()
            reference += await inProcessRate(sender: sender, clients: clients, seconds: half, base: base + 30_000_000)
            let c3 = cpu()
            let referencePushes = reference * half
            let servedPushes = served * half
            reference /= 2
            served /= 2
            print(
                String(
                    format: "%7d   %19.0f   %20.0f   %4.0f %%   ", clients, reference, served,
                    reference > 0 ? served / reference * 100 : 0) + SendFloorBench.loadAverage())
            let us = { (seconds: Double, pushes: Double) in pushes > 0 ? seconds / pushes * 1e6 : 0 }
            costs.append(
                String(
                    format: "%7d   %12.1f %8.1f   %12.1f %8.1f %8.1f", clients,
                    us(c1.bench - c0.bench + c3.bench - c2.bench, referencePushes),
                    us(c1.mock - c0.mock + c3.mock - c2.mock, referencePushes), us(c2.pushd - c1.pushd, servedPushes),
                    us(c2.bench - c1.bench, servedPushes), us(c2.mock - c1.mock, servedPushes)))
        }
        print("")
        print("CPU µs per push   in-process:            via rouse-pushd:")
        print("clients   sender+tasks     mock    rouse-pushd  clients     mock")
        for line in costs { print(line) }
    }

    /// Pushes per second of `clients` tasks, each sending its next push when the last one's outcome is in.
    static func inProcessRate(sender: APNsSender, clients: Int, seconds: Double, base: Int) async -> Double {
        let end = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        let count = BenchCounter()
        await withTaskGroup(of: Void.self) { group in
            for c in 0..<clients {
                group.addTask {
                    var i = 0
                    while ContinuousClock.now < end {
                        let push = APNsPush(
                            deviceToken: String(format: "%08x", base + c * 100_000 + i)
                                + String(repeating: "7c", count: 28),
                            topic: "com.example.rouse", pushType: .background, priority: .conservePower,
                            payload: Array(#"{"aps":{"content-available":1}}"#.utf8))
                        if case .delivered = await sender.send(push) { count.value.add(1, ordering: .relaxed) }
                        i += 1
                    }
                }
            }
        }
        return Double(count.value.load(ordering: .relaxed)) / seconds
    }

    /// The same through the service: `clients` threads, each with its own API connection.
    static func serviceRate(socket: String, clients: Int, seconds: Double, base: Int) -> Double {
        let end = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        let count = BenchCounter()
        let done = DispatchGroup()
        for c in 0..<clients {
            done.enter()
            Thread.detachNewThread {
                let client = PushServiceClient(socketPath: socket)
                var i = 0
                while ContinuousClock.now < end {
                    let token = String(format: "%08x", base + c * 100_000 + i) + String(repeating: "7c", count: 28)
                    let body = #"{"app":"bench","token":"\#(token)","type":"background"}"#
                    if let r = try? client.request("POST", "/v1/push", body: Array(body.utf8)), r.status == 200 {
                        count.value.add(1, ordering: .relaxed)
                    }
                    i += 1
                }
                done.leave()
            }
        }
        done.wait()
        return Double(count.value.load(ordering: .relaxed)) / seconds
    }
}

extension SendBench {
    /// Medians of one-shot `rouse send voip` and `curl --http2` for the same request, process start to exit, in ms.
    static func oneShotTimes(rouse: String, certs: String, keyPEM: String, port: UInt16, runs: Int) throws -> (
        rouse: Double, curl: Double
    ) {
        let token = String(repeating: "ab", count: 32)
        let rouseArguments = [
            "send", "voip", "--token", token, "--topic", "com.example.rouse", "--env", "https://127.0.0.1:\(port)",
            "--ca-file", certs + "/ca.pem", "--auth-key", certs + "/apns-key.p8", "--key-id", "ROUSEKEY01",
            "--team-id", "ROUSETEAM1",
        ]
        let jwt = try jwt(keyPEM: keyPEM)
        let curlArguments = [
            "--http2", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", certs + "/ca.pem",
            "-H", "authorization: bearer \(jwt)", "-H", "apns-push-type: voip", "-H",
            "apns-topic: com.example.rouse.voip", "-H", "apns-expiration: 0", "-d", #"{"aps":{}}"#,
            "https://127.0.0.1:\(port)/3/device/\(token)",
        ]
        var rouseTimes: [Double] = []
        var curlTimes: [Double] = []
        for _ in 0..<max(1, runs) {
            let r = try runProcess(rouse, rouseArguments)
            if r.status == 0 { rouseTimes.append(r.seconds * 1000) }
            let c = try runProcess("/usr/bin/curl", curlArguments)
            if c.output == "200" { curlTimes.append(c.seconds * 1000) }
        }
        return (
            rouseTimes.sorted()[safe: rouseTimes.count / 2] ?? 0, curlTimes.sorted()[safe: curlTimes.count / 2] ?? 0
        )
    }
}

/// A count shared by the client tasks and threads of a rate run.
final class BenchCounter: Sendable {
    let value = Atomic<Int>(0)
}
