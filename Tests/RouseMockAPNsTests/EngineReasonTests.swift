import RouseAPNs
import RouseMockAPNs
import Testing

typealias F = EngineFixture

/// One request per reason the engine produces by rule, through `MockAPNs.handle`.
@Suite("Engine: every reason by rule")
struct EngineReasonTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var reason: String
        var status: Int
        var edit: @Sendable (inout MockRequest) -> Void
        var testDescription: String { reason }
    }

    static let cases: [Case] = [
        Case(reason: "MethodNotAllowed", status: 405) { $0.method = "GET" },
        Case(reason: "BadPath", status: 404) { $0.path = "/3/devices/ab" },
        Case(reason: "MissingDeviceToken", status: 400) { $0.path = "/3/device/" },
        Case(reason: "BadDeviceToken", status: 400) { $0.path = "/3/device/xyz" },
        Case(reason: "BadDeviceToken", status: 400) { $0.path = "/3/device/0123" },  // unknown, policy reject
        Case(reason: "BadDeviceToken", status: 400) { $0.path = "/3/device/" + F.productionToken },
        Case(reason: "DuplicateHeaders", status: 400) { $0.headers.append((name: "apns-topic", value: "x")) },
        Case(reason: "MissingProviderToken", status: 403) { $0.set("authorization", nil) },
        Case(reason: "InvalidProviderToken", status: 403) { $0.set("authorization", "bearer x.y.z") },
        Case(reason: "ExpiredProviderToken", status: 403) {
            $0.set("authorization", "bearer " + F.token(iat: F.t0.adding(seconds: -3601)))
        },
        Case(reason: "BadEnvironmentKeyIdInToken", status: 403) {
            $0.set("authorization", "bearer " + F.token(F.productionKey, kid: "KEY0000002"))
        },
        Case(reason: "BadMessageId", status: 400) { $0.set("apns-id", "not-a-uuid") },
        Case(reason: "BadExpirationDate", status: 400) { $0.set("apns-expiration", "tomorrow") },
        Case(reason: "BadPriority", status: 400) { $0.set("apns-priority", "7") },
        Case(reason: "BadPriority", status: 400) {
            $0.set("apns-push-type", "background")
            $0.set("apns-topic", "com.example.app")
        },
        Case(reason: "InvalidPushType", status: 400) { $0.set("apns-push-type", "fax") },
        Case(reason: "BadTopic", status: 400) { $0.set("apns-topic", "com.example.app") },
        Case(reason: "BadCollapseId", status: 400) { $0.set("apns-collapse-id", String(repeating: "c", count: 65)) },
        Case(reason: "MissingTopic", status: 400) { $0.set("apns-topic", nil) },
        Case(reason: "TopicDisallowed", status: 400) { $0.set("apns-topic", "com.example.other.voip") },
        Case(reason: "PayloadEmpty", status: 400) { $0.body = [] },
        Case(reason: "PayloadTooLarge", status: 413) { $0.body = [UInt8](repeating: 0x20, count: 5121) },
        Case(reason: "PayloadTooLarge", status: 413) { $0.bodyLength = 1_000_000 },  // body truncated by the kernel
        Case(reason: "DuplicateHeaders", status: 400) { $0.duplicatePseudoHeaders = true },
        Case(reason: "DeviceTokenNotForTopic", status: 400) { $0.path = "/3/device/" + F.alertToken },
        Case(reason: "Unregistered", status: 410) { $0.path = "/3/device/" + F.goneToken },
        Case(reason: "ExpiredToken", status: 410) { $0.path = "/3/device/" + F.expiredToken },
    ]

    @Test(arguments: cases)
    func reasonByRule(testCase: Case) {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "127.0.0.1:1"))
        let decision = mock.handle(F.request(testCase.edit), connection: &connection, now: F.t0)
        #expect(decision.statusAndReason?.0 == testCase.status)
        #expect(decision.statusAndReason?.1 == testCase.reason)
        #expect(
            decision.response?.headers.contains { $0.name == "content-type" && $0.value == "application/json" } == true)
        #expect(mock.records().first?.reason?.rawValue == testCase.reason)
    }

    @Test func unregisteredCarriesTimestamp() {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let decision = mock.handle(
            F.request { $0.path = "/3/device/" + F.goneToken }, connection: &connection, now: F.t0)
        #expect(
            String(decoding: decision.response?.body ?? [], as: UTF8.self)
                == #"{"reason":"Unregistered","timestamp":1700000000123}"#)
        let expired = mock.handle(
            F.request { $0.path = "/3/device/" + F.expiredToken }, connection: &connection, now: F.t0)
        #expect(String(decoding: expired.response?.body ?? [], as: UTF8.self) == #"{"reason":"ExpiredToken"}"#)
    }

    @Test func tooManyProviderTokenUpdates() {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        #expect(mock.handle(F.request(), connection: &connection, now: F.t0).response?.status == 200)
        let later = F.t0.adding(seconds: 600)
        let refreshed = F.request(streamID: 3) { $0.set("authorization", "bearer " + F.token(iat: later)) }
        #expect(
            mock.handle(refreshed, connection: &connection, now: later).statusAndReason?.1
                == "TooManyProviderTokenUpdates")
        #expect(mock.handle(refreshed, connection: &connection, now: later).statusAndReason?.0 == 429)
    }

    @Test func unrelatedKeyIdInToken() {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        #expect(mock.handle(F.request(), connection: &connection, now: F.t0).response?.status == 200)
        let topicKey = F.request(streamID: 3) {
            $0.set("authorization", "bearer " + F.token(F.topicKey, kid: "KEY0000003"))
        }
        #expect(
            mock.handle(topicKey, connection: &connection, now: F.t0.adding(seconds: 1300)).statusAndReason?.1
                == "UnrelatedKeyIdInToken")
    }

    @Test func tooManyRequests() {
        let mock = F.mock { $0.perTokenRateLimit = MockRateLimit(maxRequests: 2, windowMilliseconds: 1000) }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        var statuses: [Int] = []
        for (index, offset) in [0, 10, 20, 999, 1000, 1001, 1002].enumerated() {
            let decision = mock.handle(
                F.request(streamID: Int32(2 * index + 1)), connection: &connection,
                now: F.t0.adding(milliseconds: Int64(offset)))
            statuses.append(decision.response?.status ?? 0)
        }
        #expect(statuses == [200, 200, 429, 429, 200, 200, 429])
        #expect(mock.records().last?.reason == .tooManyRequests)
    }

    static let certificate = ProviderCertificate(
        subjectUID: "com.example.app",
        topics: ["com.example.app", "com.example.app.voip", "com.example.app.complication"],
        environments: [.sandbox]
    )

    @Test(arguments: [
        (ProviderCertificate.Verification.ok, [APNsEnvironment.sandbox], 200, String?.none),
        (.expired, [.sandbox], 403, "BadCertificate"),
        (.unknownCA, [.sandbox], 403, "BadCertificate"),
        (.ok, [.production], 403, "BadCertificateEnvironment"),
    ])
    func certificateConnections(
        verification: ProviderCertificate.Verification, environments: [APNsEnvironment], status: Int, reason: String?
    ) {
        var certificate = Self.certificate
        certificate.verification = verification
        certificate.environments = Set(environments)
        let mock = F.mock()
        var connection = mock.openConnection(
            info: MockConnectionInfo(id: 7, remoteAddress: "a", certificate: certificate))
        #expect(connection.advertisedMaxConcurrentStreams == 1000)
        let decision = mock.handle(F.request { $0.set("authorization", nil) }, connection: &connection, now: F.t0)
        #expect(decision.statusAndReason?.0 == status)
        #expect(decision.statusAndReason?.1 == reason)
    }

    @Test func certificateTopicRules() {
        let mock = F.mock()
        var connection = mock.openConnection(
            info: MockConnectionInfo(id: 7, remoteAddress: "a", certificate: Self.certificate))
        let missing = mock.handle(F.request { $0.set("apns-topic", nil) }, connection: &connection, now: F.t0)
        #expect(missing.statusAndReason?.1 == "MissingTopic")
        let other = mock.handle(
            F.request { $0.set("apns-topic", "com.example.other.voip") }, connection: &connection, now: F.t0)
        #expect(other.statusAndReason?.1 == "TopicDisallowed")
    }
}
