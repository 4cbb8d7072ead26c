import Foundation
import RouseChildProcess
import RouseDBus
import Synchronization

/// A private `dbus-daemon` for one test, and python3-dbusmock stand-ins for logind, the notification server and
/// UPower on it. Everything started is stopped when the test's scope ends (``TestScope``).
package final class DBusLab: Sendable {
    /// The bus address (`unix:path=…`).
    package let address: String
    let directory: String
    private let daemon: RunningChild
    private let mocks = Mutex<[RunningChild]>([])

    /// Starts the daemon (a minimal configuration: no activatable service, so nothing real is ever started), or with
    /// `serviceDirectory` as its only service directory (the test's own `.service` files: D-Bus activation).
    package static func start(serviceDirectory: String? = nil) async throws -> DBusLab {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-dbus-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let configuration = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(directory)/bus</listen>
              <auth>EXTERNAL</auth>\(serviceDirectory.map { "\n  <servicedir>\($0)</servicedir>" } ?? "")
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        try configuration.write(toFile: directory + "/bus.conf", atomically: true, encoding: .utf8)
        let daemon = try ChildProcess.start(
            "/usr/bin/dbus-daemon", ["--config-file=\(directory)/bus.conf", "--nofork", "--print-address=1"],
            stdout: .lines, stderr: .discard)
        guard let address = await daemon.lines.first(timeout: .seconds(20), where: { $0.hasPrefix("unix:") }) else {
            daemon.kill()
            throw ChildProcess.Failure(description: "dbus-daemon printed no address")
        }
        let lab = DBusLab(address: address, directory: directory, daemon: daemon)
        TestScope.current?.onEnd { lab.stop() }
        return lab
    }

    private init(address: String, directory: String, daemon: RunningChild) {
        self.address = address
        self.directory = directory
        self.daemon = daemon
    }

    /// A connection to the lab's bus on a loop of its own; closed when the test ends.
    package func connect() async throws -> DBusConnection {
        let connection = try await DBusConnection.connect(.address(address))
        TestScope.current?.onEnd { await connection.close() }
        return connection
    }

    /// Starts `python3 -m dbusmock --template NAME` on the lab's bus and returns once it owns `busName` (watched
    /// through `NameOwnerChanged`, no polling). `parameters` is the template's JSON parameters.
    package func startMock(template: String, busName: String, parameters: String? = nil, on watcher: DBusConnection)
        async throws
    {
        let owned = AsyncStream<Void>.makeStream()
        let registration = try await watcher.subscribe(
            DBusMatch(path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged")
        ) { signal in
            if signal.arguments.first?.string == busName, signal.arguments.last?.string?.isEmpty == false {
                owned.continuation.yield()
            }
        }
        defer { Task { await registration.cancel() } }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        var arguments = ["-m", "dbusmock", "--session", "--template", template]
        if let parameters { arguments += ["--parameters", parameters] }
        let mock = try ChildProcess.start("/usr/bin/python3", arguments, environment: environment, stderr: .inherit)
        mocks.withLock { $0.append(mock) }
        if try await watcher.nameOwner(busName) != nil { return }
        let deadline = Task {
            try? await Task.sleep(for: .seconds(30))
            owned.continuation.finish()
        }
        defer { deadline.cancel() }
        for await _ in owned.stream { return }
        throw ChildProcess.Failure(description: "dbusmock --template \(template) never owned \(busName)")
    }

    /// Kills the daemon (the bus goes away under its clients).
    package func killDaemon() { daemon.kill() }

    func stop() {
        for mock in mocks.withLock({ $0 }) { mock.kill() }
        daemon.kill()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

extension DBusLab {
    /// A seat0 session of `uid` (logind stand-in) on a machine on battery (UPower stand-in) whose display device is
    /// discharging at `percentage` with `secondsToEmpty` left (`icon`, `warningLevel` as UPower's), for the tests of
    /// what power holds back; the connection that drives the stand-ins.
    package func startSessionOnBattery(
        uid: UInt32, percentage: Double, secondsToEmpty: Int64, icon: String, warningLevel: UInt32
    ) async throws -> DBusConnection {
        let control = try await connect()
        try await startMock(template: "logind", busName: Logind.name, on: control)
        try await startMock(template: "upower", busName: UPower.name, parameters: #"{"OnBattery": true}"#, on: control)
        _ = try await control.call(
            destination: UPower.name, path: "/org/freedesktop/UPower", interface: "org.freedesktop.DBus.Mock",
            member: "SetupDisplayDevice",
            arguments: [
                .uint32(2), .uint32(2), .double(percentage), .double(percentage), .double(100.0), .double(1.0),
                .int64(secondsToEmpty), .int64(0), .boolean(true), .string(icon), .uint32(warningLevel),
            ])
        _ = try await control.call(
            destination: Logind.name, path: Logind.managerPath, interface: "org.freedesktop.DBus.Mock",
            member: "AddSession",
            arguments: [.string("c1"), .string("seat0"), .uint32(uid), .string("me"), .boolean(true)])
        return control
    }
}
