import Foundation
import RouseAPNs
import RouseCurl
import RouseMockAPNs
import RouseTestSupport
import Testing

private typealias C = ConformanceFixture

/// Every documented reason, produced by rule by the real server over real TLS and read by an independent
/// HTTP/2 client (libcurl).
@Suite("Conformance: every reason over TLS with libcurl", .timeLimit(.minutes(2)))
struct ConformanceReasonTests {
    struct Case: CustomTestStringConvertible, Sendable {
        var reason: String
        var status: Int
        var edit: @Sendable (inout [(name: String, value: String)], inout CurlRequest) -> Void
        var testDescription: String { "\(status) \(reason)" }
    }

    static let cases: [Case] = [
        Case(reason: "MethodNotAllowed", status: 405) { _, r in r.method = "PUT" },
        Case(reason: "BadPath", status: 404) { _, r in
            r.url = r.url.replacingOccurrences(of: "/3/device/", with: "/3/devices/")
        },
        Case(reason: "MissingDeviceToken", status: 400) { _, r in
            // Without the prefix the request keeps its token and the case fails on its status.
            if let prefix = r.url.range(of: "/3/device/") { r.url = String(r.url[..<prefix.upperBound]) }
        },
        Case(reason: "BadDeviceToken", status: 400) { _, r in
            r.url = r.url.replacingOccurrences(of: C.voipToken, with: "zz12")
        },
        Case(reason: "BadDeviceToken", status: 400) { _, r in
            r.url = r.url.replacingOccurrences(of: C.voipToken, with: C.productionToken)
        },
        Case(reason: "DuplicateHeaders", status: 400) { h, _ in h.append(("apns-topic", "\(C.bundle).voip")) },
        Case(reason: "MissingProviderToken", status: 403) { h, _ in h.set("authorization", nil) },
        Case(reason: "InvalidProviderToken", status: 403) { h, _ in h.set("authorization", "bearer garbage") },
        Case(reason: "InvalidProviderToken", status: 403) { h, _ in
            h.set("authorization", "bearer " + C.jwt(C.productionKey, keyID: "ROUSEKEY01"))  // wrong signature
        },
        Case(reason: "ExpiredProviderToken", status: 403) { h, _ in
            h.set("authorization", "bearer " + C.jwt(issuedAt: APNsTime.now().adding(seconds: -3700)))
        },
        Case(reason: "BadEnvironmentKeyIdInToken", status: 403) { h, _ in
            h.set("authorization", "bearer " + C.jwt(C.productionKey, keyID: "ROUSEPROD1"))
        },
        Case(reason: "BadMessageId", status: 400) { h, _ in h.set("apns-id", "12345") },
        Case(reason: "BadExpirationDate", status: 400) { h, _ in h.set("apns-expiration", "soon") },
        Case(reason: "BadPriority", status: 400) { h, _ in h.set("apns-priority", "7") },
        Case(reason: "BadPriority", status: 400) { h, r in
            h.set("apns-push-type", "background")
            h.set("apns-topic", C.bundle)
            h.set("apns-priority", "10")
            r.url = r.url.replacingOccurrences(of: C.voipToken, with: C.alertToken)
        },
        Case(reason: "InvalidPushType", status: 400) { h, _ in h.set("apns-push-type", "telegram") },
        Case(reason: "BadTopic", status: 400) { h, _ in h.set("apns-topic", C.bundle) },
        Case(reason: "BadCollapseId", status: 400) { h, _ in
            h.set("apns-collapse-id", String(repeating: "x", count: 65))
        },
        Case(reason: "MissingTopic", status: 400) { h, _ in h.set("apns-topic", nil) },
        Case(reason: "TopicDisallowed", status: 400) { h, _ in h.set("apns-topic", "com.example.other.voip") },
        Case(reason: "PayloadEmpty", status: 400) { _, r in r.body = [] },
        Case(reason: "PayloadTooLarge", status: 413) { _, r in r.body = Array(repeating: 0x20, count: 5121) },
        Case(reason: "PayloadTooLarge", status: 413) { h, r in
            h.set("apns-push-type", "alert")
            h.set("apns-topic", C.bundle)
            r.url = r.url.replacingOccurrences(of: C.voipToken, with: C.alertToken)
            r.body = Array(repeating: 0x20, count: 4097)
        },
        Case(reason: "PayloadTooLarge", status: 413) { _, r in r.body = Array(repeating: 0x20, count: 1 << 20) },
        Case(reason: "DeviceTokenNotForTopic", status: 400) { _, r in
            r.url = r.url.replacingOccurrences(of: C.voipToken, with: C.alertToken)
        },
        Case(reason: "Unregistered", status: 410) { _, r in
            r.url = r.url.replacingOccurrences(of: C.voipToken, with: C.goneToken)
        },
        Case(reason: "ExpiredToken", status: 410) { _, r in
            r.url = r.url.replacingOccurrences(of: C.voipToken, with: C.expiredToken)
        },
    ]

