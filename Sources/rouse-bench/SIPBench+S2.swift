import Foundation
import RouseAgent
import RouseAgentClient
import RouseChildProcess
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
        let switches = try await ProcessProbe.wakeUps(agent, over: .seconds(Int64(idleSeconds)), voluntaryOnly: true)
        return SocketWoken(
            run: SIPCallRun(
                tag: "s2", attempted: calls, answeredMilliseconds: answered, sippStatus: Int32(sippFailures),
                sippOutput: ""),
            wakes: woken, idleWakeUpsPerMinute: Double(switches) * 60 / Double(idleSeconds), idleSeconds: idleSeconds,
            registeredAfterIdle: try await lab.registered())
    }
}
