import Foundation
import RouseChildProcess
import RouseDBus

/// `rouse-bench agent --session-bus`: the agent connected to D-Bus as in a desktop session (logind's lock followed),
/// on a private `dbus-daemon` with python3-dbusmock's logind, so the idle figures include the bus connection.
struct BenchSessionBus {
    let address: String
    let children: [RunningChild]

    /// Starts the daemon and the mock, and adds an active, unlocked session on seat0.
    static func start(directory: String) async throws -> BenchSessionBus {
        let daemon = try ChildProcess.start(
            "/usr/bin/dbus-daemon", ["--session", "--nofork", "--print-address=1"], stdout: .lines)
        guard let address = await daemon.lines.first(timeout: .seconds(20), where: { $0.hasPrefix("unix:") }) else {
            daemon.kill()
            throw GatewayBench.BenchError(description: "dbus-daemon printed no address")
        }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        let mock = try ChildProcess.start(
            "/usr/bin/python3", ["-m", "dbusmock", "--session", "--template", "logind"], environment: environment)
        let bus = BenchSessionBus(address: address, children: [daemon, mock])
        do {
            let connection = try await DBusConnection.connect(.address(address))
            defer { Task { await connection.close() } }
            let deadline = ContinuousClock.now + .seconds(30)
            while try await connection.nameOwner(Logind.name) == nil {
                guard ContinuousClock.now < deadline else {
                    throw GatewayBench.BenchError(description: "the logind mock never started")
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            _ = try await connection.call(
                destination: Logind.name, path: Logind.managerPath, interface: "org.freedesktop.DBus.Mock",
                member: "AddSession",
                arguments: [.string("c1"), .string("seat0"), .uint32(getuid()), .string("bench"), .boolean(true)])
        } catch {
            bus.stop()
            throw error
        }
        return bus
    }

    /// The agent's arguments that connect it.
    var agentArguments: [String] { ["--session-integration", "on", "--system-bus-address", address] }

    func stop() {
        for child in children.reversed() { child.kill() }
    }
}
