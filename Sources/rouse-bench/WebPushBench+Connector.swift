import Foundation
import RouseAgent
import RouseAgentClient
import RouseChildProcess
import RouseClock

/// `rouse-bench webpush`'s distributor leg (issue 28): the path a Linux app's messages take. A private session
/// `dbus-daemon` whose only service directory holds two apps' `.service` files (the dbus-fast connector of
/// `Tests/Interop/unifiedpush_connector.py`, as `AgentUnifiedPushTests` installs it), a `rouse-agent --user` process
/// whose UnifiedPush distributor owns `org.unifiedpush.Distributor.rouse` there and whose channel goes to the
/// bench's gateway. `running` stays up (its idle exit is an hour), so a message reaches a running connector;
/// `stopped` exits 0.3 s after each call, so each message D-Bus-activates it from its `.service` file. The connector
/// records `CLOCK_MONOTONIC` when `Connector2.Message` reaches it; the bench reads it from the app's events file.
struct ConnectorRig {
    static let running = "org.example.BenchRunning"
    static let stopped = "org.example.BenchStopped"

    let directory: String
    let busAddress: String
    let script: String
    let children: [RunningChild]
    let socket: String
    /// The endpoints handed to the two apps (`NewEndpoint`).
    var runningEndpoint = ""
    var stoppedEndpoint = ""

    /// Starts the bus and the agent, registers the two apps; their endpoints are on the gateway's WebPush origin.
    static func start(
        directory: String, repository: String, certs: String, devicePort: UInt16, secret: String
    ) async throws -> ConnectorRig {
        let services = directory + "/services"
        for path in [services, directory + "/handlers", directory + "/home", directory + "/run", directory + "/apps"] {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let script = repository + "/Tests/Interop/unifiedpush_connector.py"
        guard FileManager.default.fileExists(atPath: script) else {
            throw Bench.Failure(description: "\(script) is missing (run from the checkout)")
        }
        for (name, idle) in [(running, "3600"), (stopped, "0.3")] {
            let file = """
                [D-BUS Service]
                Name=\(name)
                Exec=/usr/bin/env UP_IDLE=\(idle) /usr/bin/python3 '\(script)' serve \(name) 2 '\(directory)/apps'

                """
            try file.write(toFile: services + "/\(name).service", atomically: true, encoding: .utf8)
        }
        let configuration = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(directory)/bus</listen>
              <auth>EXTERNAL</auth>
              <servicedir>\(services)</servicedir>
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
            stdout: .lines)
        guard let address = await daemon.lines.first(timeout: .seconds(20), where: { $0.hasPrefix("unix:") }) else {
            daemon.kill()
            throw Bench.Failure(description: "dbus-daemon printed no address")
        }
        let socket = directory + "/agent.sock"
        let agent: RunningChild
        do {
            agent = try ChildProcess.start(
                try GatewayBench.sibling("rouse-agent"),
                [
                    "--user", "--systemctl", "/bin/false", "--system-bus-address", address,
                    "--gateway", "https://127.0.0.1:\(devicePort)", "--ca", certs + "/ca.pem",
                    "--enroll-secret", secret, "--handlers", directory + "/handlers", "--state-dir",
                    directory + "/state", "--socket", socket, "--assume-reachable", "--log-level", "error",
                ],
                environment: [
                    "HOME": directory + "/home", "XDG_RUNTIME_DIR": directory + "/run",
                    "DBUS_SESSION_BUS_ADDRESS": address, "PATH": "/usr/bin:/bin",
                ], stderr: .inherit)
        } catch {
            daemon.kill()
            throw error
        }
        var rig = ConnectorRig(
            directory: directory, busAddress: address, script: script, children: [daemon, agent], socket: socket)
        do {
            try await rig.until("the agent's channel open and the distributor named", timeout: .seconds(60)) {
                guard let status = try? await rig.status() else { return false }
                return status.channel == "open" && status.unifiedPush?.nameOwned == true
            }
            rig.runningEndpoint = try await rig.register(running)
            rig.stoppedEndpoint = try await rig.register(stopped)
        } catch {
            rig.stop()
            throw error
        }
        return rig
    }

    /// The agent's status over its socket.
    func status() async throws -> AgentStatus? {
        let client = try AgentClient(socketPath: socket)
        defer { client.close() }
        try client.send(.status)
        for await reply in client.messages {
            guard case .statusReply(let status) = reply else { return nil }
            return try JSONDecoder().decode(AgentStatus.self, from: Data(status.detail.utf8))
        }
        return nil
    }

    /// Polls `condition` every 20 ms (set-up only: no figure depends on it).
    func until(_ what: String, timeout: Duration, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw Bench.Failure(description: "timed out waiting for \(what)")
    }

    /// App `name` registers (the connector's `register`, as the app would at its start); the endpoint it got.
    func register(_ name: String) async throws -> String {
        let out = try await ChildProcess.run(
            "/usr/bin/env",
            [
                "DBUS_SESSION_BUS_ADDRESS=\(busAddress)", "/usr/bin/python3", script, "register", name, "2",
                directory + "/apps", "tok-\(name)",
            ], timeout: .seconds(60))
        guard out.status == 0, out.stdout.contains("REGISTRATION_SUCCEEDED") else {
            throw Bench.Failure(description: "register \(name): exit \(out.status) \(out.stdout) \(out.stderr)")
        }
        var tail = events(name, fromStart: true)
        let event = try await tail.next(timeout: .seconds(10)) { $0["call"] as? String == "NewEndpoint" }
        guard let endpoint = event["endpoint"] as? String else {
            throw Bench.Failure(description: "no endpoint for \(name)")
        }
        return endpoint
    }

    /// App `name`'s events from now on (or from the start).
    func events(_ name: String, fromStart: Bool = false) -> EventTail {
        let path = directory + "/apps/\(name).events"
        let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
        return EventTail(path: path, offset: fromStart ? 0 : UInt64(size))
    }

    func stop() {
        for child in children.reversed() {
            child.terminate()
            child.waitUntilExit()
        }
    }

    /// CLOCK_MONOTONIC now, nanoseconds (the connector's `mono` is on the same clock).
    static func monotonicNanoseconds() -> Int64 { Int64(SystemClock().now.nanoseconds) }
}

/// The lines an app's events file gains: read from an offset, polled every 0.2 ms (the figures come from the times
/// the connector recorded, not from when the bench reads them).
struct EventTail {
    let path: String
    var offset: UInt64
    var pending = Data()

    /// The next event matching `match`.
    mutating func next(timeout: Duration, _ match: ([String: Any]) -> Bool) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while true {
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = pending[pending.startIndex..<newline]
                pending.removeSubrange(pending.startIndex...newline)
                if let event = try? JSONSerialization.jsonObject(with: line) as? [String: Any], match(event) {
                    return event
                }
            }
            if let handle = FileHandle(forReadingAtPath: path) {
                defer { try? handle.close() }
                try handle.seek(toOffset: offset)
                let data = handle.readDataToEndOfFile()
                offset += UInt64(data.count)
                pending.append(data)
                if !data.isEmpty { continue }
            }
            guard ContinuousClock.now < deadline else {
                throw Bench.Failure(description: "no event in \(path) within \(timeout)")
            }
            try await Task.sleep(for: .microseconds(200))
        }
    }
}
