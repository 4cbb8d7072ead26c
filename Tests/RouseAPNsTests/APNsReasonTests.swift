import RouseAPNs
import Testing

@Suite("APNs reasons")
struct APNsReasonTests {
    static let table: [(String, Int)] = [
        ("BadCollapseId", 400), ("BadDeviceToken", 400), ("BadExpirationDate", 400), ("BadMessageId", 400),
        ("BadPriority", 400), ("BadTopic", 400), ("DeviceTokenNotForTopic", 400), ("DuplicateHeaders", 400),
        ("IdleTimeout", 400), ("InvalidPushType", 400), ("MissingDeviceToken", 400), ("MissingTopic", 400),
        ("PayloadEmpty", 400), ("TopicDisallowed", 400),
        ("BadCertificate", 403), ("BadCertificateEnvironment", 403), ("ExpiredProviderToken", 403),
        ("Forbidden", 403), ("InvalidProviderToken", 403), ("MissingProviderToken", 403),
        ("UnrelatedKeyIdInToken", 403), ("BadEnvironmentKeyIdInToken", 403), ("BadEnvironmentKeyInToken", 403),
        ("BadPath", 404), ("MethodNotAllowed", 405), ("ExpiredToken", 410), ("Unregistered", 410),
        ("PayloadTooLarge", 413), ("TooManyProviderTokenUpdates", 429), ("TooManyRequests", 429),
        ("InternalServerError", 500), ("ServiceUnavailable", 503), ("Shutdown", 503),
    ]

    @Test(arguments: table)
    func statusOfEveryKnownReason(name: String, status: Int) {
        let reason = APNsReason(rawValue: name)
        #expect(reason.isKnown)
        #expect(reason.status == status)
        #expect(APNsReason.known.contains(reason))
    }

    @Test func thirtyTwoDocumentedReasons() {
        #expect(APNsReason.documented.count == 32)
        #expect(Set(APNsReason.documented).count == 32)
        #expect(!APNsReason.documented.contains(.badEnvironmentKeyInToken))
        #expect(APNsReason.known.count == 33)
    }

    @Test func unknownReasonSurvivesVerbatim() {
        let reason = APNsReason(rawValue: "SomethingNew 🚀")
        #expect(reason.rawValue == "SomethingNew 🚀")
        #expect(!reason.isKnown)
        #expect(reason.status == nil)
        #expect(reason.retryPolicy == .never)
    }

    @Test(arguments: [
        APNsReason.badDeviceToken, .deviceTokenNotForTopic, .forbidden, .expiredToken, .unregistered,
        .payloadTooLarge,
    ])
    func neverRetried(reason: APNsReason) {
        #expect(reason.retryPolicy == .never)
    }

    @Test func retryPolicies() {
        #expect(APNsReason.tooManyRequests.retryPolicy == .afterDelay)
        #expect(APNsReason.internalServerError.retryPolicy == .withBackoff)
        #expect(APNsReason.serviceUnavailable.retryPolicy == .withBackoff)
        #expect(APNsReason.shutdown.retryPolicy == .withBackoff)
        #expect(APNsReason.expiredProviderToken.retryPolicy == .afterNewProviderToken)
    }

    @Test func tokenInvalidatingReasons() {
        #expect(APNsReason.unregistered.invalidatesDeviceToken)
        #expect(APNsReason.expiredToken.invalidatesDeviceToken)
        #expect(APNsReason.badDeviceToken.invalidatesDeviceToken)
        #expect(!APNsReason.tooManyRequests.invalidatesDeviceToken)
    }

    @Test func errorBody() {
        #expect(String(decoding: JSONText.errorBody(reason: .badTopic), as: UTF8.self) == #"{"reason":"BadTopic"}"#)
        #expect(
            String(decoding: JSONText.errorBody(reason: .unregistered, timestamp: 1_700_000_000_123), as: UTF8.self)
                == #"{"reason":"Unregistered","timestamp":1700000000123}"#
        )
        #expect(JSONText.escape("a\"b\\c\n\u{1}") == #"a\"b\\c\n\u0001"#)
    }
}

@Suite("APNs error bodies")
struct APNsErrorBodyTests {
    @Test(arguments: [
        (#"{"reason":"BadDeviceToken"}"#, APNsErrorBody?.some(APNsErrorBody(reason: .badDeviceToken))),
        (
            #"{"reason":"Unregistered","timestamp":1700000000123}"#,
            APNsErrorBody(reason: .unregistered, timestamp: 1_700_000_000_123)
        ),
        (
            #" { "timestamp" : 5 , "reason" : "Brand\u0020New" } "#,
            APNsErrorBody(reason: APNsReason(rawValue: "Brand New"), timestamp: 5)
        ),
        ("Maximum active streams violated for this endpoint.", nil),
        (#"{"reason":1}"#, nil),
        ("", nil),
        (String(repeating: " ", count: 5000) + #"{"reason":"X"}"#, nil),
    ])
    func parse(text: String, expected: APNsErrorBody?) {
        #expect(APNsErrorBody.parse(Array(text.utf8)) == expected)
    }

    @Test func roundTrip() {
        let body = APNsErrorBody(reason: .unregistered, timestamp: 42)
        #expect(APNsErrorBody.parse(body.bytes) == body)
    }
}

@Suite("apns-id generation")
struct APNsIDTests {
    @Test("generated ids are canonical v4 UUIDs and do not repeat (the sequence wraps without trapping)")
    func generated() {
        var seen = Set<String>()
        for _ in 0..<100_000 {
            let id = APNsID.random()
            #expect(APNsRules.isCanonicalUUID(id))
            seen.insert(id)
        }
        #expect(seen.count == 100_000)
        let sample = APNsID.random()
        #expect(sample[sample.index(sample.startIndex, offsetBy: 14)] == "4")
    }
}
