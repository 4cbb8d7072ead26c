import Foundation
import Logging
import RouseAPNs
import RouseClock
import RouseMockAPNs
import RouseSender
import RouseTestSupport
import Synchronization

/// An in-process mock APNs over real TLS (certs/), with the test keys, and senders pointed at it.
struct MockFixture {
    let mock: MockAPNs
    let server: MockAPNsServer

    static let bundle = "com.example.rouse"
    static let goneToken = "0a" + String(repeating: "11", count: 31)
    static let expiredToken = "0b" + String(repeating: "22", count: 31)
    static let voipOnlyToken = "0c" + String(repeating: "33", count: 31)
    static let productionToken = "0d" + String(repeating: "44", count: 31)
    static let goneSince: Int64 = 1_700_000_000_123

    /// The n-th distinct well-formed device token.
    static func token(_ n: Int) -> String { String(format: "%08x", n) + String(repeating: "ab", count: 28) }

    static var keys: APNsKeyRegistry {
        get throws {
            let json = try Data(contentsOf: URL(fileURLWithPath: Repository.cert("keys.json")))
            return try MockKeyFile.parse(json: Array(json)) { name in
                try? String(contentsOfFile: Repository.cert(name), encoding: .utf8)
            }
        }
    }

    static var devices: DeviceTokenRegistry {
        var registry = DeviceTokenRegistry()
        registry.set(goneToken, .init(state: .unregistered(since: APNsTime(milliseconds: goneSince))))
        registry.set(expiredToken, .init(state: .expired))
        registry.set(voipOnlyToken, .init(topics: [bundle + ".voip"]))
        registry.set(productionToken, .init(environment: .production))
        return registry
    }

    init(
        workers: Int = 1, _ edit: (inout MockAPNsConfiguration) -> Void = { _ in }
    ) throws {
        var configuration = MockAPNsConfiguration(
            environment: .sandbox, keys: try Self.keys, devices: Self.devices, recordLimit: 400_000)
        edit(&configuration)
        var logger = Logger(label: "test.mock")
        logger.logLevel = .warning
        mock = MockAPNs(configuration: configuration, startedAt: .now(), logger: logger)
        var options = MockAPNsServer.Options()
        options.certificateChainFile = Repository.cert("server.pem")
        options.privateKeyFile = Repository.cert("server.key")
        options.clientCAFile = Repository.cert("ca.pem")
        options.workers = workers
        server = try MockAPNsServer(mock: mock, options: options, logger: logger)
    }

    static var tokenCredentials: SenderCredentials {
        get throws {
            .token(
                keyPEM: try String(contentsOfFile: Repository.cert("apns-key.p8"), encoding: .utf8),
                keyID: "ROUSEKEY01", teamID: "ROUSETEAM1")
        }
    }

    func configuration(
        transport: SenderTransport = .native, credentials: SenderCredentials? = nil
    ) throws -> APNsSenderConfiguration {
        var configuration = APNsSenderConfiguration(
            endpoint: SenderEndpoint(host: "127.0.0.1", port: server.port),
            credentials: try credentials ?? Self.tokenCredentials)
        configuration.transport = transport
        configuration.trustRootsFile = Repository.cert("ca.pem")
        configuration.defaultDeadline = .seconds(20)
        return configuration
    }

    func sender(
        transport: SenderTransport = .native, credentials: SenderCredentials? = nil,
        clock: any RouseClock = SystemClock(), _ edit: (inout APNsSenderConfiguration) -> Void = { _ in }
    ) throws -> APNsSender {
        var configuration = try configuration(transport: transport, credentials: credentials)
        edit(&configuration)
        var logger = Logger(label: "test.sender")
        logger.logLevel = .error
        return try APNsSender(configuration: configuration, logger: logger, clock: clock)
    }

    static func voip(_ token: String, payload: String = #"{"aps":{}}"#) -> APNsPush {
        APNsPush(
            deviceToken: token, topic: bundle + ".voip", pushType: .voip, expiration: 0, payload: Array(payload.utf8))
    }

    static func background(_ token: String, size: Int = 0) -> APNsPush {
        var payload = #"{"aps":{"content-available":1}"#
        if size > payload.utf8.count + 10 {
            payload += #","pad":""# + String(repeating: "x", count: size - payload.utf8.count - 10) + "\""
        }
        payload += "}"
        return APNsPush(
            deviceToken: token, topic: bundle, pushType: .background, priority: .conservePower,
            payload: Array(payload.utf8))
    }

    func shutdown() async {
        await server.shutdown(gracePeriod: .milliseconds(100))
    }
}

/// Collects results from concurrent callbacks.
final class ResultBox: Sendable {
    private let results = Mutex<[PushResult]>([])

    func append(_ result: PushResult) { results.withLock { $0.append(result) } }
    var all: [PushResult] { results.withLock { $0 } }
}
