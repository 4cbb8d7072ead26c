import Dispatch
import Foundation
import RouseActivation
import RouseAgentCore

/// `rouse-bench activation [--decisions N] [--handlers K] [--seed S] [--round-trips N] [--deaths N] [--json]`: drives the activation
/// arbiter (the pure core of `rouse-agent`'s activations) with a seeded random workload over K handlers —
/// activate, deactivate (with and without notify), call started/ended, holder death — and measures decisions
/// per second (one untimed pass) and the latency of one decision, p50/p99/max (a second, timed pass).
///
/// Then, through `rouse-agent` (`--round-trips N`, `--deaths N`; 0 and 0 skip it): the activation round trip
/// over IPC and the time from a holder's death to the others' notification (see `ActivationBench+IPC.swift`).
enum ActivationBench {
    struct Options {
        var decisions = 200_000
        var handlers = 16
        var seed: UInt64 = 7
        var roundTrips = 2000
        var deaths = 30
        var json = false
    }

    typealias BenchError = Bench.Failure

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--decisions":
                options.decisions =
                    try Bench.value(
                        after: "--decisions", from: &iterator, "a positive integer", where: { value in value > 0 })
                    as Int
            case "--handlers":
                options.handlers =
                    try Bench.value(
                        after: "--handlers", from: &iterator, "a positive integer", where: { value in value > 0 })
                    as Int
            case "--seed":
                options.seed = try Bench.value(after: "--seed", from: &iterator, "an unsigned integer") as UInt64
            case "--round-trips":
                options.roundTrips =
                    try Bench.value(
                        after: "--round-trips", from: &iterator, "a non-negative integer",
                        where: { value in value >= 0 })
                    as Int
            case "--deaths":
                options.deaths =
                    try Bench.value(
                        after: "--deaths", from: &iterator, "a non-negative integer", where: { value in value >= 0 })
                    as Int
            case "--json": options.json = true
            default:
                throw BenchError(
                    description:
                        "unknown argument \(argument) (--decisions N, --handlers K, --seed S, --round-trips N, --deaths N, --json)"
                )
            }
        }
        return options
    }

    /// One arbiter step of the workload.
    enum Operation {
        case activate(ActivationRequest)
        case deactivate(SessionID, notify: Bool)
        case callStarted(HandlerID)
        case callEnded(HandlerID, notify: Bool)
        case gone(HandlerID)
    }

    /// The seeded workload: 45 % activate, 30 % deactivate, 10 % call started, 10 % call ended, 5 % death.
    static func workload(_ options: Options) throws -> [Operation] {
        var random = BenchRandom(seed: options.seed)
        let shapes: [(SessionCategory, SessionOptions)] = [
            (.playback, []), (.playback, [.mixWithOthers]), (.playback, [.duckOthers]), (.ambient, []),
            (.soloAmbient, []), (.playAndRecord, []), (.record, []),
            (.playback, [.interruptSpokenAudioAndMixWithOthers]),
        ]
        let configurations = try shapes.map { try SessionConfiguration(category: $0.0, options: $0.1) }
        let priorities = ActivationPriority.allCases.filter { $0 != .call }
        return (0..<options.decisions).map { _ in
            let handler = HandlerID("h\(random.below(options.handlers))")
            let session = SessionID(handler: handler, name: random.below(2) == 0 ? "a" : "b")
            switch random.below(100) {
            case 0..<45:
                return .activate(
                    ActivationRequest(
                        session: session, configuration: configurations[random.below(configurations.count)],
                        priority: priorities[random.below(priorities.count)], acceptsDelay: random.below(2) == 0))
            case 45..<75: return .deactivate(session, notify: random.below(2) == 0)
            case 75..<85: return .callStarted(handler)
            case 85..<95: return .callEnded(handler, notify: random.below(2) == 0)
            default: return .gone(handler)
            }
        }
    }

    static func apply(_ operation: Operation, to arbiter: inout ActivationArbiter, now: Double) -> Int {
        switch operation {
        case .activate(let request): arbiter.activate(request, now: now).count
        case .deactivate(let session, let notify): arbiter.deactivate(session, notifyOthers: notify, now: now).count
        case .callStarted(let handler): arbiter.callStarted(handler, now: now).count
        case .callEnded(let handler, let notify): arbiter.callEnded(handler, notifyOthers: notify, now: now).count
        case .gone(let handler): arbiter.holderGone(handler, reason: .processExited, now: now).count
        }
    }

    /// A fresh arbiter with three handlers in four in the foreground.
    static func arbiter(_ options: Options) -> ActivationArbiter {
        var arbiter = ActivationArbiter()
        for index in 0..<options.handlers {
            _ = arbiter.handlerStateChanged(
                HandlerID("h\(index)"), to: index % 4 == 3 ? .background : .foreground, now: 0)
        }
        return arbiter
    }

    static func run(arguments: [String]) async throws {
        let options = try parse(arguments)
        let operations = try workload(options)

        // Pass 1, untimed per step: throughput.
        var arbiter = Self.arbiter(options)
        var effects = 0
        let start = DispatchTime.now().uptimeNanoseconds
        for (index, operation) in operations.enumerated() {
            effects += apply(operation, to: &arbiter, now: Double(index))
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9

        // Pass 2, the same sequence, each decision timed.
        arbiter = Self.arbiter(options)
        var latencies = [UInt64](repeating: 0, count: operations.count)
        for (index, operation) in operations.enumerated() {
            let before = DispatchTime.now().uptimeNanoseconds
            _ = apply(operation, to: &arbiter, now: Double(index))
            latencies[index] = DispatchTime.now().uptimeNanoseconds - before
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            Double(latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]) / 1000
        }
        let report = Report(
            decisions: operations.count, handlers: options.handlers, seed: options.seed,
            decisionsPerSecond: Double(operations.count) / elapsed,
            effectsPerDecision: Double(effects) / Double(operations.count),
            p50Microseconds: percentile(0.50), p99Microseconds: percentile(0.99),
            maxMicroseconds: Double(latencies.last ?? 0) / 1000,
            heldAtEnd: arbiter.snapshot.sessions.count,
            ipc: options.roundTrips + options.deaths > 0
                ? try await measureIPC(roundTrips: max(1, options.roundTrips), deaths: options.deaths) : nil)
        print(options.json ? report.json : report.text)
    }

    struct Report: Codable {
        var decisions: Int
        var handlers: Int
        var seed: UInt64
        var decisionsPerSecond: Double
        var effectsPerDecision: Double
        var p50Microseconds: Double
        var p99Microseconds: Double
        var maxMicroseconds: Double
        var heldAtEnd: Int
        var ipc: IPCFigures?

        var text: String {
            """
            activation arbiter (pure core, no IPC): \(decisions) decisions over \(handlers) handlers, seed \(seed)
              decisions/s        \(String(format: "%.0f", decisionsPerSecond))
              per decision       p50 \(String(format: "%.2f", p50Microseconds)) µs   p99 \(String(format: "%.2f", p99Microseconds)) µs   max \(String(format: "%.1f", maxMicroseconds)) µs
              effects/decision   \(String(format: "%.2f", effectsPerDecision))   (sessions held at the end: \(heldAtEnd))
            """
                + (ipc.map { ipc in
                    """

                    through rouse-agent (in process, Unix socket, real handler process):
                      activate → granted     p50 \(String(format: "%.1f", ipc.roundTripP50Microseconds)) µs   p99 \(String(format: "%.1f", ipc.roundTripP99Microseconds)) µs   (n=\(ipc.roundTrips))
                      holder killed → others notified   \(ipc.deaths == 0 ? "not measured (--deaths 0)" : "p50 \(String(format: "%.2f", ipc.deathToNotificationP50Milliseconds)) ms   p99 \(String(format: "%.2f", ipc.deathToNotificationP99Milliseconds)) ms   (n=\(ipc.deaths))")
                    """
                } ?? "")
        }

        var json: String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        }
    }
}

/// The workload's generator: RouseAgentCore's SplitMix64, so a workload replays from its seed.
typealias BenchRandom = SplitMix64

extension SplitMix64 {
    /// A value in `0..<bound`.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
