import Foundation
import RouseAgent
import RouseAgentClient
import RouseChildProcess
import RouseClock
import RouseGateway

/// The agent behind a veth pair in a network namespace (root only): link up → channel open, as the agent sees
/// it end to end (netlink event, reachability, new TLS connection, channel `hello`), polled over its IPC.
enum AgentNetworkBench {
    static func ip(_ arguments: [String]) throws {
        guard try ChildProcess.runSync("/usr/sbin/ip", arguments).status == 0 else {
            throw GatewayBench.BenchError(description: "ip \(arguments.joined(separator: " ")) failed")
        }
    }

    /// A `rouse-gateway` whose device port listens on `address` (a veth's outside end), with a server certificate
    /// for that address from the test CA; returns the process (the caller stops it) and the device port.
    static func startGateway(
        on address: String, directory: String, certs: String, database: String, name: String
    ) async throws -> (RunningChild, String) {
        let certificate = try GatewayBench.serverCertificate(for: [address], directory: directory, certs: certs)
        let config = """
            {"provider": {"listen": "127.0.0.1:0", "certificate": "\(certs)/server.pem", "privateKey": "\(certs)/server.key"},
             "device": {"listen": "\(address):0", "certificate": "\(certificate)", "privateKey": "\(certs)/server.key"},
             "database": "\(database)",
             "keys": [{"keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1", "publicKey": "\(certs)/apns-key.pub.pem",
                       "topics": ["*"]}],
             "limits": {"heartbeatSeconds": 0}}
            """
        let path = directory + "/\(name).json"
        try Data(config.utf8).write(to: URL(fileURLWithPath: path))
        let gateway = try ChildProcess.start(
            try GatewayBench.sibling("rouse-gateway"), ["--config", path, "--log-level", "error"],
            stdout: .lines, stderr: .inherit)
        let ready = await gateway.lines.first(timeout: .seconds(60)) { _ in true } ?? ""
        guard let field = ready.split(separator: " ").first(where: { $0.hasPrefix("device=") }),
            let port = field.split(separator: ":").last.map({ String($0.prefix { $0.isNumber }) })
        else {
            gateway.terminate()
            gateway.waitUntilExit()
            throw GatewayBench.BenchError(description: "gateway not ready: \(ready)")
        }
        return (gateway, port)
    }

    static func tool(_ path: String, _ arguments: [String]) throws {
        guard try ChildProcess.runSync(path, arguments).status == 0 else {
            throw GatewayBench.BenchError(description: "\(path) \(arguments.first ?? "") failed")
        }
    }

    /// Milliseconds from "link up" to "channel open", `iterations` times.
    static func linkUpToOpen(iterations: Int, directory: String, certs: String, database: String) async throws
        -> [Double]
    {
        guard getuid() == 0 else { throw GatewayBench.BenchError(description: "needs root (network namespaces)") }
        let store = try SQLiteGatewayStore(path: database)
        let secret = try Gateway.makeEnrollmentSecret(
            store: store, now: Gateway.systemMilliseconds(), validity: .seconds(3600))
        let namespace = "rb-\(getpid())"
        let outside = "rbo\(getpid() % 100_000)"
        let inside = "rbi\(getpid() % 100_000)"
        let gatewayAddress = "10.202.1.1"
        try ip(["netns", "add", namespace])
        defer {
            try? ip(["link", "del", outside])
            try? ip(["netns", "del", namespace])
        }
        try ip(["link", "add", outside, "type", "veth", "peer", "name", inside, "netns", namespace])
        try ip(["addr", "add", "\(gatewayAddress)/24", "dev", outside])
        try ip(["link", "set", outside, "up"])
        try ip(["-n", namespace, "link", "set", "lo", "up"])
        try ip(["-n", namespace, "addr", "add", "10.202.1.2/24", "dev", inside])
        try ip(["-n", namespace, "link", "set", inside, "up"])
        let (gateway, port) = try await startGateway(
            on: gatewayAddress, directory: directory, certs: certs, database: database, name: "netns-gateway")
        defer {
            gateway.terminate()
            gateway.waitUntilExit()
        }
        try FileManager.default.createDirectory(
            atPath: directory + "/netns-handlers", withIntermediateDirectories: true)
        let socket = directory + "/netns-agent.sock"
        let agent = try ChildProcess.start(
            "/usr/sbin/ip",
            [
                "netns", "exec", namespace, try GatewayBench.sibling("rouse-agent"), "--gateway",
                "https://\(gatewayAddress):\(port)", "--ca", certs + "/ca.pem", "--enroll-secret", secret,
                "--handlers", directory + "/netns-handlers", "--state-dir", directory + "/netns-state", "--socket",
                socket, "--log-level", "error",
            ], stderr: .inherit)
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        func channel() async -> String? {
            guard let client = try? AgentClient(socketPath: socket) else { return nil }
            defer { client.close() }
            guard (try? client.send(.status)) != nil else { return nil }
            for await reply in client.messages {
                guard case .statusReply(let answer) = reply,
                    let status = try? JSONDecoder().decode(AgentStatus.self, from: Data(answer.detail.utf8))
                else { return nil }
                return status.channel
            }
            return nil
        }
        func until(_ state: String) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                if await channel() == state { return }
                try await Task.sleep(for: .milliseconds(1))
            }
            throw GatewayBench.BenchError(description: "agent channel never \(state)")
        }
        try await until("open")
        var samples: [Double] = []
        for _ in 0..<iterations {
            try ip(["-n", namespace, "link", "set", inside, "down"])
            try await until("waitingForNetwork")
            let start = ContinuousClock.now
            try ip(["-n", namespace, "link", "set", inside, "up"])
            try await until("open")
            let elapsed = ContinuousClock.now - start
            samples.append(elapsed.inMilliseconds)
        }
        return samples
    }
}
