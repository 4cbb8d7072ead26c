import Foundation
import Logging
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseClock
import RouseDBus
import RouseState
import RouseSystem
import RouseTestSupport
import RouseWire
import Testing

/// logind's lock drives the key ring: a handler is told, `complete` files become unreadable once the grace ends,
/// and come back on unlock, the two events in order. logind is python3-dbusmock's on a private dbus-daemon.
@Suite(.stopsWhatItStarts, .serialized, .timeLimit(.minutes(2)))
struct AgentSessionLockTests {
    struct Rig {
        let agent: Agent
        let persistence: AgentPersistence
        let clock: ManualClock
        let control: DBusConnection
        let sessionPath: String
        let directory: String

        /// logind's session method `member` (the mock emits `Lock`/`Unlock`, sets `LockedHint`).
        func session(_ member: String, _ arguments: [DBusValue] = []) async throws {
            _ = try await control.call(
                destination: Logind.name, path: sessionPath, interface: "org.freedesktop.login1.Session",
                member: member, arguments: arguments)
        }

        /// The handler's protected store, opened with the agent's own key ring.
        var store: SealedStore {
            get throws {
                try SealedStore(
                    directory: directory + "/state/protected/phone", keys: persistence.ring,
                    logger: Logger(label: "test"))
            }
        }
    }

