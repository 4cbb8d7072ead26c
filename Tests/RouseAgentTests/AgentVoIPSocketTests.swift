import Foundation
import Glibc
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseClock
import RouseTestSupport
import Testing

/// The socket-woken half of iOS's VoIP model with the in-process agent and real handler processes
/// (`rouse-example-handler --voip-connect`): a TCP connection to a peer in the test is the handler's watched
/// signalling socket; keep-alives on the agent's manual clock.
@Suite(
    "rouse-agent: watched VoIP sockets and keep-alives with real handler processes", .serialized, .stopsWhatItStarts,
    .timeLimit(.minutes(3)))
struct AgentVoIPSocketTests {
    static let invite = "INVITE sip:bob@127.0.0.1 SIP/2.0\r\nCall-ID: c1\r\n\r\n"

    /// A harness with one handler `sip` connecting to `peer`, started by the user, its socket watched, suspended.
    static func suspendedHandler(
        mode: String, peer: VoIPPeer, arguments: [String] = [],
        configure: @escaping (inout HandlerRules) -> Void = { _ in }
    ) async throws -> AgentHarness {
        let harness = try await AgentHarness {
            try [
                AgentHarness.handler(
                    "sip", mode: mode, directory: $0, pushTypes: ["voip"],
                    arguments: ["--voip-connect", peer.target] + arguments, configure: configure)
            ]
        }
        try await harness.admin(.userControl(.init(handler: "sip", state: "started")))
        try await harness.waitForLine("sip", "voipSocket id=1 kind=stream")
        try await peer.accept()
        try await eventually("suspended") { await harness.handlerStatus("sip")?.state == "suspended" }
        return harness
    }

    @Test func aFrozenHandlerIsThawedByDataOnItsSocketAndReportsInTime() async throws {
        let peer = try VoIPPeer()
        let harness = try await Self.suspendedHandler(mode: "report", peer: peer) { $0.voipDeadline = .seconds(3) }
        peer.send(Self.invite)
        try await harness.waitForLine("sip", "reported wake=wake-1")
        let wake = harness.log("sip").first { $0.hasPrefix("wake id=wake-1") } ?? ""
        #expect(wake.contains("sockets=1 mustReport=true data=INVITE sip:bob@127.0.0.1 SIP/2.0"), "\(wake)")
        // The handler answered on its own socket: the agent took nothing from it.
        #expect(peer.read(until: "200 OK").contains("SIP/2.0 200 OK"))
        try await eventually("suspended again") { await harness.handlerStatus("sip")?.state == "suspended" }
        #expect(await harness.handlerStatus("sip")?.strikes == 0)
        #expect(await harness.agent.voipSocketCounters.wakes == 1)
        #expect(await harness.handlerStatus("sip")?.voip?.sockets == ["1:stream"])
        #expect(await harness.agent.status().voipSockets?.added == 1)
        // Not relaunched: the same process.
        #expect(!harness.log("sip").contains { $0.contains("launchReason=voipSocket") })
    }

    @Test func aHandlerThatDoesNotReportGetsAStrikeAndIsKilled() async throws {
        let peer = try VoIPPeer()
        let harness = try await Self.suspendedHandler(mode: "ignore", peer: peer)
        peer.send(Self.invite)
        try await harness.waitForLine("sip", "wake id=wake-1")
        try await eventually("a strike and the handler killed") {
            let status = await harness.handlerStatus("sip")
            return status?.strikes == 1 && status?.state == "notRunning"
        }
        #expect(!harness.log("sip").contains { $0.hasPrefix("reported") })
    }

    @Test func aGoneHandlerIsRelaunchedForDataAndGetsItsConnectionBack() async throws {
        let peer = try VoIPPeer()
        let harness = try await Self.suspendedHandler(mode: "report", peer: peer) { $0.voipDeadline = .seconds(5) }
        let pid = try #require(await harness.handlerStatus("sip")?.pid)
        kill(pid, SIGKILL)
        try await eventually("gone") { await harness.handlerStatus("sip")?.state == "notRunning" }
        peer.send(Self.invite)
        try await harness.waitForLine("sip", "reported wake=")
        let log = harness.log("sip")
        let relaunch = try #require(log.lastIndex { $0.hasPrefix("registered launchReason=voipSocket") }, "\(log)")
        let after = Array(log[relaunch...])
        #expect(after.contains { $0.hasPrefix("voipSocket id=1 kind=stream returned=true") }, "\(after)")
        #expect(after.contains { $0.contains("mustReport=true data=INVITE sip:bob@127.0.0.1") }, "\(after)")
        // The same connection: the relaunched process answers on the socket the peer holds.
        #expect(peer.read(until: "200 OK").contains("SIP/2.0 200 OK"))
        #expect(await harness.handlerStatus("sip")?.strikes == 0)
    }

