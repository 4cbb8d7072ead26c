import Foundation
import RouseAgent
import RouseAgentCore
import RouseTestSupport
import Testing

/// The freeze-time rules with real handler processes: where a handler's background time ends (the manual clock moves
/// past `suspend-after`), `exits-on-suspend`, a listening socket under each policy and a lock on a declared exclusive
/// file decide between freezing it and terminating it. Each handler is the example handler started by `sh`, which
/// first starts a Python child (`HeldResourceProbeTests.holder`) inside the handler's cgroup: what the child holds is
/// the handler's.
@Suite("Freeze-time rules with real handlers", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentFreezeRulesTests {
    /// Example handler `name` whose `sh` first starts the holder with `modes` (none: no holder).
    static func handler(
        _ name: String, _ directory: String, _ modes: [String], _ configure: (inout FreezeRules) -> Void = { _ in }
    ) throws -> HandlerConfiguration {
        var configuration = try AgentHarness.handler(name, mode: "report", directory: directory)
        if !modes.isEmpty {
            if !FileManager.default.fileExists(atPath: directory + "/holder.py") {
                try Data(HeldResourceProbeTests.holder.utf8).write(to: URL(fileURLWithPath: directory + "/holder.py"))
            }
            let holder =
                "\(HeldResourceProbeTests.python) \(directory)/holder.py \(directory)/\(name).ready "
                + "\(directory)/\(name).lock \(modes.joined(separator: " "))"
            configuration.command = ["/bin/sh", "-c", holder + " & exec \"$@\"", "sh"] + configuration.command
        }
        configure(&configuration.freeze)
        return configuration
    }

    /// A harness on the manual clock with `handlers`, each started by the user and registered (the holders of
    /// `holders` ready).
    static func started(
        holders: Set<String> = [], _ handlers: @escaping (String) throws -> [HandlerConfiguration]
    ) async throws -> AgentHarness {
        let harness = try await AgentHarness(
            handlers: handlers, configure: { _, configuration in configuration.clock = AgentHarness.manualClock() })
        for name in await harness.agent.status().handlers.map(\.name) {
            try await harness.startHandler(name)
            // The handler logs its registration before the agent has taken it: wait for the agent's side.
            try await eventually("\(name) registered in the background") {
                let status = await harness.handlerStatus(name)
                return status?.connected == true && status?.state == "background"
            }
            if holders.contains(name) {
                let ready = harness.directory + "/\(name).ready"
                try await eventually("\(name)'s holder ready") { FileManager.default.fileExists(atPath: ready) }
            }
        }
        return harness
    }

    @Test func exitsOnSuspendTerminatesWhereItWouldBeFrozen() async throws {
        let harness = try await Self.started { directory in
            [
                try Self.handler("quits", directory, []) { $0.exitsOnSuspend = true },
                try Self.handler("stays", directory, []),
            ]
        }
        try await harness.advance(by: .seconds(1))
        try await eventually("quits terminated") { await harness.handlerStatus("quits")?.state == "notRunning" }
        #expect(await harness.handlerStatus("stays")?.state == "suspended")
        let counters = await harness.agent.status().freeze
        #expect(counters?.exitsOnSuspend == 1)
        #expect(counters?.exclusiveResource == 0 && counters?.listeningSockets == 0)
    }

    @Test func listeningSocketsAreReportedOrEndTheHandlerPerItsPolicy() async throws {
        let harness = try await Self.started(holders: ["ends", "reports"]) { directory in
            [
                try Self.handler("ends", directory, ["listen"]) { $0.listeningSockets = .terminate },
                try Self.handler("reports", directory, ["listen"]),
            ]
        }
        let ready = try String(contentsOfFile: harness.directory + "/reports.ready", encoding: .utf8)
        let tcp = try #require(ready.split(separator: "\n").first { $0.hasPrefix("tcp ") }?.dropFirst(4))
        try await harness.advance(by: .seconds(1))
        try await eventually("ends terminated") { await harness.handlerStatus("ends")?.state == "notRunning" }
        let reports = await harness.handlerStatus("reports")
        #expect(reports?.state == "suspended")
        #expect(reports?.listeningSockets?.contains("tcp 127.0.0.1:\(tcp)") == true, "\(String(describing: reports))")
        #expect(reports?.listeningSockets?.contains("unix \(harness.directory)/reports.ready.sock") == true)
        let counters = await harness.agent.status().freeze
        #expect(counters?.listeningSockets == 1)
        #expect(counters?.listeningSocketsReported == 1)
    }

    @Test func aLockOnADeclaredExclusiveFileEndsTheHandlerInsteadOfFreezingIt() async throws {
        let harness = try await Self.started(holders: ["locker", "opener"]) { directory in
            [
                try Self.handler("locker", directory, ["flock"]) { $0.exclusiveFiles = [directory + "/locker.lock"] },
                try Self.handler("opener", directory, ["open"]) { $0.exclusiveFiles = [directory + "/opener.lock"] },
            ]
        }
        try await harness.advance(by: .seconds(1))
        try await eventually("locker terminated") { await harness.handlerStatus("locker")?.state == "notRunning" }
        #expect(await harness.handlerStatus("opener")?.state == "suspended")
        let counters = await harness.agent.status().freeze
        #expect(counters?.exclusiveResource == 1)
        #expect(counters?.exitsOnSuspend == 0)
    }
}
