import Foundation
import Logging
import RouseAPNs
import RouseClock
import RouseDaemon
import RouseSender
import Synchronization

/// `rouse-bench send`: the push sender against a `rouse mock-apns` child on loopback TLS, next to `h2load` and
/// `curl` on the same mock. Prints pushes/s, client CPU µs per push (getrusage of this process only: the
/// mock is a separate process), peak RSS and latency percentiles.
///
/// Options: `--pushes N` (default 100000), `--certs DIR` (default `certs`), `--rouse PATH` (default: the
/// `rouse` next to this executable), `--skip-curl`, `--oneshot-runs N` (default 10).
enum SendBench {
    struct Options {
        var pushes = 100_000
        var certs = "certs"
        var rouse = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("rouse").path
        var skipCurl = false
        var oneshotRuns = 10
        var mockWorkers = 1
    }

    typealias BenchError = Bench.Failure

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            func value() throws -> String {
                guard let v = iterator.next() else { throw BenchError(description: "\(argument) needs a value") }
                return v
            }
            switch argument {
            case "--pushes": options.pushes = Int(try value()) ?? options.pushes
            case "--certs": options.certs = try value()
            case "--rouse": options.rouse = try value()
            case "--skip-curl": options.skipCurl = true
            case "--oneshot-runs": options.oneshotRuns = Int(try value()) ?? options.oneshotRuns
            case "--mock-workers": options.mockWorkers = Int(try value()) ?? options.mockWorkers
            default: throw BenchError(description: "unknown option \(argument)")
            }
        }
        return options
    }

    static func run(arguments: [String]) async throws {
        if arguments.contains("--versus-floor") {
            try await SendFloorBench.run(arguments: arguments)
            return
        }
        let options = try parse(arguments)
        RouseLogging.bootstrap(level: .error)
        let mock = try await BenchMock(rouse: options.rouse, certs: options.certs, workers: options.mockWorkers)
        defer { mock.stop() }
        print("mock-apns child on 127.0.0.1:\(mock.port); \(options.pushes) pushes per run, 100k distinct tokens")
        let tokens = (0..<100_000).map { String(format: "%08x", $0) + String(repeating: "5a", count: 28) }
        let keyPEM = try String(contentsOfFile: options.certs + "/apns-key.p8", encoding: .utf8)
        print("")
        print("engine  conns payload    pushes/s   CPU µs/push  peak RSS MB    p50 ms    p99 ms  p99.9 ms  ok")
        var engines: [(String, SenderTransport)] = [("native", .native)]
        if !options.skipCurl { engines.append(("curl", .curl(proxy: ""))) }
        for (name, transport) in engines {
            for connections in [1, 4] {
                for size in [256, 5120] {
                    let n = name == "curl" ? min(options.pushes, 50_000) : options.pushes
                    let figures = try await throughput(
                        transport: transport, connections: connections, size: size, count: n, tokens: tokens,
                        keyPEM: keyPEM, options: options, port: mock.port)
                    print(figures.line(engine: name, connections: connections, size: size))
                }
            }
        }
        for connections in [1, 4] {
            for size in [256, 5120] {
                print(
                    try h2load(
                        connections: connections, size: size, count: options.pushes, tokens: tokens, keyPEM: keyPEM,
                        options: options, port: mock.port))
            }
        }
        print("")
        print(try await voipUnderBulk(tokens: tokens, keyPEM: keyPEM, options: options, port: mock.port))
        print("")
        print(try oneShot(keyPEM: keyPEM, options: options, port: mock.port))
    }

    // MARK: Sender runs

    struct Figures {
        var rate: Double
        var cpuMicros: Double
        var rssMB: Double
        var p50: Double
        var p99: Double
        var p999: Double
        var delivered: Int
        var total: Int

        func line(engine: String, connections: Int, size: Int) -> String {
            String(
                format: "%-7@ %5d %7d %11.0f %13.1f %12.1f %9.2f %9.2f %9.2f  %d/%d", engine, connections, size, rate,
                cpuMicros, rssMB, p50, p99, p999, delivered, total)
        }
    }

    static func payload(_ size: Int) -> [UInt8] {
        let head = #"{"aps":{},"pad":""#
        return Array((head + String(repeating: "x", count: max(0, size - head.utf8.count - 2)) + "\"}").utf8)
    }

    static func configuration(
        transport: SenderTransport, connections: Int, keyPEM: String, options: Options, port: UInt16
    ) -> APNsSenderConfiguration {
        var c = APNsSenderConfiguration(
            endpoint: SenderEndpoint(host: "127.0.0.1", port: port),
            credentials: .token(keyPEM: keyPEM, keyID: "ROUSEKEY01", teamID: "ROUSETEAM1"))
        c.transport = transport
        c.connections = connections
        c.trustRootsFile = options.certs + "/ca.pem"
        c.defaultDeadline = .seconds(60)
        return c
    }

    static func usage() -> (cpu: Double, rssMB: Double) {
        var u = rusage()
        getrusage(RUSAGE_SELF.rawValue, &u)
        let cpu = Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec)
        return (cpu, Double(u.ru_maxrss) / 1024)
    }

    static func milliseconds(_ d: Duration) -> Double {
        d.inMilliseconds
    }

    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        return sorted[min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))]
    }

    static func throughput(
        transport: SenderTransport, connections: Int, size: Int, count: Int, tokens: [String], keyPEM: String,
        options: Options, port: UInt16
    ) async throws -> Figures {
        let sender = try APNsSender(
            configuration: configuration(
                transport: transport, connections: connections, keyPEM: keyPEM, options: options, port: port))
        let body = payload(size)
        func push(_ i: Int) -> APNsPush {
            APNsPush(
                deviceToken: tokens[i % tokens.count], topic: "com.example.rouse.voip", pushType: .voip, expiration: 0,
                payload: body)
        }
        // Warm up: connections open, the token is accepted, stream limits are up.
        await sender.sendAll((0..<2000).lazy.map(push), maxInFlight: 2000, lane: .bulk) { _ in }
        let latencies = Mutex<[Double]>([])
        latencies.withLock { $0.reserveCapacity(count) }
        let delivered = Atomic<Int>(0)
        let before = usage()
        let start = ContinuousClock.now
        await sender.sendAll((0..<count).lazy.map(push), maxInFlight: 1000 * connections + 1000, lane: .bulk) { r in
            if r.outcome.isDelivered { delivered.add(1, ordering: .relaxed) }
            let ms = milliseconds(r.latency)
            latencies.withLock { $0.append(ms) }
        }
        let elapsed = milliseconds(ContinuousClock.now - start) / 1000
        let after = usage()
        await sender.shutdown()
        let sorted = latencies.withLock { $0 }.sorted()
        return Figures(
            rate: Double(count) / elapsed, cpuMicros: (after.cpu - before.cpu) / Double(count), rssMB: after.rssMB,
            p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), p999: percentile(sorted, 0.999),
            delivered: delivered.load(ordering: .relaxed), total: count)
    }

    static func voipUnderBulk(tokens: [String], keyPEM: String, options: Options, port: UInt16) async throws -> String {
        let sender = try APNsSender(
            configuration: configuration(
                transport: .native, connections: 1, keyPEM: keyPEM, options: options, port: port))
        let body = payload(256)
        func bulkPush(_ i: Int) -> APNsPush {
            APNsPush(
                deviceToken: tokens[i % tokens.count], topic: "com.example.rouse", pushType: .background,
                priority: .conservePower, payload: Array(#"{"aps":{"content-available":1}}"#.utf8))
        }
        _ = await sender.send(
            APNsPush(
                deviceToken: tokens[0], topic: "com.example.rouse.voip", pushType: .voip, expiration: 0, payload: body))
        await sender.sendAll((0..<2000).lazy.map(bulkPush), maxInFlight: 2000) { _ in }
        let done = Atomic<Bool>(false)
        let bulkCount = options.pushes
        let bulkStart = ContinuousClock.now
        // The bulk send is paced at 10,000 pushes/s (100 every 10 ms), the rate the VoIP target is stated for.
        let bulk = Task {
            let gate = Mutex(0)
            var sent = 0
            let clock = ContinuousClock()
            var next = clock.now
            while sent < bulkCount {
                for i in sent..<min(bulkCount, sent + 100) {
                    gate.withLock { $0 += 1 }
                    sender.send(bulkPush(i)) { _ in gate.withLock { $0 -= 1 } }
                }
                sent = min(bulkCount, sent + 100)
                next = next.advanced(by: .milliseconds(10))
                try? await clock.sleep(until: next)
            }
            while gate.withLock({ $0 }) > 0 { try? await Task.sleep(for: .milliseconds(1)) }
            done.store(true, ordering: .relaxed)
        }
        var voip: [Double] = []
        var i = 0
        while !done.load(ordering: .relaxed) && voip.count < 5000 {
            let r = await sender.sendDetailed(
                APNsPush(
                    deviceToken: tokens[(i * 7919) % tokens.count], topic: "com.example.rouse.voip", pushType: .voip,
                    expiration: 0, payload: body))
            if r.outcome.isDelivered { voip.append(milliseconds(r.latency)) }
            i += 1
        }
        await bulk.value
        let bulkRate = Double(bulkCount) / (milliseconds(ContinuousClock.now - bulkStart) / 1000)
        await sender.shutdown()
        let sorted = voip.sorted()
        return String(
            format:
                "VoIP under a %d-push background bulk send (%.0f bulk pushes/s): %d VoIP pushes, p50 %.3f ms, p99 %.3f ms, max %.3f ms",
            bulkCount, bulkRate, sorted.count, percentile(sorted, 0.5), percentile(sorted, 0.99), sorted.last ?? 0)
    }
}