    @Test func aPeerThatClosesIsToldAtTheNextWakeNotWokenFor() async throws {
        let peer = try VoIPPeer()
        let harness = try await Self.suspendedHandler(mode: "report", peer: peer)
        shutdown(peer.connection, Int32(SHUT_RDWR))
        try await eventually("closed counted") { await harness.agent.voipSocketCounters.closed == 1 }
        #expect(await harness.handlerStatus("sip")?.state == "suspended")
        // The next wake (a VoIP push) brings the one coalesced notice.
        try await harness.push("sip", type: "voip")
        try await harness.waitForLine("sip", "voipSocketChanged kind=closed sockets=1")
    }

    @Test func aConnectedUDPSocketWakesItsFrozenHandler() async throws {
        let peer = try UDPPeer()
        let harness = try await AgentHarness {
            try [
                AgentHarness.handler(
                    "sip", mode: "report", directory: $0, pushTypes: ["voip"],
                    arguments: ["--voip-connect", peer.target]
                ) { $0.voipDeadline = .seconds(3) }
            ]
        }
        try await harness.admin(.userControl(.init(handler: "sip", state: "started")))
        try await harness.waitForLine("sip", "voipSocket id=1 kind=datagram")
        #expect(peer.receiveHello()?.hasPrefix("REGISTER") == true)
        try await eventually("suspended") { await harness.handlerStatus("sip")?.state == "suspended" }
        peer.send(Self.invite)
        try await harness.waitForLine("sip", "reported wake=wake-1")
        #expect(peer.receiveHello()?.hasPrefix("SIP/2.0 200 OK") == true)
        #expect(await harness.handlerStatus("sip")?.strikes == 0)
    }

    @Test func onlyConnectedSocketsWithinTheBudgetAreWatched() async throws {
        let peer = try VoIPPeer()
        let harness = try await AgentHarness(
            handlers: { directory in
                let fifo = "\(directory)/sip.fifo"
                guard mkfifo(fifo, 0o600) == 0 else { throw FixtureError("mkfifo \(fifo): errno \(errno)") }
                return [
                    try AgentHarness.handler(
                        "sip", mode: "report", directory: directory, pushTypes: ["voip"],
                        arguments: ["--commands", fifo, "--voip-connect", peer.target]
                    ) { $0.suspendAfter = .seconds(60) }  // a frozen handler reads no command
                ]
            },
            configure: { _, configuration in configuration.voipSocketLimits.perHandler = 2 })
        try await harness.admin(.userControl(.init(handler: "sip", state: "started")))
        try await harness.waitForLine("sip", "voipSocket id=1 kind=stream")
        func command(_ line: String, expect prefix: String, count: Int = 1) async throws {
            let handle = try #require(FileHandle(forWritingAtPath: "\(harness.directory)/sip.fifo"))
            try handle.write(contentsOf: Data((line + "\n").utf8))
            try handle.close()
            try await harness.waitForLine("sip", prefix, count: count)
        }
        try await command("voipconnect \(peer.target)", expect: "voipSocket id=2 kind=stream")
        try await command(
            "voipconnect \(peer.target)",
            expect:
                "voipFailed error=tooManySockets detail=handler sip watches 2 sockets already (the most per handler)")
        try await command("voipoffer pipe", expect: "voipFailed error=badDescriptor detail=addVoIPSocket: not a socket")
        try await command(
            "voipoffer listen", expect: "voipFailed error=badDescriptor detail=addVoIPSocket: a listening socket")
        try await command(
            "voipoffer unconnected", expect: "voipFailed error=badDescriptor detail=addVoIPSocket: not connected")
        let counters = await harness.agent.voipSocketCounters
        #expect(counters.added == 2 && counters.refusedTooMany == 1 && counters.refusedBadDescriptor == 3)
        #expect(await harness.handlerStatus("sip")?.voip?.sockets == ["1:stream", "2:stream"])
    }

