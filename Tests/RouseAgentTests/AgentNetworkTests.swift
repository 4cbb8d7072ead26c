import Foundation
import Logging
import RouseAgent
import RouseAgentClient
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Synchronization
import Testing

/// A network namespace for the agent, joined to this (root) namespace by a veth pair:
/// agent side `10.201.N.2/24` in the namespace, gateway side `10.201.N.1/24` here. Deleted by `delete()`, or at the
/// latest when the fixture goes away (also when its set-up failed half-way).
final class AgentNetwork: Sendable {
    let name: String
    let outside: String
    let inside: String
    let gatewayAddress: String
    private let deleted = Mutex(false)

    init() async throws {
        guard getuid() == 0 else {
            throw FixtureError("network-namespace tests need root (uid \(getuid())); CI runs them as root")
        }
        let n = Self.nextNumber()
        name = "ra-\(TestRun.name)-\(getpid())-\(n)"
        outside = "rav\(n)o\(getpid() % 1000)"
        inside = "rav\(n)i\(getpid() % 1000)"
        gatewayAddress = "10.201.\(n).1"
        try await Self.ip(["netns", "add", name])
        do {
            try await Self.ip(["link", "add", outside, "type", "veth", "peer", "name", inside, "netns", name])
            try await Self.ip(["addr", "add", "\(gatewayAddress)/24", "dev", outside])
            try await Self.ip(["link", "set", outside, "up"])
            try await Self.ip(["-n", name, "link", "set", "lo", "up"])
            try await Self.ip(["-n", name, "addr", "add", "10.201.\(n).2/24", "dev", inside])
            try await Self.ip(["-n", name, "link", "set", inside, "up"])
        } catch {
            delete()
            throw error
        }
    }

    deinit { delete() }

    /// Numbers given out in this process, 2…250 in turn: two networks alive at once never share one. (They were
    /// random: two tests that drew the same number collided, the second's `netns add` failed with "File exists",
    /// and its clean-up deleted the first's veth pair and namespace under it.)
    private static let counter = Atomic<Int>(0)
    static func nextNumber() -> Int { 2 + (counter.add(1, ordering: .relaxed).oldValue % 249) }

    static func ip(_ arguments: [String]) async throws {
        let output = try await ChildProcess.run("/usr/sbin/ip", arguments, timeout: .seconds(20))
        guard output.status == 0 else {
            throw FixtureError("ip \(arguments.joined(separator: " ")): \(output.stderr)")
        }
    }

    /// Adds `10.201.N.3` on the agent's side and makes it the preferred source towards the gateway.
    func changeSourceAddress() async throws {
        let prefix = gatewayAddress.dropLast(2)
        try await Self.ip(["-n", name, "addr", "add", "\(prefix).3/24", "dev", inside])
        try await Self.ip(["-n", name, "route", "replace", "\(prefix).0/24", "dev", inside, "src", "\(prefix).3"])
    }

    /// Takes the agent's side of the link down or up.
    func link(up: Bool) async throws { try await Self.ip(["-n", name, "link", "set", inside, up ? "up" : "down"]) }

    /// Deletes the namespace and the veth pair (once), synchronously, so a `defer` cleans up before the test ends.
    func delete() {
        let first = deleted.withLock { deleted in
            defer { deleted = true }
            return !deleted
        }
        guard first else { return }
        for arguments in [["link", "del", outside], ["netns", "del", name]] {
            _ = try? ChildProcess.runSync("/usr/sbin/ip", arguments)
        }
    }

    /// A server certificate for the gateway's veth address, signed by the test CA (certs/ca.key).
    func certificate(in directory: String) async throws -> String {
        let csr = directory + "/gw.csr"
        let pem = directory + "/gw.pem"
        let ext = directory + "/gw.ext"
        try Data("subjectAltName=IP:\(gatewayAddress)\nextendedKeyUsage=serverAuth\n".utf8).write(
            to: URL(fileURLWithPath: ext))
        for arguments in [
            ["req", "-new", "-key", Repository.cert("server.key"), "-subj", "/CN=rouse-gateway-test", "-out", csr],
            [
                "x509", "-req", "-in", csr, "-CA", Repository.cert("ca.pem"), "-CAkey", Repository.cert("ca.key"),
                "-set_serial", "\(Int.random(in: 1000...1_000_000))", "-days", "2", "-extfile", ext, "-out", pem,
            ],
        ] {
            let output = try await ChildProcess.run("/usr/bin/openssl", arguments, timeout: .seconds(20))
            guard output.status == 0 else { throw FixtureError("openssl \(arguments[0]): \(output.stderr)") }
        }
        return pem
    }
}

