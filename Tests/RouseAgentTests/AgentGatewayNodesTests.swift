import Foundation
import Logging
import RouseAgent
import RouseAgentCore
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Testing

/// `rouse-agent --gateway A,B`: two gateway nodes on one PostgreSQL; the agent's channel moves to the other node
/// when its node ends the channel or cannot be reached, with the usual backoff.
@Suite("rouse-agent with several gateway nodes", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(5)))
struct AgentGatewayNodesTests {
    @Test("node A stops: the channel moves to node B; pushes taken by either node reach the handler")
    func movesToAnotherNode() async throws {
        let cluster = try await PostgresCluster.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-agent-nodes-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (a, b) = try Self.twoNodes(cluster)
        var configuration = AgentConfiguration(
            endpoint: GatewayEndpoint(baseURL: "https://127.0.0.1:\(a.devicePort)", caFile: Repository.cert("ca.pem")),
            enrollmentSecret: try a.makeEnrollmentSecret(), socketPath: directory + "/agent.sock",
            handlers: [try AgentHarness.handler("voip", mode: "report", directory: directory)])
        configuration.endpoint.otherBaseURLs = ["https://127.0.0.1:\(b.devicePort)"]
        configuration.assumeReachable = true
        configuration.backoff.maximum = .seconds(1)
        configuration.handlerEnvironment.merge(TestScope.current?.environment ?? [:]) { $1 }
        let agent = try Agent(
            configuration: configuration, store: JSONFileAgentStateStore(path: directory + "/state.json"),
            logger: Self.logger)
        try await agent.start()
        let pushedThroughB = try await Provider.connect(port: b.providerPort)
        do {
            try await eventually("channel open on node a", timeout: .seconds(45)) {
                let open = await agent.status().channel == "open"
                let tokens = await agent.tokens()
                return open && !tokens.isEmpty
            }
            let token = try #require(await agent.tokens()[AgentHarness.bundleID + ".voip"])
            let log: @Sendable () -> String = {
                (try? String(contentsOfFile: directory + "/voip.log", encoding: .utf8)) ?? ""
            }
            // Taken by node b, delivered on node a's channel.
            let first = await pushedThroughB.push(
                token: token, topic: AgentHarness.bundleID + ".voip", type: "voip", payload: #"{"n":1}"#)
            #expect(first == 200)
            try await eventually("first push handled") { log().contains(#"{"n":1}"#) }
            #expect(try nodes(b) == ["a": 1, "b": 0])

            // Node a stops (its channel ends with `shutdown`, then it refuses connections): the agent moves to b.
            await a.shutdown(gracePeriod: .seconds(1))
            try await eventually("channel open on node b", timeout: .seconds(20)) { try nodes(b) == ["b": 1] }
            let second = await pushedThroughB.push(
                token: token, topic: AgentHarness.bundleID + ".voip", type: "voip", payload: #"{"n":2}"#)
            #expect(second == 200)
            try await eventually("second push handled") { log().contains(#"{"n":2}"#) }
            try await eventually("both acknowledged") {
                try b.store.read { try $0.pendingList(deviceID: nil as String?, limit: 10) }.isEmpty
            }
        } catch {
            Issue.record(error)
        }
        pushedThroughB.client.close()
        await agent.shutdown()
        await a.shutdown(gracePeriod: .seconds(1))
        await b.shutdown(gracePeriod: .seconds(1))
    }

    @Test("the rouse-agent executable, --gateway A,B: node A stops, the channel moves to B, pushes keep coming")
    func executableMovesToAnotherNode() async throws {
        let cluster = try await PostgresCluster.start()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-agent-nodes-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory + "/handlers", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (a, b) = try Self.twoNodes(cluster)
        let handler = """
            topic = "com.example.nodes"
            command = ["\(try Products.path("rouse-example-handler"))", "--mode", "report", "--log", "\(directory)/nodes.log"]
            push-types = ["voip"]
            allow-root = true
            """
        try Data(handler.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/nodes.toml"))
        let agent = try await AgentProcess(
            arguments: [
                "--gateway", "https://127.0.0.1:\(a.devicePort),https://127.0.0.1:\(b.devicePort)",
                "--ca", Repository.cert("ca.pem"), "--enroll-secret", try a.makeEnrollmentSecret(),
                "--handlers", directory + "/handlers", "--state-dir", directory + "/state",
                "--socket", directory + "/agent.sock", "--assume-reachable",
            ], environment: TestScope.current?.environment ?? [:], stderrPath: directory + "/agent.stderr")
        let provider = try await Provider.connect(port: b.providerPort)
        let log: @Sendable () -> String = {
            (try? String(contentsOfFile: directory + "/nodes.log", encoding: .utf8)) ?? ""
        }
        do {
            try await eventually("channel open on node a", timeout: .seconds(45)) { try nodes(b) == ["a": 1, "b": 0] }
            let token = try #require(
                try b.store.read { try $0.tokens(deviceID: nil) }.first { $0.topic == "com.example.nodes.voip" }?.token)
            #expect(
                await provider.push(token: token, topic: "com.example.nodes.voip", type: "voip", payload: #"{"n":1}"#)
                    == 200)
            try await eventually("first push handled") { log().contains(#"{"n":1}"#) }
            await a.shutdown(gracePeriod: .seconds(1))
            try await eventually("channel open on node b", timeout: .seconds(20)) { try nodes(b) == ["b": 1] }
            #expect(
                await provider.push(token: token, topic: "com.example.nodes.voip", type: "voip", payload: #"{"n":2}"#)
                    == 200)
            try await eventually("second push handled") { log().contains(#"{"n":2}"#) }
        } catch {
            Issue.record(
                "\(error); agent stderr: \((try? String(contentsOfFile: directory + "/agent.stderr", encoding: .utf8)) ?? "")"
            )
        }
        provider.client.close()
        agent.process.terminate()
        _ = try await agent.process.wait(timeout: .seconds(30))
        await a.shutdown(gracePeriod: .seconds(1))
        await b.shutdown(gracePeriod: .seconds(1))
    }

    /// Live nodes and their channels, as `rouse gateway nodes` lists them.
    /// A quiet logger for the gateways and the in-process agent.
    private static var logger: Logger {
        var logger = Logger(label: "rouse.agent.test")
        logger.logLevel = .critical
        return logger
    }

    /// Gateway nodes "a" and "b" in process, sharing `cluster`'s store.
    private static func twoNodes(_ cluster: PostgresCluster) throws -> (Gateway, Gateway) {
        let settings = PostgresSettings(
            host: "127.0.0.1", port: cluster.port, database: "postgres", user: cluster.user,
            passwordFile: cluster.passwordFile, poolSize: 3)
        func node(_ name: String) throws -> Gateway {
            var configuration = try AgentHarness.gatewayConfiguration(database: "")
            configuration.postgres = settings
            configuration.node = name
            return try Gateway(configuration: configuration, logger: Self.logger)
        }
        return (try node("a"), try node("b"))
    }

    private func nodes(_ gateway: Gateway) throws -> [String: Int] {
        let now = Gateway.systemMilliseconds()
        var result: [String: Int] = [:]
        for node in try gateway.store.read({ try $0.nodes() }) where node.leaseExpiresAt > now {
            result[node.id] = node.channels
        }
        return result
    }
}
