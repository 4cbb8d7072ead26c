import Crypto
import Foundation
import RouseAPNs
import RouseMockAPNs

/// Shared fixtures for the engine tests: one team key (sandbox), a registry of known tokens, a request
/// builder with valid defaults.
struct EngineFixture {
    static let t0 = APNsTime(seconds: 1_800_000_000)
    static let key = P256.Signing.PrivateKey()
    static let productionKey = P256.Signing.PrivateKey()
    static let topicKey = P256.Signing.PrivateKey()
    static let voipToken = "aa" + String(repeating: "01", count: 31)
    static let alertToken = "bb" + String(repeating: "02", count: 31)
    static let goneToken = "cc" + String(repeating: "03", count: 31)
    static let expiredToken = "dd" + String(repeating: "04", count: 31)
    static let productionToken = "ee" + String(repeating: "05", count: 31)

    static func token(_ key: P256.Signing.PrivateKey = key, kid: String = "KEY0000001", iat: APNsTime = t0) -> String {
        (try? ProviderToken(keyID: kid, teamID: "TEAM000001", issuedAt: iat.seconds).signed(with: key)) ?? ""
    }

    /// One token string per test run (ECDSA signatures are randomized).
    static let bearer = "bearer " + token()

    static var keys: APNsKeyRegistry {
        APNsKeyRegistry([
            APNsSigningKey(
                teamID: "TEAM000001", keyID: "KEY0000001", publicKey: key.publicKey, environments: [.sandbox],
                scope: .team(bundleIDs: ["com.example.app"])
            ),
            APNsSigningKey(
                teamID: "TEAM000001", keyID: "KEY0000002", publicKey: productionKey.publicKey,
                environments: [.production]
            ),
            APNsSigningKey(
                teamID: "TEAM000001", keyID: "KEY0000003", publicKey: topicKey.publicKey, environments: [.sandbox],
                scope: .topics(["com.example.app"])
            ),
        ])
    }

    static var devices: DeviceTokenRegistry {
        var registry = DeviceTokenRegistry(unknownTokens: .reject)
        registry.set(voipToken, .init(topics: ["com.example.app.voip"]))
        registry.set(alertToken, .init(topics: ["com.example.app"]))
        registry.set(goneToken, .init(state: .unregistered(since: APNsTime(milliseconds: 1_700_000_000_123))))
        registry.set(expiredToken, .init(state: .expired))
        registry.set(productionToken, .init(environment: .production))
        return registry
    }

    static func configuration(_ edit: (inout MockAPNsConfiguration) -> Void = { _ in }) -> MockAPNsConfiguration {
        var configuration = MockAPNsConfiguration(environment: .sandbox, keys: keys, devices: devices)
        edit(&configuration)
        return configuration
    }

    static func mock(_ edit: (inout MockAPNsConfiguration) -> Void = { _ in }) -> MockAPNs {
        MockAPNs(configuration: configuration(edit), startedAt: t0)
    }

    /// A valid VoIP push request.
    static func request(
        streamID: Int32 = 1,
        _ edit: (inout MockRequest) -> Void = { _ in }
    ) -> MockRequest {
        var request = MockRequest(
            method: "POST",
            path: "/3/device/" + voipToken,
            headers: [
                (name: "authorization", value: bearer),
                (name: "apns-push-type", value: "voip"),
                (name: "apns-topic", value: "com.example.app.voip"),
                (name: "apns-expiration", value: "0"),
            ],
            body: Array(#"{"aps":{}}"#.utf8),
            streamID: streamID
        )
        edit(&request)
        return request
    }
}

extension MockRequest {
    /// Replaces (or removes, with `nil`) a header, keeping wire order.
    mutating func set(_ name: String, _ value: String?) {
        headers.removeAll { $0.name == name }
        if let value { headers.append((name: name, value: value)) }
    }
}

extension MockDecision {
    /// The status and reason of a `.respond` decision.
    var statusAndReason: (Int, String?)? {
        guard let response else { return nil }
        let body = String(decoding: response.body, as: UTF8.self)
        guard let start = body.range(of: #""reason":""#) else { return (response.status, nil) }
        let rest = body[start.upperBound...]
        return (response.status, rest.prefix { $0 != "\"" }.description)
    }
}
