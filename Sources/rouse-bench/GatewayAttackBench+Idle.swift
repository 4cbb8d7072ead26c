import Foundation
import RouseChildProcess
import RouseEventLoop
import RouseGateway
import RouseHTTP2

extension GatewayAttackBench {
    struct IdleFigures {
        var wakeUps = 0
        var perMinute = 0.0
        var baselinePerMinute = 0.0
    }

    /// (c) devices enrolled through the device API, each with its channel open and quiet, and half-open streams
    /// held past the device idle limit: the gateway's wake-ups over a window.
    static func idleWakeUps(_ context: Context, detail: (String, String) -> Void) async throws -> IdleFigures {
        let sizes = context.options.attackSizes
        let database = context.directory + "/idle.sqlite"
        let store = try SQLiteGatewayStore(path: database)
        let now = Gateway.systemMilliseconds()
        let secrets = try (0..<sizes.quietChannels).map { _ in
            try Gateway.makeEnrollmentSecret(store: store, now: now, validity: .seconds(3600))
        }
        // Every device connects from 127.0.0.1 here: the per-address cap (1000) makes room for them and the attacker.
        let limits = """
            {"heartbeatSeconds": \(sizes.heartbeatSeconds), "deviceIdleTimeoutSeconds": \
            \(sizes.idleSeconds), "authenticationTimeoutSeconds": 3600, "requestTimeoutSeconds": 3600, \
            "maxConnectionsPerAddress": \
            \(sizes.quietChannels + halfOpenConnections(sizes) + 100)}
            """
        let gateway = try await ChildGateway.start(
            executable: context.executable, directory: context.directory, database: database, certs: context.certs,
            limits: limits, name: "idle")
        defer { gateway.stop() }
        let pid = gateway.process.processIdentifier
        // The floor: the same gateway with no connection at all (libdispatch's workqueue monitor alone wakes a
        // Swift process on Linux once a second).
        let baselineWindow = min(sizes.idleWindowSeconds, 10)
        let baseline = try await ProcessProbe.wakeUps(pid, over: .seconds(baselineWindow))
        let baselinePerMinute = Double(baseline) * 60 / Double(baselineWindow)
        detail(
            "idle_wakeups_without_connections",
            "\(baseline) in \(baselineWindow) s (\(String(format: "%.1f", baselinePerMinute))/min)")

        let credentials = try await enroll(secrets, port: gateway.devicePort, loop: context.loop)
        let loops = try GatewayBench.channelLoops()
        let channels = try await GatewayBench.openChannels(
            port: gateway.devicePort, credentials: credentials, loops: loops)
        defer { for channel in channels { channel.abort() } }
        let open = try await GatewayBench.waitForConnectedDevices(
            credentials.count, gateway: gateway, loop: context.loop)
        detail("idle_channels_open", "\(open) of \(sizes.quietChannels) (each device enrolled through the device API)")

        var attack: HalfOpenAttackScript?
        if sizes.halfOpenStreams > 0 {
            let client = try HalfOpenAttackScript.start(
                python: context.python, script: context.repository + "/Tests/Interop/h2_attack.py",
                port: gateway.devicePort, path: "/device/v1/tokens", connections: halfOpenConnections(sizes),
                streams: halfOpenPerConnection(sizes), bodyBytes: 1024)
            attack = client
            let holding = try await client.phase("holding", timeout: .seconds(60))
            guard holding.connections == halfOpenConnections(sizes),
                holding.openStreams == halfOpenConnections(sizes) * halfOpenPerConnection(sizes)
            else {
                throw Bench.Failure(
                    description: "half-open streams not held: \(holding.connections) connections, "
                        + "\(holding.openStreams) open streams, RST_STREAM \(holding.resetSummary)")
            }
        }
        // Past the device idle limit with their streams open (the measured thing is time).
        try await Task.sleep(for: .seconds(sizes.idleSeconds + 2))
        let wakeUps = try await ProcessProbe.wakeUps(pid, over: .seconds(sizes.idleWindowSeconds))
        let stillOpen = try await GatewayBench.adminMetric(
            "rouse_gateway_connected_devices", gateway: gateway, loop: context.loop)
        detail("idle_channels_open_after_window", "\(Int(stillOpen ?? 0))")
        if let attack {
            let done = try await attack.stop()
            detail(
                "idle_half_open_streams_after_window",
                "\(done.openStreams) of \(done.streams) still open; RST_STREAM \(done.resetSummary)")
        }
        let perMinute = Double(wakeUps) * 60 / Double(sizes.idleWindowSeconds)
        detail("idle_wakeups", "\(wakeUps) in \(sizes.idleWindowSeconds) s (\(String(format: "%.1f", perMinute))/min)")
        return IdleFigures(wakeUps: wakeUps, perMinute: perMinute, baselinePerMinute: baselinePerMinute)
    }

    /// `POST /device/v1/enroll` with each secret (4 connections, 16 requests in flight on each); the credentials.
    static func enroll(_ secrets: [String], port: UInt16, loop: EventLoop) async throws -> [String] {
        var clients: [HTTP2Client] = []
        for _ in 0..<4 { clients.append(try await GatewayBench.connect(port: port, loop: loop)) }
        defer { for client in clients { client.close() } }
        let workers = 64
        return try await withThrowingTaskGroup(of: [String].self) { group in
            for worker in 0..<workers {
                let client = clients[worker % clients.count]
                let mine = stride(from: worker, to: secrets.count, by: workers).map { secrets[$0] }
                group.addTask {
                    var credentials: [String] = []
                    for secret in mine {
                        let answer = await client.send(
                            HTTP2ClientRequest(
                                method: "POST", path: "/device/v1/enroll", authority: "localhost",
                                headers: [HTTP2Header("content-type", "application/json")],
                                body: Array(#"{"secret":"\#(secret)"}"#.utf8)))
                        guard case .response(201, _, let body) = answer,
                            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
                            let credential = object["credential"] as? String
                        else { throw Bench.Failure(description: "enroll: \(answer)") }
                        credentials.append(credential)
                    }
                    return credentials
                }
            }
            var all: [String] = []
            for try await part in group { all += part }
            return all
        }
    }
}
