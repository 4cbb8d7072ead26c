import Crypto
import Foundation
import RouseAPNs
import RouseCurl
import RouseMockAPNs
import RouseTestSupport

/// A real `MockAPNsServer` over TLS, configured like a user's CI would: the keys in certs/keys.json plus a
/// production-only key and a topic-specific key, and a registry of device tokens in every state.
struct ConformanceFixture {
    static let bundle = "com.example.rouse"
    static let voipToken = "a1" + String(repeating: "10", count: 31)
    static let voipToken2 = "a2" + String(repeating: "11", count: 31)
    static let alertToken = "b2" + String(repeating: "20", count: 31)
    static let goneToken = "c3" + String(repeating: "30", count: 31)
    static let expiredToken = "d4" + String(repeating: "40", count: 31)
    static let productionToken = "e5" + String(repeating: "50", count: 31)
    static let goneSince = APNsTime(milliseconds: 1_760_000_000_123)

    /// ROUSEKEY01 of ROUSETEAM1, from certs/.
    static let teamKey: P256.Signing.PrivateKey = {
        let pem = (try? String(contentsOfFile: Repository.cert("apns-key.p8"), encoding: .utf8)) ?? ""
        return (try? ProviderToken.privateKey(pem: pem)) ?? P256.Signing.PrivateKey()
    }()
    static let productionKey = P256.Signing.PrivateKey()
    static let topicKey = P256.Signing.PrivateKey()

    static func jwt(
        _ key: P256.Signing.PrivateKey = teamKey, keyID: String = "ROUSEKEY01", teamID: String = "ROUSETEAM1",
        issuedAt: APNsTime = .now()
    ) -> String {
        (try? ProviderToken(keyID: keyID, teamID: teamID, issuedAt: issuedAt.seconds).signed(with: key)) ?? ""
    }

    let server: MockAPNsServer
    /// One provider token for the fixture's lifetime (a new token per request would be a token update).
    let bearer = "bearer " + Self.jwt()
    var mock: MockAPNs { server.mock }
    var url: String { "https://localhost:\(server.port)" }

    init(edit: (inout MockAPNsConfiguration) -> Void = { _ in }) throws {
        let keysFile = Repository.cert("keys.json")
        var keys = try MockKeyFile.parse(json: Array(try Data(contentsOf: URL(fileURLWithPath: keysFile)))) { name in
            try? String(contentsOfFile: Repository.cert(name), encoding: .utf8)
        }
        keys.insert(
            APNsSigningKey(
                teamID: "ROUSETEAM1", keyID: "ROUSEPROD1", publicKey: Self.productionKey.publicKey,
                environments: [.production]))
        keys.insert(
            APNsSigningKey(
                teamID: "ROUSETEAM1", keyID: "ROUSETOPIC", publicKey: Self.topicKey.publicKey,
                environments: [.sandbox], scope: .topics([Self.bundle])))
        var devices = DeviceTokenRegistry(unknownTokens: .reject)
        devices.set(Self.voipToken, .init(topics: ["\(Self.bundle).voip"]))
        devices.set(Self.voipToken2, .init(topics: ["\(Self.bundle).voip"]))
        devices.set(Self.alertToken, .init(topics: [Self.bundle]))
        devices.set(Self.goneToken, .init(state: .unregistered(since: Self.goneSince)))
        devices.set(Self.expiredToken, .init(state: .expired))
        devices.set(Self.productionToken, .init(environment: .production))
        var configuration = MockAPNsConfiguration(environment: .sandbox, keys: keys, devices: devices)
        edit(&configuration)
        var options = MockAPNsServer.Options()
        options.certificateChainFile = Repository.cert("server.pem")
        options.privateKeyFile = Repository.cert("server.key")
        options.clientCAFile = Repository.cert("ca.pem")
        server = try MockAPNsServer(
            mock: MockAPNs(configuration: configuration, startedAt: .now()), options: options)
    }

    /// A valid VoIP push for `voipToken` with token auth.
    func voipRequest(_ edit: (inout [(name: String, value: String)], inout CurlRequest) -> Void = { _, _ in })
        -> CurlRequest
    {
        var headers: [(name: String, value: String)] = [
            ("authorization", bearer), ("apns-push-type", "voip"),
            ("apns-topic", "\(Self.bundle).voip"), ("apns-expiration", "0"),
        ]
        var request = CurlRequest(
            method: "POST", url: "\(url)/3/device/\(Self.voipToken)", body: Array(#"{"aps":{},"call":"1"}"#.utf8),
            tls: CurlTLSOptions(caFile: Repository.cert("ca.pem")))
        edit(&headers, &request)
        request.headers = headers
        return request
    }

    func shutdown() async { await server.shutdown(gracePeriod: .seconds(1)) }
}

extension Array where Element == (name: String, value: String) {
    /// Replaces (or removes, with `nil`) a header.
    mutating func set(_ name: String, _ value: String?) {
        removeAll { $0.name == name }
        if let value { append((name: name, value: value)) }
    }
}

extension CurlResponse {
    /// The `reason` of an APNs error body.
    var reason: String? { APNsErrorBody.parse(body)?.reason.rawValue }
}