    @Test func aKeepAliveBelowSixHundredSecondsIsRefusedPrecisely() async throws {
        let harness = try await AgentHarness {
            try [AgentHarness.handler("sip", mode: "report", directory: $0, arguments: ["--keep-alive", "300"])]
        }
        try await harness.admin(.userControl(.init(handler: "sip", state: "started")))
        try await harness.waitForLine("sip", "keepAliveFailed")
        let line = harness.log("sip").first { $0.hasPrefix("keepAliveFailed") } ?? ""
        #expect(
            line.contains(
                "error=keepAliveTooShort detail=keep-alive interval 300.0 s is below the minimum of 600 s"), "\(line)")
    }

    @Test func aKeepAliveThawsTheHandlerAtItsIntervalForItsBudgetThenFreezesIt() async throws {
        let harness = try await AgentHarness(
            handlers: {
                try [
                    AgentHarness.handler("sip", mode: "report", directory: $0, arguments: ["--keep-alive", "600"]) {
                        $0.keepAliveBudget = .seconds(10)
                    }
                ]
            },
            configure: { _, configuration in configuration.clock = AgentHarness.manualClock() })
        try await harness.admin(.userControl(.init(handler: "sip", state: "started")))
        try await harness.waitForLine("sip", "keepAliveSet seconds=600")
        #expect(await harness.handlerStatus("sip")?.voip?.keepAliveSeconds == 600)
        try await harness.advance(by: .seconds(1))
        try await eventually("suspended") { await harness.handlerStatus("sip")?.state == "suspended" }
        // Nothing before the tolerance (a tenth of the interval) opens.
        try await harness.advance(by: .seconds(500))
        #expect(!harness.log("sip").contains { $0.hasPrefix("keepAlive id=") })
        #expect(await harness.agent.keepAliveCounts.timerWakes == 0)
        try await harness.advance(by: .seconds(100))
        try await harness.waitForLine("sip", "keepAlive id=keepalive-1 seconds=10.0")
        #expect(await harness.handlerStatus("sip")?.state == "background")
        try await harness.advance(by: .seconds(5))
        #expect(await harness.handlerStatus("sip")?.state == "background")
        try await harness.advance(by: .seconds(5))
        try await eventually("frozen again after the budget") {
            await harness.handlerStatus("sip")?.state == "suspended"
        }
        #expect(await harness.agent.keepAliveCounts == (runs: 1, timerWakes: 1))
    }

    @Test func threeHandlersKeptAliveCostOneWakeUpPerInterval() async throws {
        let names = ["sip-a", "sip-b", "sip-c"]
        let harness = try await AgentHarness(
            handlers: { directory in
                try names.map { name in
                    try AgentHarness.handler(
                        name, mode: "report", directory: directory, pushTypes: ["voip"],
                        arguments: ["--keep-alive", "600", "--keep-alive-done"])
                }
            },
            configure: { _, configuration in configuration.clock = AgentHarness.manualClock() })
        // Started 20 s apart: their due times differ.
        for name in names {
            try await harness.admin(.userControl(.init(handler: name, state: "started")))
            try await harness.waitForLine(name, "keepAliveSet")
            try await harness.advance(by: .seconds(20))
        }
        // One step of the manual clock, then the real handler processes answer what it woke them for before the next
        // step can freeze them again.
        func step() async throws {
            try await harness.advance(by: .seconds(30))
            let runs = await harness.agent.keepAliveCounts.runs
            try await eventually("every keep-alive answered (\(runs))") {
                names.map { name in harness.log(name).filter { $0.hasPrefix("keepAliveDone id=") }.count }
                    .reduce(0, +) == runs
            }
        }
        // The first round may take two wake-ups (the grid aligns them); from then on one per interval.
        for _ in 0..<44 { try await step() }
        for name in names { try await harness.waitForLine(name, "keepAliveDone id=", count: 2) }
        let before = await harness.agent.keepAliveCounts
        for _ in 0..<20 { try await step() }
        for name in names { try await harness.waitForLine(name, "keepAliveDone id=", count: 3) }
        let after = await harness.agent.keepAliveCounts
        #expect(after.runs - before.runs == 3)
        #expect(after.timerWakes - before.timerWakes == 1, "before \(before), after \(after)")
        for name in names {
            try await eventually("\(name) suspended") { await harness.handlerStatus(name)?.state == "suspended" }
        }
    }
}
