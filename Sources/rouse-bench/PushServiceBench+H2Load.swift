import Foundation
import RouseAPNs
import RouseSender
import Synchronization

/// The sustained-rate phase with independent API clients: h2load (nghttp2's C load generator, a few µs of CPU per
/// request) speaking h2c to rouse-pushd's TCP listener with its bearer token, N connections with one request in
/// flight each (`-c N -m 1`), every request a VoIP push on the fast path (`POST /v1/apps/bench/voip/<token>`, the body
/// the payload). The reference is the in-process `APNsSender` sending the same VoIP pushes from N sequential tasks to
/// the same mock, in the same run, as two halves in the order reference, service, service, reference.
extension PushServiceBench {
    /// What the h2c phase needs from the run: the listener, the token, the mock, the process ids, a scratch directory.
    struct H2CTarget {
        var address: String
        var bearer: String
        var directory: String
        var pushd: Int32
        var mock: Int32
    }

    /// Runs the phase for 1, 8 and 64 clients and prints the rates and the CPU time per push of each process.
    static func h2loadRates(sender: APNsSender, target: H2CTarget, seconds: Double) async throws {
        let h2load = try Bench.tool("/usr/bin/h2load")
        print("")
        print("h2load clients (h2c on TCP, bearer token, -m 1 each), VoIP fast path; reference: in-process VoIP tasks")
        print("clients   in-process pushes/s   rouse-pushd pushes/s   share   load average")
        var costs: [String] = []
        let bench = getpid()
        func cpu() -> (bench: Double, pushd: Double, mock: Double, children: Double) {
            (
                Bench.cpuSeconds(pid: bench), Bench.cpuSeconds(pid: target.pushd),
                Bench.cpuSeconds(pid: target.mock), reapedChildrenCPU()
            )
        }
        for (phase, clients) in [1, 8, 64].enumerated() {
            let half = seconds / 2
            let base = 600_000_000 + phase * 40_000_000
            let c0 = cpu()
            var reference = await inProcessVoIPRate(sender: sender, clients: clients, seconds: half, base: base)
            let c1 = cpu()
            var failed = 0
            var served = 0.0
            for h in 1...2 {
                let run = try h2loadRun(
                    h2load, target: target, clients: clients, seconds: half, base: base + h * 10_000_000)
                served += run.rate
                failed += run.failed
            }
            let c2 = cpu()
            reference += await inProcessVoIPRate(
                sender: sender, clients: clients, seconds: half, base: base + 30_000_000)
            let c3 = cpu()
            let referencePushes = reference * half
            let servedPushes = served * half
            reference /= 2
            served /= 2
            print(
                String(
                    format: "%7d   %19.0f   %20.0f   %4.0f %%   ", clients, reference, served,
                    reference > 0 ? served / reference * 100 : 0) + SendFloorBench.loadAverage()
                    + (failed > 0 ? "  (\(failed) h2load requests not 2xx)" : ""))
            let us = { (seconds: Double, pushes: Double) in pushes > 0 ? seconds / pushes * 1e6 : 0 }
            costs.append(
                String(
                    format: "%7d   %12.1f %8.1f   %12.1f %8.1f %8.1f", clients,
                    us(c1.bench - c0.bench + c3.bench - c2.bench, referencePushes),
                    us(c1.mock - c0.mock + c3.mock - c2.mock, referencePushes), us(c2.pushd - c1.pushd, servedPushes),
                    us(c2.children - c1.children, servedPushes), us(c2.mock - c1.mock, servedPushes)))
        }
        print("")
        print("CPU µs per push   in-process:            via rouse-pushd (h2c):")
        print("clients   sender+tasks     mock    rouse-pushd   h2load     mock")
        for line in costs { print(line) }
    }

    /// One h2load run of `seconds` (after a 0.3 s warm-up in which the connections open): its rate of 2xx answers
    /// and how many requests were not 2xx.
    static func h2loadRun(_ h2load: String, target: H2CTarget, clients: Int, seconds: Double, base: Int) throws -> (
        rate: Double, failed: Int
    ) {
        // Distinct tokens: each client cycles through the list (h2load's `-i`), 4096 URIs.
        let uris = target.directory + "/uris-\(base).txt"
        let list = (0..<4096).map {
            "http://\(target.address)/v1/apps/bench/voip/" + String(format: "%08x", base + $0)
                + String(repeating: "5d", count: 28)
        }
        try (list.joined(separator: "\n") + "\n").write(toFile: uris, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: uris) }
        let body = target.directory + "/voip-body.json"
        try #"{"aps":{}}"#.write(toFile: body, atomically: true, encoding: .utf8)
        let result = try SendBench.runProcess(
            h2load,
            [
                "-c", "\(clients)", "-m", "1", "-t", "1", "-D", "\(Int(seconds * 1000))ms", "--warm-up-time",
                "300ms",
                "-H", "authorization: Bearer \(target.bearer)", "-d", body, "-i", uris,
            ])
        let parsed = parseH2load(result.output)
        guard result.status == 0, parsed.done > 0 else {
            throw Bench.Failure(description: "h2load failed (exit \(result.status)): \(result.output.suffix(600))")
        }
        let failed = parsed.done - parsed.success
        return (parsed.rate * Double(parsed.success) / Double(parsed.done), failed)
    }

    /// h2load's summary: `finished in 2.00s, 12345.60 req/s, …`, `requests: … N done, …`, `status codes: N 2xx, …`.
    static func parseH2load(_ output: String) -> (rate: Double, done: Int, success: Int) {
        var rate = 0.0
        var done = 0
        var success = 0
        for line in output.split(separator: "\n") {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            if line.hasPrefix("finished in"), fields.count > 1 {
                rate = Double(fields[1].split(separator: " ").first ?? "") ?? 0
            } else if line.hasPrefix("requests:") {
                for field in fields where field.hasSuffix(" done") {
                    done = Int(field.split(separator: " ").first ?? "") ?? 0
                }
            } else if line.hasPrefix("status codes:") {
                let first = line.dropFirst("status codes:".count).trimmingCharacters(in: .whitespaces)
                success = Int(first.split(separator: " ").first ?? "") ?? 0
            }
        }
        return (rate, done, success)
    }

    /// Pushes per second of `clients` tasks sending VoIP pushes, each its next when the last one's outcome is in.
    static func inProcessVoIPRate(sender: APNsSender, clients: Int, seconds: Double, base: Int) async -> Double {
        let end = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        let count = BenchCounter()
        await withTaskGroup(of: Void.self) { group in
            for c in 0..<clients {
                group.addTask {
                    var i = 0
                    while ContinuousClock.now < end {
                        let push = APNsPush(
                            deviceToken: String(format: "%08x", base + c * 100_000 + i)
                                + String(repeating: "5d", count: 28),
                            topic: "com.example.rouse.voip", pushType: .voip, expiration: 0,
                            payload: Array(#"{"aps":{}}"#.utf8))
                        if case .delivered = await sender.send(push) { count.value.add(1, ordering: .relaxed) }
                        i += 1
                    }
                }
            }
        }
        return Double(count.value.load(ordering: .relaxed)) / seconds
    }

    /// CPU seconds of the children this process has reaped (h2load's runs; the mock and the service are reaped only
    /// at the end).
    static func reapedChildrenCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
