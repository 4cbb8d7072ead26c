import Foundation
import Logging
import RouseAgent
import RouseAgentCore
import RouseClock
import RouseDBus
import RouseState
import RouseSystem
import RouseTestSupport
import Testing

/// UPower's `OnBattery` joins reachability's "expensive" for discretionary work, and shows in the status.
@Suite(.stopsWhatItStarts, .serialized, .timeLimit(.minutes(2)))
struct AgentSessionPowerTests {
    @Test func onBatteryMakesDiscretionaryWorkWaitAndACReleasesIt() async throws {
        let lab = try await DBusLab.start()
        let control = try await lab.startSessionOnBattery(
            uid: Sys.uid, percentage: 23.0, secondsToEmpty: 3600, icon: "battery-low-symbolic", warningLevel: 1)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-power-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var logger = Logger(label: "rouse.agent.test")
        logger.logLevel = .critical
        var configuration = AgentConfiguration(
            endpoint: GatewayEndpoint(baseURL: "https://127.0.0.1:9", caFile: Repository.cert("ca.pem")),
            socketPath: directory + "/agent.sock", handlers: [])
        configuration.assumeReachable = true
        configuration.clock = ManualClock(wallMilliseconds: SystemClock().wallMilliseconds)
        configuration.session = SessionIntegration(systemBus: .address(lab.address), uid: Sys.uid)
        let agent = try Agent(
            configuration: configuration, store: JSONFileAgentStateStore(path: directory + "/state.json"),
            logger: logger)
        try await agent.start()
        TestScope.current?.onEnd {
            await agent.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }
        try await eventually("UPower read") { await agent.status().session?.onBattery != nil }
        let onBattery = try #require(await agent.status().session)
        #expect(onBattery.onBattery == true)
        #expect(onBattery.batteryPercentage == 23.0)
        #expect(onBattery.expensive)
        #expect(await agent.transfersExpensive)

        _ = try await control.call(
            destination: UPower.name, path: "/org/freedesktop/UPower", interface: "org.freedesktop.DBus.Mock",
            member: "UpdateProperties",
            arguments: [.string("org.freedesktop.UPower"), .vardict([("OnBattery", .boolean(false))])])
        try await eventually("on AC") { await agent.status().session?.onBattery == false }
        #expect(await agent.status().session?.expensive == false)
        #expect(await !agent.transfersExpensive)
    }
}