    @Test(arguments: cases)
    func reason(_ testCase: Case) async throws {
        let fixture = try C()
        let client = try CurlHTTPClient()
        let response = try await client.send(fixture.voipRequest(testCase.edit))
        await client.shutdown()
        await fixture.shutdown()
        #expect(response.status == testCase.status)
        #expect(response.reason == testCase.reason)
        #expect(response.header("content-type") == "application/json")
        #expect(response.header("apns-id") != nil)
        #expect(fixture.mock.records().first?.reason?.rawValue == testCase.reason)
    }

    @Test("200: apns-id echoed, apns-unique-id in sandbox, empty body; a generated id when absent")
    func success() async throws {
        let fixture = try C()
        let client = try CurlHTTPClient()
        let id = "5f0c3a8e-7d8b-4b2a-9c41-2b1f0e6a9d11"
        let echoed = try await client.send(fixture.voipRequest { h, _ in h.set("apns-id", id) })
        let generated = try await client.send(fixture.voipRequest())
        await client.shutdown()
        await fixture.shutdown()
        #expect(echoed.status == 200)
        #expect(echoed.header("apns-id") == id)
        #expect(echoed.header("apns-unique-id") != nil)
        #expect(echoed.body.isEmpty)
        let generatedID = try #require(generated.header("apns-id"))
        #expect(APNsRules.isCanonicalUUID(generatedID))
        #expect(generatedID != id)
    }

    @Test("410 carries the timestamp in milliseconds")
    func unregisteredTimestamp() async throws {
        let fixture = try C()
        let client = try CurlHTTPClient()
        let response = try await client.send(
            fixture.voipRequest { _, r in r.url = r.url.replacingOccurrences(of: C.voipToken, with: C.goneToken) })
        await client.shutdown()
        await fixture.shutdown()
        #expect(APNsErrorBody.parse(response.body)?.timestamp == C.goneSince.milliseconds)
    }

    @Test("production answers without apns-unique-id")
    func production() async throws {
        let fixture = try C { $0.environment = .production }
        let client = try CurlHTTPClient()
        let response = try await client.send(
            fixture.voipRequest { h, _ in
                h.set("authorization", "bearer " + C.jwt(C.productionKey, keyID: "ROUSEPROD1"))
            })
        await client.shutdown()
        await fixture.shutdown()
        #expect(response.status == 200)
        #expect(response.header("apns-unique-id") == nil)
    }

    @Test("429 TooManyRequests per device token")
    func tooManyRequests() async throws {
        let fixture = try C { $0.perTokenRateLimit = MockRateLimit(maxRequests: 2, windowMilliseconds: 60_000) }
        let client = try CurlHTTPClient()
        var statuses: [Int] = []
        for _ in 0..<3 { statuses.append(try await client.send(fixture.voipRequest()).status) }
        let last = try await client.send(fixture.voipRequest())
        await client.shutdown()
        await fixture.shutdown()
        #expect(statuses == [200, 200, 429])
        #expect(last.reason == "TooManyRequests")
    }

    @Test(
        "scripted reasons (no rule can produce them): 500, 503, 403 Forbidden, BadEnvironmentKeyInToken",
        arguments: [
            ("InternalServerError", 500), ("ServiceUnavailable", 503), ("Shutdown", 503), ("Forbidden", 403),
            ("BadEnvironmentKeyInToken", 403),
        ])
    func scripted(reason: String, status: Int) async throws {
        let fixture = try C()
        let script =
            #"{"faults":[{"match":{"nth":1},"action":{"status":{"status":\#(status),"reason":"\#(reason)","count":2}}}]}"#
        for rule in try MockFaultScript.parse(json: Array(script.utf8)) { fixture.mock.addFault(rule) }
        let client = try CurlHTTPClient()
        let first = try await client.send(fixture.voipRequest())
        let second = try await client.send(fixture.voipRequest())
        let third = try await client.send(fixture.voipRequest())
        await client.shutdown()
        await fixture.shutdown()
        #expect(first.status == status && first.reason == reason)
        #expect(second.status == status && second.reason == reason)
        #expect(third.status == 200, "a burst of 2 ends")
    }
}
