import Foundation
import Logging
import RouseAPNs
import RouseClock
import RouseCurl
import RouseEventLoop
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import RouseWire
import Synchronization
import Testing

extension ManualClock {
    /// A clock the test moves by hand, its wall clock starting at the real time (tokens are signed with it).
    static func fromNow() -> ManualClock { ManualClock(wallMilliseconds: Gateway.systemMilliseconds()) }
}

/// A temporary directory removed when the value is released.
final class TemporaryDirectory: Sendable {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-gateway-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

enum GatewayFixture {
    static let bundleID = "com.example.rouse"
    static let voipTopic = "com.example.rouse.voip"

    static func listener() -> GatewayConfiguration.Listener {
        GatewayConfiguration.Listener(
            listen: "127.0.0.1:0", certificateFile: Repository.cert("server.pem"),
            privateKeyFile: Repository.cert("server.key"), clientCAFile: Repository.cert("ca.pem"))
    }

    static func key() throws -> GatewayConfiguration.Key {
        let pem = try String(contentsOfFile: Repository.cert("apns-key.pub.pem"), encoding: .utf8)
        return GatewayConfiguration.Key(
            keyID: "ROUSEKEY01", teamID: "ROUSETEAM1", publicKeyPEM: pem,
            topics: ["com.example.rouse", "com.example.rouse.voip"])
    }

    static func configuration(database: String, configure: (inout GatewayConfiguration) -> Void = { _ in }) throws
        -> GatewayConfiguration
    {
        var configuration = GatewayConfiguration(
            provider: listener(), device: listener(),
            admin: GatewayConfiguration.Listener(listen: "127.0.0.1:0"), databasePath: database)
        configuration.keys = [try key()]
        configuration.providerCertificateTopics = [bundleID]
        configuration.limits.heartbeatSeconds = 0
        // The test providers connect at the start and may push first minutes later on a loaded machine; they do not
        // reconnect after a GOAWAY as real clients do (the deadline itself is tested in PublicLimitsTests and
        // BudgetTests).
        configuration.limits.authenticationTimeoutSeconds = 600
        configure(&configuration)
        return configuration
    }

    /// A gateway in this process on a fresh database in `directory`.
    static func start(
        in directory: TemporaryDirectory, clock: ManualClock? = nil, store: (any GatewayStore)? = nil,
        configure: (inout GatewayConfiguration) -> Void = { _ in }
    ) throws -> Gateway {
        let configuration = try configuration(database: directory.path + "/gateway.sqlite", configure: configure)
        var logger = Logger(label: "rouse.gateway.test")
        logger.logLevel = .warning
        if let clock {
            return try Gateway(configuration: configuration, store: store, logger: logger, clock: clock)
        }
        return try Gateway(configuration: configuration, store: store, logger: logger)
    }
}

/// The value of the gateway's admin `/metrics` sample line that starts with `sample` (0 when there is none),
/// read over h2c from the admin port.
func adminMetric(port: UInt16?, _ sample: String) async throws -> Int {
    let port = try #require(port)
    let admin = try await HTTP2Client.connect(
        HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: nil), on: providerLoop)
    defer { admin.close() }
    let response = await admin.send(
        HTTP2ClientRequest(method: "GET", path: "/metrics", authority: "localhost", scheme: "http"))
    guard case .response(200, _, let body) = response else { throw FixtureError("metrics: \(response)") }
    let line = String(decoding: body, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(sample + " ") }
    return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? 0
}

/// The gateway's whole admin `/metrics` text.
func adminMetrics(port: UInt16?) async throws -> String {
    let port = try #require(port)
    let admin = try await HTTP2Client.connect(
        HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: nil), on: providerLoop)
    defer { admin.close() }
    let response = await admin.send(
        HTTP2ClientRequest(method: "GET", path: "/metrics", authority: "localhost", scheme: "http"))
    guard case .response(200, _, let body) = response else { throw FixtureError("metrics: \(response)") }
    return String(decoding: body, as: UTF8.self)
}

/// The sample name of `rouse_gateway_limit_hits_total` for one listener and limit.
func limitHits(_ listener: String, _ limit: String) -> String {
    #"rouse_gateway_limit_hits_total{listener="\#(listener)",limit="\#(limit)"}"#
}

/// One shared client event loop for provider connections.
let providerLoop: EventLoop = {
    guard let loop = try? EventLoop(name: "gateway-test-provider") else { fatalError("cannot create an event loop") }
    loop.start()
    return loop
}()

/// A provider on one HTTP/2 connection, signing with certs/apns-key.p8.
struct Provider: Sendable {
    struct Answer: Sendable {
        var status: Int
        var reason: String?
        var timestamp: Int64?
        var apnsID: String?
    }

    let client: HTTP2Client
    let jwt: String

