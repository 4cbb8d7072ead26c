import Foundation
import Logging
import RouseAgent
import RouseAgentClient
import RouseChildProcess
import RouseClock
import RouseDBus
import RouseHTTP2
import RouseState
import RouseSystem
import RouseTestSupport
import Synchronization
import Testing

/// Notifications (issue 27) on a real dbus-daemon with python3-dbusmock's `notification_daemon` standing in for the
/// desktop's server: alert pushes are shown, not launched, a collapse id replaces, a click launches the handler with
/// the response; local notifications are kept across an agent restart, fire on the manual clock, and a 65th is
/// refused.
@Suite(.serialized, .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentNotificationTests {
    static let path = "/org/freedesktop/Notifications"
    static let mockInterface = "org.freedesktop.DBus.Mock"

    /// The `Notify` calls the mock recorded, each as its eight arguments.
    static func notifyCalls(_ control: DBusConnection) async throws -> [[DBusValue]] {
        let calls = try await control.call(
            destination: Notifications.name, path: path, interface: mockInterface, member: "GetMethodCalls",
            arguments: [.string("Notify")])
        return (calls.first?.elements ?? []).map { call in (call.fields?.last?.elements ?? []).map(\.unwrapped) }
    }

    /// The server reports a click (`ActionInvoked`) on notification `id`.
    static func click(_ control: DBusConnection, _ id: UInt32, action: String = "default") async throws {
        _ = try await control.call(
            destination: Notifications.name, path: path, interface: mockInterface, member: "EmitSignal",
            arguments: [
                .string(Notifications.name), .string("ActionInvoked"), .string("us"),
                .array(element: "v", [.variant(.uint32(id)), .variant(.string(action))]),
            ])
    }

    /// A private bus with the mock notification server; the watcher connection drives it.
    static func lab() async throws -> (DBusLab, DBusConnection) {
        let lab = try await DBusLab.start()
        let control = try await lab.connect()
        try await lab.startMock(template: "notification_daemon", busName: Notifications.name, on: control)
        return (lab, control)
    }

    static func integration(_ lab: DBusLab) -> SessionIntegration {
        // No logind on this bus: the session counts as unlocked (logged), nothing waits for a first unlock.
        var integration = SessionIntegration(systemBus: .address(lab.address), uid: Sys.uid)
        integration.holdUntilFirstUnlock = false
        integration.notificationBus = .address(lab.address)
        return integration
    }

    /// An alert push through the harness's provider, with `apns-collapse-id` when given.
    static func alert(
        _ harness: AgentHarness, payload: String, apnsID: String, collapseID: String? = nil
    ) async throws {
        let topic = "com.example.alerts"
        var headers = [
            HTTP2Header("authorization", "bearer \(harness.provider.jwt)", neverIndex: true),
            HTTP2Header("apns-id", apnsID), HTTP2Header("apns-topic", topic), HTTP2Header("apns-push-type", "alert"),
        ]
        if let collapseID { headers.append(HTTP2Header("apns-collapse-id", collapseID)) }
        let request = HTTP2ClientRequest(
            path: "/3/device/\(try await harness.token(topic))", authority: "localhost", headers: headers,
            body: Array(payload.utf8))
        guard case .response(200, _, _) = await harness.provider.client.send(request) else {
            throw FixtureError("the gateway refused the alert push")
        }
    }

    @Test func anAlertPushIsShownNotLaunchedReplacedByItsCollapseIDAndAClickLaunchesTheHandler() async throws {
        let (lab, control) = try await Self.lab()
        let harness = try await AgentHarness(
            handlers: { try [AgentHarness.handler("alerts", mode: "report", directory: $0, pushTypes: ["alert"])] },
            configure: { _, configuration in configuration.session = Self.integration(lab) })
        try await eventually("the notification server followed") { await harness.agent.notificationsFollowed }

        let first =
            #"{"aps":{"alert":{"title":"Alice","subtitle":"Lunch","body":"At noon?"},"sound":"ping.caf","#
            + #""thread-id":"chat-7","interruption-level":"time-sensitive"},"chat":7}"#
        let firstID = "11111111-1111-1111-1111-111111111111"
        try await Self.alert(harness, payload: first, apnsID: firstID, collapseID: "chat-7")
        try await eventually("shown") { try await Self.notifyCalls(control).count == 1 }
        try await eventually("acknowledged once shown") { try harness.pending() == 0 }
        let shown = try #require(try await Self.notifyCalls(control).first)
        #expect(shown[0] == .string("alerts"))
        #expect(shown[1] == .uint32(0))
        #expect(shown[3] == .string("Alice"))
        #expect(shown[4] == .string("Lunch\nAt noon?"))
        let hints = try #require(shown[6].stringKeyed)
        #expect(hints["sound-name"] == .string("ping"))
        #expect(hints["category"] == .string("chat-7"))
        #expect(hints["urgency"] == .byte(2))
        #expect(harness.log("alerts").isEmpty, "an alert push launched its handler")

        // The same collapse id replaces the shown notification (the mock's first id is 1).
        let second = #"{"aps":{"alert":"Make it 1pm","interruption-level":"passive"},"chat":7}"#
        let secondID = "22222222-2222-2222-2222-222222222222"
        try await Self.alert(harness, payload: second, apnsID: secondID, collapseID: "chat-7")
        try await eventually("shown again") { try await Self.notifyCalls(control).count == 2 }
        let replacing = try await Self.notifyCalls(control)[1]
        #expect(replacing[1] == .uint32(1), "the collapse id did not replace the shown notification")
        #expect(replacing[4] == .string("Make it 1pm"))
        #expect(replacing[6].stringKeyed?["urgency"] == .byte(0))

        // Offered again (same apns-id), it is acknowledged and not shown twice (the de-duplication window).
        try await Self.alert(harness, payload: second, apnsID: secondID, collapseID: "chat-7")
        try await eventually("the duplicate acknowledged") { try harness.pending() == 0 }
        #expect(try await Self.notifyCalls(control).count == 2, "a push shown already was shown again")
        #expect(harness.log("alerts").isEmpty)

        // A click on notification 1 (now the second push) launches the handler with the response.
        try await Self.click(control, 1)
        try await harness.waitForLine("alerts", "registered launchReason=notificationResponse")
        let payload = Data(second.utf8).base64EncodedString()
        try await harness.waitForLine(
            "alerts", "notificationResponse id=\(secondID) source=push action=default payload=\(payload)")
        // A click on a notification that is not ours (another program's id) does nothing.
        try await Self.click(control, 99)
        #expect(await harness.agent.status().notifications?.shown == 2)
    }

    /// An alert push with no notification server on the bus goes to its handler, as before.
    @Test func withoutAServerAnAlertPushGoesToItsHandler() async throws {
        let lab = try await DBusLab.start()
        let harness = try await AgentHarness(
            handlers: { try [AgentHarness.handler("alerts", mode: "report", directory: $0, pushTypes: ["alert"])] },
            configure: { _, configuration in configuration.session = Self.integration(lab) })
        try await Self.alert(
            harness, payload: #"{"aps":{"alert":"hi"}}"#, apnsID: "33333333-3333-3333-3333-333333333333")
        try await harness.waitForLine("alerts", "registered launchReason=backgroundPush")
        #expect(await harness.agent.status().notifications?.fallbacks == 1)
    }

    // MARK: Local notifications

    struct Rig {
        let directory: String
        let clock: ManualClock
        let integration: SessionIntegration
        let logger: Logger

        /// An agent on the rig's directory; stopped when the test ends unless `stop` is false (the test stops it).
        func agent(stop: Bool = true) async throws -> Agent {
            let persistence = try AgentPersistence(
                stateDirectory: directory + "/state", keyDirectory: directory + "/keys", preference: .keyFile,
                logger: logger, startsUnlocked: true)
            var configuration = AgentConfiguration(
                endpoint: GatewayEndpoint(baseURL: "https://127.0.0.1:9", caFile: Repository.cert("ca.pem")),
                socketPath: directory + "/agent.sock",
                handlers: [
                    HandlerConfiguration(
                        // The test process registers as the handler itself: its executable is the handler's.
                        name: "clock", topic: "com.example.clock",
                        command: [try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")],
                        pushTypes: ["alert"], allowRoot: true, rules: HandlerRules()),
                    // The Python client's test runs python3 as this handler.
                    HandlerConfiguration(
                        name: "py", topic: "com.example.py", command: ["/usr/bin/python3"], pushTypes: ["alert"],
                        allowRoot: true, rules: HandlerRules()),
                ])
            configuration.assumeReachable = true
            configuration.clock = clock
            configuration.session = integration
            let agent = try Agent(
                configuration: configuration,
                store: SealedAgentStateStore(store: persistence.secrets, legacyPath: nil, logger: logger),
                persistence: persistence, logger: logger)
            try await agent.start()
            if stop { TestScope.current?.onEnd { await agent.shutdown() } }
            try await eventually("the notification server followed") { await agent.notificationsFollowed }
            return agent
        }

        func handler() async throws -> (AgentClient, AsyncStream<AgentEvent>.Iterator) {
            let client = try AgentClient(socketPath: directory + "/agent.sock")
            try client.register(handler: "clock")
            var iterator = client.messages.makeAsyncIterator()
            while let event = await iterator.next() {
                if case .registered = event { return (client, iterator) }
            }
            throw FixtureError("the agent closed the connection before registered")
        }
    }

    static func rig(_ lab: DBusLab) throws -> Rig {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-notify-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        TestScope.current?.onEnd { try? FileManager.default.removeItem(atPath: directory) }
        var logger = Logger(label: "rouse.agent.test")
        logger.logLevel = ProcessInfo.processInfo.environment["ROUSE_TEST_LOG"] == nil ? .critical : .debug
        return Rig(
            directory: directory, clock: ManualClock(wallMilliseconds: SystemClock().wallMilliseconds),
            integration: integration(lab), logger: logger)
    }

    @Test func aLocalNotificationSurvivesARestartFiresAtItsTimeAndAClickReachesTheHandler() async throws {
        let (lab, control) = try await Self.lab()
        let rig = try Self.rig(lab)
        let first = try await rig.agent(stop: false)
        let stopped = Mutex(false)
        TestScope.current?.onEnd { if !stopped.withLock({ $0 }) { await first.shutdown() } }
        let (client, _) = try await rig.handler()
        let scheduled = try await client.scheduleNotification(
            LocalNotification(
                identifier: "standup", title: "Stand-up", body: "In the small room", sound: "default",
                threadID: "meetings", interruptionLevel: "active", userInfo: #"{"room":4}"#, afterSeconds: 120))
        #expect(scheduled.fireAt == rig.clock.wallMilliseconds + 120_000)
        #expect(try await client.pendingNotifications().map(\.identifier) == ["standup"])
        client.close()
        await first.shutdown()
        stopped.withLock { $0 = true }

        // A new agent on the same sealed state: the notification is still pending, and fires at its time only.
        let second = try await rig.agent()
        #expect(await second.pendingLocalNotifications == 1)
        rig.clock.advance(by: .seconds(119))
        await second.settleNotificationTimer()
        #expect(try await Self.notifyCalls(control).isEmpty, "fired before its time")
        rig.clock.advance(by: .seconds(1))
        try await eventually("fired") { try await Self.notifyCalls(control).count == 1 }
        #expect(await second.pendingLocalNotifications == 0)
        let shown = try await Self.notifyCalls(control)[0]
        #expect(shown[0] == .string("clock"))
        #expect(shown[3] == .string("Stand-up"))
        #expect(shown[4] == .string("In the small room"))
        #expect(shown[6].stringKeyed?["category"] == .string("meetings"))
        #expect(shown[6].stringKeyed?["sound-name"] == .string("message-new-instant"))
        #expect(shown[6].stringKeyed?["urgency"] == .byte(1))

        // The handler (connected now) gets the click's response with its userInfo.
        let (handler, iterator) = try await rig.handler()
        defer { handler.close() }
        var events = iterator
        try await Self.click(control, 1, action: "snooze")
        var response: AgentEvent.NotificationResponse?
        while let event = await events.next() {
            if case .notificationResponse(let value) = event {
                response = value
                break
            }
        }
        #expect(
            response
                == .init(notificationID: "standup", source: "local", action: "snooze", payload: #"{"room":4}"#))
    }

    @Test func theSixtyFifthPendingNotificationIsRefusedAndARepeatingOneStays() async throws {
        let (lab, control) = try await Self.lab()
        let rig = try Self.rig(lab)
        let agent = try await rig.agent()
        let (client, _) = try await rig.handler()
        defer { client.close() }
        for index in 0..<64 {
            try await client.scheduleNotification(
                LocalNotification(identifier: "n\(index)", body: "later", afterSeconds: 86_400))
        }
        do {
            try await client.scheduleNotification(LocalNotification(identifier: "n64", body: "one too many"))
            Issue.record("a 65th pending notification was accepted")
        } catch let error as AgentRequestError {
            #expect(error.code == "tooManyPending")
            #expect(error.detail.contains("64"))
        }
        // Replacing a pending identifier is not a 65th.
        try await client.scheduleNotification(LocalNotification(identifier: "n0", body: "sooner", afterSeconds: 60))
        #expect(await agent.status().notifications?.pendingLocal == 64)
        #expect(try await client.cancelNotifications(nil) == 64)

        do {
            try await client.scheduleNotification(LocalNotification(identifier: "r", body: "x", repeatSeconds: 30))
            Issue.record("a 30 s repeat was accepted")
        } catch let error as AgentRequestError {
            #expect(error.code == "badRequest")
        }
        try await client.scheduleNotification(
            LocalNotification(identifier: "water", body: "Drink", afterSeconds: 60, repeatSeconds: 60))
        for fired in 1...2 {
            rig.clock.advance(by: .seconds(60))
            try await eventually("fired \(fired)×") { try await Self.notifyCalls(control).count == fired }
        }
        // Each firing of an identifier replaces the notification its previous firing showed (the mock's id 1).
        let calls = try await Self.notifyCalls(control)
        #expect(calls[0][1] == .uint32(0))
        #expect(calls[1][1] == .uint32(1))
        #expect(try await client.pendingNotifications().map(\.identifier) == ["water"])
    }

    /// The Python client library's calls (clients/python/rouse_handler.py), then the agent shows what it scheduled.
    @Test func thePythonClientSchedulesListsAndCancels() async throws {
        try ChildProcess.require("/usr/bin/python3")
        let (lab, control) = try await Self.lab()
        let rig = try Self.rig(lab)
        _ = try await rig.agent()
        let script = """
            import sys
            sys.path.insert(0, sys.argv[1])
            import rouse_handler
            agent = rouse_handler.connect(sys.argv[2])
            agent.register("py")
            while (event := agent.next_event(timeout=10)) is not None and event["type"] != "registered":
                pass
            print(rouse_handler.schedule_notification(agent, "tea", title="Tea", body="Ready", after_seconds=90)["fireAt"])
            print(",".join(n["identifier"] for n in agent.pending_notifications()))
            try:
                for i in range(64):
                    agent.schedule_notification("n%d" % i, body="later", after_seconds=3600)
            except rouse_handler.AgentError as error:
                print(error.code)
            print(agent.cancel_notifications(["n%d" % i for i in range(64)]))
            print(",".join(n["identifier"] for n in agent.pending_notifications()))
            """
        let run = try await ChildProcess.run(
            "/usr/bin/python3", ["-c", script, Repository.root + "/clients/python", rig.directory + "/agent.sock"],
            timeout: .seconds(60))
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines == ["\(rig.clock.wallMilliseconds + 90_000)", "tea", "tooManyPending", "63", "tea"])
        rig.clock.advance(by: .seconds(90))
        try await eventually("shown") { try await Self.notifyCalls(control).count == 1 }
        let shown = try await Self.notifyCalls(control)[0]
        #expect(shown[0] == .string("py"))
        #expect(shown[3] == .string("Tea"))
    }
}
