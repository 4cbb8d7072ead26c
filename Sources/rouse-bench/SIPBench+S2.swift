import Foundation
import RouseAgent
import RouseAgentClient
import RouseChildProcess
import RouseClock
import RouseSIPLab

/// S2 of `rouse-bench sip`: the socket-woken softphone. Its handler (`deploy/sip/rouse-sip-bridge.py`, Python) owns
/// the phone's TCP connection to Kamailio, hands it to `rouse-agent` as its watched VoIP socket and relays SIP
/// between it and baresip; between calls the handler and baresip are frozen, and each INVITE on the connection
/// wakes them.
extension SIPBench {
    /// What S2 measured.
    struct SocketWoken {
        /// The calls' INVITE → 200 OK.
        var run: SIPCallRun
        /// Calls that found the phone frozen (the `voipSocketWake`s the handler got during the calls).
        var wakes: Int
        /// The agent's voluntary context switches over the idle window, per minute.
        var idleWakeUpsPerMinute: Double
        /// The same without the keep-alive's: those within ``keepAliveMargin`` of a keep-alive re-REGISTER the
        /// handler logged (the agent's timer, the thaw, the handler's frames, the freeze after it).
        var idleWakeUpsBeyondKeepAlivePerMinute: Double
        /// Keep-alive re-REGISTERs in the idle window, and the wake-ups counted as theirs.
        var keepAlives: Int
        var keepAliveWakeUps: Int
        /// The wake-ups beyond the keep-alive, by thread name, most first.
        var beyondByThread: [(name: String, count: Int)]
        /// When they came: seconds into the idle window, with how many.
        var beyondAt: [(seconds: Double, count: Int)]
        /// The idle window.
        var idleSeconds: Int
        /// Whether the phone was still registered at the end of the idle window.
        var registeredAfterIdle: Bool
    }

    /// The handler file of the S2 handler (`name`, started by the user: `rouse agent start`).
    static func socketWokenHandlerFile(lab: SIPLab, clients: String, log: String) -> String {
        let command = lab.bridgeCommand(log: log, name: "phone-s2")
        return """
            topic = "com.example.s2"
            command = [\(command.map { "\"\($0)\"" }.joined(separator: ", "))]
            push-types = ["voip"]
            allow-root = true
            environment = ["PYTHONPATH=\(clients)/python"]

            """
    }

    /// Starts the S2 handler (its baresip registers over TCP), waits until it is frozen, places `calls` calls one at
    /// a time, each once the phone is frozen again, then counts the agent's wake-ups over `idleSeconds` with the
    /// registered phone frozen.
    static func socketWoken(
        lab: SIPLab, agent: pid_t, socket: String, log: String, calls: Int, idleSeconds: Int,
        status: () async throws -> AgentStatus?
    ) async throws -> SocketWoken {
        let client = try AgentClient(socketPath: socket)
        defer { client.close() }
        try client.send(.userControl(.init(handler: "phone-s2", state: "started")))
        try await SIPLab.until("the S2 phone registered over TCP", timeout: .seconds(30)) { try await lab.registered() }
        func frozen() async throws {
            try await SIPLab.until("the S2 phone frozen", timeout: .seconds(30)) {
                try await status()?.handlers.first { $0.name == "phone-s2" }?.state == "suspended"
            }
        }
        func wakes() -> Int {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
                .filter { $0.contains(#""event": "wake""#) }.count
        }
        let before = wakes()
        var answered: [Double] = []
        var sippFailures = 0
        for call in 1...calls {
            try await frozen()
            let run = try await lab.calls("s2-\(call)", count: 1, period: .milliseconds(100))
            answered += run.answeredMilliseconds
            if run.sippStatus != 0 { sippFailures += 1 }
        }
        let woken = wakes() - before
        try await frozen()
        let start = SystemClock().wallMilliseconds
        let timeline = try await ProcessProbe.wakeTimeline(
            agent, over: .seconds(Int64(idleSeconds)), voluntaryOnly: true)
        let keepAlives = reRegistered(log: log, from: start)
        let split = splitByKeepAlive(timeline, keepAlives: keepAlives)
        let minutes = Double(idleSeconds) / 60
        let beyond = split.beyond.reduce(0) { $0 + $1.count }
        return SocketWoken(
            run: SIPCallRun(
                tag: "s2", attempted: calls, answeredMilliseconds: answered, sippStatus: Int32(sippFailures),
                sippOutput: ""),
            wakes: woken, idleWakeUpsPerMinute: Double(split.keepAlive + beyond) / minutes,
            idleWakeUpsBeyondKeepAlivePerMinute: Double(beyond) / minutes,
            keepAlives: keepAlives.count, keepAliveWakeUps: split.keepAlive,
            beyondByThread: split.byThread.sorted { $0.value > $1.value }.map { ($0.key, $0.value) },
            beyondAt: split.beyond.map { (Double($0.wallMilliseconds - start) / 1000, $0.count) },
            idleSeconds: idleSeconds, registeredAfterIdle: try await lab.registered())
    }

    /// How far from a keep-alive's re-REGISTER (logged when its 200 came) a wake-up still counts as the keep-alive's:
    /// the agent's timer and the thaw come before it, the handler's `keepAliveDone` and the freeze (1 s idle) after.
    static let keepAliveMargin: Int64 = 5_000

    /// The wall-clock times (ms) of the keep-alive re-REGISTERs the S2 handler logged from `from` on.
    static func reRegistered(log: String, from: Int64) -> [Int64] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { line in
            guard line.contains(#""event": "reRegistered""#),
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let t = (object["t"] as? NSNumber)?.doubleValue
            else { return nil }
            let milliseconds = Int64(t)
            return milliseconds >= from - keepAliveMargin ? milliseconds : nil
        }
    }

    /// The timeline's wake-ups split into the keep-alives' (within ``keepAliveMargin`` of one: how many) and the
    /// rest (the samples, and by thread name).
    static func splitByKeepAlive(
        _ timeline: [ProcessProbe.WakeSample], keepAlives: [Int64]
    ) -> (keepAlive: Int, beyond: [ProcessProbe.WakeSample], byThread: [String: Int]) {
        var keepAlive = 0
        var beyond: [ProcessProbe.WakeSample] = []
        var byThread: [String: Int] = [:]
        for sample in timeline {
            if keepAlives.contains(where: { abs($0 - sample.wallMilliseconds) <= keepAliveMargin }) {
                keepAlive += sample.count
            } else {
                beyond.append(sample)
                byThread.merge(sample.threads) { $0 + $1 }
            }
        }
        return (keepAlive, beyond, byThread)
    }
}