    static func connect(
        port: UInt16, issuedAt: Int64 = Gateway.systemMilliseconds() / 1000, keyFile: String = "apns-key.p8",
        keyID: String = "ROUSEKEY01", teamID: String = "ROUSETEAM1"
    ) async throws -> Provider {
        var tls = TLSConfiguration()
        tls.trustRootsFile = Repository.cert("ca.pem")
        let client = try await HTTP2Client.connect(
            HTTP2ClientConfiguration(host: "127.0.0.1", port: port, tls: tls), on: providerLoop)
        let pem = try String(contentsOfFile: Repository.cert(keyFile), encoding: .utf8)
        let jwt = try ProviderToken(keyID: keyID, teamID: teamID, issuedAt: issuedAt)
            .signed(with: ProviderToken.privateKey(pem: pem))
        return Provider(client: client, jwt: jwt)
    }

    func push(
        token: String, topic: String = GatewayFixture.bundleID, type: String? = "alert", priority: Int? = nil,
        expiration: Int64? = nil, collapseID: String? = nil, apnsID: String? = nil,
        payload: String = #"{"aps":{"alert":"hello"}}"#, authorization: String? = nil
    ) async -> Answer {
        var headers = [HTTP2Header("authorization", authorization ?? "bearer \(jwt)", neverIndex: true)]
        headers.append(HTTP2Header("apns-topic", topic))
        if let type { headers.append(HTTP2Header("apns-push-type", type)) }
        if let priority { headers.append(HTTP2Header("apns-priority", String(priority))) }
        if let expiration { headers.append(HTTP2Header("apns-expiration", String(expiration))) }
        if let collapseID { headers.append(HTTP2Header("apns-collapse-id", collapseID)) }
        if let apnsID { headers.append(HTTP2Header("apns-id", apnsID)) }
        let request = HTTP2ClientRequest(
            path: "/3/device/\(token)", authority: "localhost", headers: headers, body: Array(payload.utf8))
        switch await client.send(request) {
        case .response(let status, let headers, let body):
            let json = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
            return Answer(
                status: status, reason: json?["reason"] as? String,
                timestamp: (json?["timestamp"] as? NSNumber)?.int64Value,
                apnsID: headers.first { $0.name == "apns-id" }?.value)
        case .notProcessed(let reason), .failed(let reason, _):
            return Answer(status: -1, reason: "transport: \(reason)", timestamp: nil, apnsID: nil)
        }
    }

    func close() { client.close() }
}

/// A gateway in this process with one enrolled device, its token for the bundle, and a provider.
struct Harness: Sendable {
    let directory: TemporaryDirectory
    let gateway: Gateway
    let curl: CurlHTTPClient
    let device: DeviceClient
    let token: String
    let provider: Provider

    /// `store(directory)` gives the gateway's store (default: SQLite in the directory, as configured, or a fresh
    /// PostgreSQL cluster for `.postgres`).
    static func start(
        backend: StoreBackend = .sqlite, clock: ManualClock? = nil,
        configure: (inout GatewayConfiguration) -> Void = { _ in },
        store: ((TemporaryDirectory) throws -> any GatewayStore)? = nil
    ) async throws -> Harness {
        let directory = try TemporaryDirectory()
        let postgres = try await backend.settings()
        let gateway = try GatewayFixture.start(in: directory, clock: clock, store: try store?(directory)) {
            $0.postgres = postgres
            configure(&$0)
        }
        let curl = try CurlHTTPClient()
        let device = try await DeviceClient.enroll(
            curl: curl, port: gateway.devicePort, secret: try gateway.makeEnrollmentSecret())
        let token = try await device.token(topic: GatewayFixture.bundleID)
        let issuedAt = (clock?.wallMilliseconds ?? Gateway.systemMilliseconds()) / 1000
        let provider = try await Provider.connect(port: gateway.providerPort, issuedAt: issuedAt)
        return Harness(
            directory: directory, gateway: gateway, curl: curl, device: device, token: token, provider: provider)
    }

    /// Sends a push with `{"n":<n>}` as payload and expects 200.
    func push(
        _ n: Int, token: String? = nil, topic: String = GatewayFixture.bundleID, type: String = "alert",
        priority: Int? = nil, expiration: Int64? = nil, collapseID: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let answer = await provider.push(
            token: token ?? self.token, topic: topic, type: type,
            priority: priority ?? (type == "background" ? 5 : nil),
            expiration: expiration, collapseID: collapseID, payload: #"{"n":\#(n)}"#)
        #expect(
            answer.status == 200, "push \(n): \(answer.status) \(answer.reason ?? "")", sourceLocation: sourceLocation)
    }

    /// The `n` of a push record's `{"n":…}` payload.
    static func number(_ push: ChannelRecord.Push) -> Int? {
        guard let data = Data(base64Encoded: push.payload),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object["n"] as? Int
    }

    /// Opens the channel and reads the hello record.
    func channel() async throws -> Channel {
        let channel = try await device.channel()
        let hello = try await channel.next()
        guard hello.type == "hello" else { throw FixtureError("expected hello, got \(hello)") }
        return channel
    }

    /// The `n` of the next `count` pushes on `channel`.
    func numbers(_ channel: Channel, count: Int) async throws -> [Int] {
        var result: [Int] = []
        for _ in 0..<count { result.append(Self.number(try await channel.nextPush()) ?? -1) }
        return result
    }

    func stop() async {
        provider.close()
        await curl.shutdown()
        await gateway.shutdown(gracePeriod: .seconds(1))
    }
}