@Suite(
    "rouse-agent across a veth pair: reachability drives the channel", .serialized, .stopsWhatItStarts,
    .timeLimit(.minutes(2)))
struct AgentNetworkTests {
    static func status(socket: String) async throws -> AgentStatus {
        let client = try AgentClient(socketPath: socket)
        defer { client.close() }
        try client.send(.status)
        for await reply in client.messages {
            guard case .statusReply(let status) = reply else { throw FixtureError("status answered \(reply)") }
            return try JSONDecoder().decode(AgentStatus.self, from: Data(status.detail.utf8))
        }
        throw FixtureError("no status from the agent")
    }

    @Test func networkDownClosesTheChannelAndNetworkBackReconnectsAndDeliversQueuedPushes() async throws {
        let network = try await AgentNetwork()
        defer { network.delete() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-agent-\(UUID().uuidString)"
        )
        .path
        try FileManager.default.createDirectory(atPath: directory + "/handlers", withIntermediateDirectories: true)
        var logger = Logger(label: "rouse.gateway.test")
        logger.logLevel = .critical
        var configuration = try AgentHarness.gatewayConfiguration(database: directory + "/gateway.sqlite")
        configuration.device.listen = "\(network.gatewayAddress):0"
        configuration.device.certificateFile = try await network.certificate(in: directory)
        let gateway = try Gateway(configuration: configuration, logger: logger)
        let provider = try await Provider.connect(port: gateway.providerPort)
        let log = directory + "/voip.log"
        let handler = """
            topic = "com.example.rouse"
            command = ["\(try Products.path("rouse-example-handler"))", "--mode", "report", "--log", "\(log)"]
            push-types = ["voip"]
            allow-root = true
            """
        try Data(handler.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/voip.toml"))
        let socket = directory + "/agent.sock"
        let agent = try await AgentProcess(
            executable: "/usr/sbin/ip",
            arguments: [
                "netns", "exec", network.name, try Products.path("rouse-agent"),
                "--gateway", "https://\(network.gatewayAddress):\(gateway.devicePort)", "--ca",
                Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--log-level", "debug",
            ], stderrPath: directory + "/agent.stderr")
        defer {
            agent.kill()
            provider.client.close()
            Task {
                await gateway.shutdown(gracePeriod: .seconds(1))
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        @Sendable func reported() -> Int {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
                .filter { $0.hasPrefix("reported id=") }.count
        }
        try await eventually("channel open") { try await Self.status(socket: socket).channel == "open" }
        try await eventually("token fetched") { try await Self.status(socket: socket).tokens?.isEmpty == false }
        let token = try #require(try await Self.status(socket: socket).tokens?["com.example.rouse.voip"])
        #expect(await provider.push(token: token, topic: "com.example.rouse.voip", type: "voip", payload: "{}") == 200)
        try await eventually("first call reported") { reported() == 1 }

        try await network.link(up: false)
        try await eventually("unreachable: channel closed") {
            let status = try await Self.status(socket: socket)
            return status.channel == "waitingForNetwork" && !status.gatewayReachable
        }
        #expect(await provider.push(token: token, topic: "com.example.rouse.voip", type: "voip", payload: "{}") == 200)
        #expect(reported() == 1)

        try await network.link(up: true)
        try await eventually("reachable again: reconnected") { try await Self.status(socket: socket).channel == "open" }
        try await eventually("queued push delivered and reported") { reported() == 2 }
        try await eventually("acknowledged") { try AgentHarness.pending(gateway) == 0 }
        // The preferred source address towards the gateway changes: the channel is reopened from the new one.
        try await network.changeSourceAddress()
        try await eventually("reconnected after the source address changed") {
            let stderr = try String(contentsOfFile: directory + "/agent.stderr", encoding: .utf8)
            return stderr.contains("source address changed")
                && stderr.components(separatedBy: "channel open").count == 4
        }
        try await eventually("open again") { try await Self.status(socket: socket).channel == "open" }
        let stderr = try String(contentsOfFile: directory + "/agent.stderr", encoding: .utf8)
        #expect(stderr.contains("reachable=false"))
    }
}
