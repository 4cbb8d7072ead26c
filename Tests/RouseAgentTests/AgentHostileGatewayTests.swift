import Foundation
import Logging
import RouseAgent
import RouseAgentCore
import RouseHTTP2
import RouseSystem
import RouseTestSupport
import Synchronization
import Testing

/// A gateway that speaks the device protocol with numbers no real gateway sends: the first channel announces a
/// heartbeat of `Int64.max` seconds, the next ones carry pushes whose `expiration` and `receivedAt` overflow any
/// arithmetic in milliseconds. It records the channels opened and the ids acknowledged.
final class HostileGateway: Sendable {
    private final class Handler: HTTP2ConnectionHandler {
        let gateway: HostileGateway
        init(_ gateway: HostileGateway) { self.gateway = gateway }
        func connectionClosed() {}
        func handleRequest(_ request: HTTP2Request, stream: HTTP2Stream) {
            gateway.handle(request, stream)
        }
    }

    static let topic = "com.example.rouse.voip"
    private let state = Mutex<(channels: Int, acks: [String])>((0, []))
    private(set) nonisolated(unsafe) var server: HTTP2Server!  // set once in init, before any request

    init() throws {
        var configuration = HTTP2ServerConfiguration()
        var tls = TLSConfiguration()
        tls.certificateChainFile = Repository.cert("server.pem")
        tls.privateKeyFile = Repository.cert("server.key")
        configuration.tls = tls
        configuration.requestTimeout = nil
        server = try HTTP2Server(configuration: configuration) { [unowned self] _, _ in Handler(self) }
    }

    var port: Int { Int(server.localAddress.port) }
    var channels: Int { state.withLock { $0.channels } }
    var acks: [String] { state.withLock { $0.acks } }

    private func handle(_ request: HTTP2Request, _ stream: HTTP2Stream) {
        func json(_ status: Int, _ text: String) {
            stream.respond(
                status: status, headers: [HTTP2Header("content-type", "application/json")], body: Array(text.utf8))
        }
        switch (request.method, request.path) {
        case ("POST", "/device/v1/enroll"): json(201, #"{"deviceID":"hostile","credential":"c"}"#)
        case ("POST", "/device/v1/tokens"): json(201, #"{"token":"t"}"#)
        case ("POST", "/device/v1/handlers"): json(200, "{}")
        case ("POST", "/device/v1/ack"):
            let object = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any]
            let ids = object?["ids"] as? [String] ?? []
            state.withLock { $0.acks += ids }
            json(200, "{}")
        case ("GET", "/device/v1/channel"):
            let channel = state.withLock { state in
                state.channels += 1
                return state.channels
            }
            stream.sendHead(status: 200, headers: [HTTP2Header("content-type", "application/x-ndjson")])
            guard channel > 1 else {
                stream.write(
                    Array(
                        "{\"type\":\"hello\",\"device\":\"hostile\",\"channel\":1,\"heartbeat\":\(Int64.max),\"window\":32}\n"
                            .utf8))
                return
            }
            let payload = Data(#"{"call":"x"}"#.utf8).base64EncodedString()
            var records = [#"{"type":"hello","device":"hostile","channel":2,"heartbeat":0,"window":32}"#]
            for (id, expiration, received) in [
                ("p\(channel)-a", Int64.max, Int64.min), ("p\(channel)-b", Int64.min, Int64.max),
                ("p\(channel)-c", Int64(1e15), Int64(-1e15)),
            ] {
                records.append(
                    "{\"type\":\"push\",\"id\":\"\(id)\",\"token\":\"t\",\"priority\":10,\"pushType\":\"voip\","
                        + "\"topic\":\"\(Self.topic)\","
                        + "\"payload\":\"\(payload)\",\"apnsID\":\"\(id)\",\"expiration\":\(expiration),"
                        + "\"receivedAt\":\(received)}")
            }
            stream.write(Array((records.joined(separator: "\n") + "\n").utf8))
        default: json(404, "{}")
        }
    }
}

@Suite("A gateway sending out-of-range numbers", .stopsWhatItStarts, .timeLimit(.minutes(1)))
struct AgentHostileGatewayTests {
    @Test func overflowingValuesCloseTheChannelOrCountAsStaleAndTheAgentLives() async throws {
        let gateway = try HostileGateway()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-agent-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var logger = Logger(label: "rouse.agent.test")
        logger.logLevel = .critical
        var configuration = AgentConfiguration(
            endpoint: GatewayEndpoint(baseURL: "https://127.0.0.1:\(gateway.port)", caFile: Repository.cert("ca.pem")),
            enrollmentSecret: "s", socketPath: directory + "/agent.sock",
            handlers: [try AgentHarness.handler("voip", mode: "report", directory: directory)])
        configuration.assumeReachable = true
        configuration.backoff.initial = .milliseconds(50)
        configuration.backoff.maximum = .milliseconds(200)
        configuration.handlerEnvironment = TestScope.current?.environment ?? [:]
        let agent = try Agent(
            configuration: configuration, store: JSONFileAgentStateStore(path: directory + "/state.json"),
            logger: logger)
        TestScope.current?.onEnd {
            await agent.shutdown()
            await gateway.server.shutdown(gracePeriod: .milliseconds(100))
            try? FileManager.default.removeItem(atPath: directory)
        }
        try await agent.start()
        // The heartbeat of Int64.max seconds closed the first channel (no trap); the next one carried the pushes.
        try await eventually("a second channel", timeout: .seconds(30)) { gateway.channels >= 2 }
        // Stale (receivedAt overflowing its age) or expired: handed over with no report owed, and acknowledged.
        try await eventually("the pushes acknowledged", timeout: .seconds(30)) {
            Set(["p2-a", "p2-b", "p2-c"]).isSubset(of: Set(gateway.acks))
        }
        let lines = ((try? String(contentsOfFile: directory + "/voip.log", encoding: .utf8)) ?? "")
            .split(separator: "\n").filter { $0.hasPrefix("push id=p2-") }
        #expect(lines.count == 3 && lines.allSatisfy { $0.contains("mustReport=false") }, "\(lines)")
        #expect(await agent.status().channel == "open")
    }
}