    static func rig(lockedAtStart: Bool) async throws -> Rig {
        let lab = try await DBusLab.start()
        let control = try await lab.connect()
        try await lab.startMock(template: "logind", busName: Logind.name, on: control)
        let added = try await control.call(
            destination: Logind.name, path: Logind.managerPath, interface: "org.freedesktop.DBus.Mock",
            member: "AddSession",
            arguments: [.string("c1"), .string("seat0"), .uint32(Sys.uid), .string("me"), .boolean(true)])
        let sessionPath = try #require(added.first?.string)
        if lockedAtStart {
            _ = try await control.call(
                destination: Logind.name, path: sessionPath, interface: "org.freedesktop.login1.Session",
                member: "SetLockedHint", arguments: [.boolean(true)])
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-session-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var logger = Logger(label: "rouse.agent.test")
        logger.logLevel = ProcessInfo.processInfo.environment["ROUSE_TEST_LOG"] == nil ? .critical : .debug
        let persistence = try AgentPersistence(
            stateDirectory: directory + "/state", keyDirectory: directory + "/keys", preference: .keyFile,
            logger: logger, startsUnlocked: false)
        var configuration = AgentConfiguration(
            endpoint: GatewayEndpoint(baseURL: "https://127.0.0.1:9", caFile: Repository.cert("ca.pem")),
            socketPath: directory + "/agent.sock",
            handlers: [
                HandlerConfiguration(
                    // The test process registers as the handler itself: its executable is the handler's.
                    name: "phone", topic: "com.example.phone",
                    command: [try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")],
                    pushTypes: ["voip"],
                    allowRoot: true, rules: HandlerRules())
            ])
        configuration.assumeReachable = true
        let clock = ManualClock(wallMilliseconds: SystemClock().wallMilliseconds)
        configuration.clock = clock
        configuration.session = SessionIntegration(systemBus: .address(lab.address), uid: Sys.uid)
        let agent = try Agent(
            configuration: configuration,
            store: SealedAgentStateStore(store: persistence.secrets, legacyPath: nil, logger: logger),
            persistence: persistence, logger: logger)
        try await agent.start()
        TestScope.current?.onEnd {
            await agent.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }
        try await eventually("the session's lock state read") { await agent.sessionPhase != nil }
        return Rig(
            agent: agent, persistence: persistence, clock: clock, control: control, sessionPath: sessionPath,
            directory: directory)
    }

    /// A handler registered over the socket path; its events (not answers) arrive on the returned iterator.
    static func handler(_ rig: Rig) async throws -> (AgentClient, AsyncStream<AgentEvent>.Iterator) {
        let client = try AgentClient(socketPath: rig.directory + "/agent.sock")
        try client.register(handler: "phone")
        var iterator = client.messages.makeAsyncIterator()
        var first: [String] = []
        while let event = await iterator.next() {
            if case .registered = event { return (client, iterator) }
            first.append(event.type)
            if first.count > 10 { break }
        }
        throw FixtureError("no registered, got \(first)")
    }

    /// The next `protectedData` event (others, such as reachability, skipped).
    static func nextProtected(_ events: inout AsyncStream<AgentEvent>.Iterator) async -> AgentEvent? {
        while let event = await events.next() {
            if case .protectedData = event { return event }
        }
        return nil
    }

    static func base64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }

    @Test func lockTellsTheHandlerThenDropsTheCompleteKeyAndUnlockBringsItBack() async throws {
        let rig = try await Self.rig(lockedAtStart: false)
        #expect(await rig.agent.sessionPhase == .unlocked)
        let (client, iterator) = try await Self.handler(rig)
        var events = iterator
        defer { client.close() }
        let written = try await client.request(
            .protectedFile(.init(op: .write, name: "call-log", protection: "complete", data: Self.base64("alice"))))
        #expect(written == .protectedFileReply(.init(name: "call-log", protection: "complete")))
        _ = try await client.request(
            .protectedFile(.init(op: .write, name: "settings", protection: "until-first-unlock", data: "AA==")))

        try await rig.session("Lock")
        #expect(
            await Self.nextProtected(&events)
                == .protectedData(.init(state: .willBecomeUnavailable, graceMilliseconds: 500)))
        // Within the grace the key is still there (the handler finishes its writes).
        rig.clock.advance(by: .milliseconds(499))
        await rig.agent.settleSessionTimer()
        #expect(try rig.store.read(name: "call-log", kind: "protected-file") == Array("alice".utf8))
        rig.clock.advance(by: .milliseconds(1))
        try await eventually("complete key dropped") { await rig.agent.sessionPhase == .locked }
        // Unreadable through the agent's own ring, and refused to the handler; other classes stay readable.
        #expect(throws: StateError.self) { try rig.store.read(name: "call-log", kind: "protected-file") }
        do {
            _ = try await client.request(.protectedFile(.init(op: .read, name: "call-log")))
            Issue.record("a complete file was read while locked")
        } catch let error as AgentRequestError {
            #expect(error.code == "protectedDataUnavailable")
        }
        let settings = try await client.request(.protectedFile(.init(op: .read, name: "settings")))
        #expect(settings == .protectedFileReply(.init(name: "settings", data: "AA==")))
        // LockedHint arriving after the signal is the same lock: nothing more is said.
        try await rig.session("SetLockedHint", [.boolean(true)])

        try await rig.session("Unlock")
        #expect(await Self.nextProtected(&events) == .protectedData(.init(state: .didBecomeAvailable)))
        let read = try await client.request(.protectedFile(.init(op: .read, name: "call-log")))
        #expect(read == .protectedFileReply(.init(name: "call-log", data: Self.base64("alice"))))
        // The client library's calls: re-class to none (readable while locked), then remove.
        try await client.reclassProtected("call-log", protection: "none")
        try await rig.session("Lock")
        #expect(
            await Self.nextProtected(&events)
                == .protectedData(.init(state: .willBecomeUnavailable, graceMilliseconds: 500)))
        rig.clock.advance(by: .milliseconds(500))
        try await eventually("locked again") { await rig.agent.sessionPhase == .locked }
        #expect(try await client.readProtected("call-log") == Array("alice".utf8))
        await #expect(throws: AgentRequestError.self) {
            try await client.writeProtected("diary", Array("x".utf8), protection: "complete")
        }
        try await client.removeProtected("call-log")
        await #expect(throws: AgentRequestError.self) { _ = try await client.readProtected("call-log") }
    }

    /// An agent started in a locked session holds `until-first-unlock` and `complete` keys back until the unlock.
    @Test func aSessionLockedAtStartKeepsClassesBackUntilTheFirstUnlock() async throws {
        let rig = try await Self.rig(lockedAtStart: true)
        #expect(await rig.agent.sessionPhase == .locked)
        #expect(!rig.persistence.ring.protection.isAvailable(.untilFirstUnlock))
        try await rig.session("SetLockedHint", [.boolean(false)])
        try await eventually("unlocked") { await rig.agent.sessionPhase == .unlocked }
        #expect(rig.persistence.ring.protection.isAvailable(.untilFirstUnlock))
        #expect(rig.persistence.ring.protection.isAvailable(.complete))
    }

    /// Names and bodies a handler could abuse are refused with a precise code.
    @Test func badProtectedFileRequestsAreRefused() async throws {
        let rig = try await Self.rig(lockedAtStart: false)
        let (client, _) = try await Self.handler(rig)
        defer { client.close() }
        for request in [
            AgentRequest.ProtectedFile(op: .write, name: "../escape", protection: "none", data: "AA=="),
            AgentRequest.ProtectedFile(op: .write, name: ".hidden", protection: "none", data: "AA=="),
            AgentRequest.ProtectedFile(op: .write, name: "x", protection: "secret", data: "AA=="),
            AgentRequest.ProtectedFile(op: .write, name: "x", protection: "none", data: "not base64!"),
        ] {
            do {
                _ = try await client.request(.protectedFile(request))
                Issue.record("accepted \(request)")
            } catch let error as AgentRequestError {
                #expect(error.code == "badRequest")
            }
        }
        do {
            _ = try await client.request(.protectedFile(.init(op: .read, name: "missing")))
            Issue.record("read a missing file")
        } catch let error as AgentRequestError {
            #expect(error.code == "notFound")
        }
    }
}
