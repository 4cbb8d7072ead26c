import Foundation
import Logging
import RouseAgent
import RouseAgentClient
import RouseClock
import RouseDBus
import RouseSystem
import RouseTestSupport
import RouseWire
import Testing

/// Background fetch waits on a low battery (UPower, python3-dbusmock's on a private dbus-daemon): on battery at 10 %
/// no fetch starts however overdue; on AC the overdue fetch starts at once.
@Suite(.stopsWhatItStarts, .serialized, .timeLimit(.minutes(2)))
struct AgentFetchPowerTests {
    @Test func aLowBatteryHoldsBackgroundFetchAndACReleasesIt() async throws {
        let lab = try await DBusLab.start()
        let control = try await lab.startSessionOnBattery(
            uid: Sys.uid, percentage: 10.0, secondsToEmpty: 600, icon: "battery-caution-symbolic", warningLevel: 3)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-fetch-power-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var logger = Logger(label: "rouse.agent.test")
        logger.logLevel = ProcessInfo.processInfo.environment["ROUSE_TEST_LOG"] == nil ? .critical : .debug
        var handler = HandlerConfiguration(
            // The test process registers as the handler itself: its executable is the handler's.
            name: "reader", topic: "com.example.reader",
            command: [try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")],
            pushTypes: ["background"], allowRoot: true, rules: HandlerRules())
        handler.fetchMinimum = .seconds(60)
        var configuration = AgentConfiguration(
            endpoint: GatewayEndpoint(baseURL: "https://127.0.0.1:9", caFile: Repository.cert("ca.pem")),
            socketPath: directory + "/agent.sock", handlers: [handler])
        configuration.assumeReachable = true
        let clock = ManualClock(wallMilliseconds: SystemClock().wallMilliseconds)
        configuration.clock = clock
        configuration.session = SessionIntegration(systemBus: .address(lab.address), uid: Sys.uid)
        let agent = try Agent(
            configuration: configuration, store: JSONFileAgentStateStore(path: directory + "/state.json"),
            logger: logger)
        try await agent.start()
        TestScope.current?.onEnd {
            await agent.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let client = try AgentClient(socketPath: directory + "/agent.sock")
        defer { client.close() }
        try client.register(handler: "reader")
        var events = client.messages.makeAsyncIterator()
        try await eventually("UPower read") { await agent.status().session?.batteryPercentage == 10 }
        #expect(await agent.status().session?.lowPower == true)
        // The gateway counts as reachable (this agent is not enrolled: reachability is not watched without a channel).
        await agent.reachabilityChanged(true)

        // Ten minutes pass (the fetch was due after two): on a low battery nothing is planned, nothing starts.
        clock.advance(by: .seconds(600))
        await agent.settleFetchTimer()
        let held = try #require(await agent.status().handlers.first { $0.name == "reader" }?.fetch)
        #expect(held.running == nil)
        #expect(held.nextInSeconds == nil)
        #expect(held.history.isEmpty)

        _ = try await control.call(
            destination: UPower.name, path: "/org/freedesktop/UPower", interface: "org.freedesktop.DBus.Mock",
            member: "UpdateProperties",
            arguments: [.string("org.freedesktop.UPower"), .vardict([("OnBattery", .boolean(false))])])
        var fetchID: String?
        while let event = await events.next() {
            if case .fetch(let fetch) = event {
                fetchID = fetch.fetchID
                break
            }
        }
        let id = try #require(fetchID)
        #expect(await agent.status().session?.lowPower == false)
        try await client.fetchComplete(fetchID: id, result: .noData)
    }
}
