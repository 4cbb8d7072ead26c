import Foundation
import RouseWire
import Testing

/// One recorded body: its bytes as written before the models existed (the gateway's hand-written replies, the
/// agent's interpolated requests) and the value each one is.
struct RecordedDeviceBody: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: String
    let encodes: @Sendable () -> String
    let decodes: @Sendable (String) throws -> Bool
    let foundation: @Sendable () throws -> Data

    init<Message: DeviceAPIMessage>(_ name: String, _ bytes: String, _ message: Message) {
        self.name = name
        self.bytes = bytes
        encodes = { message.json }
        decodes = { text in try Message.decode(Array(text.utf8)) == message }
        foundation = { try JSONEncoder().encode(message) }
    }

    var testDescription: String { name }
}

@Suite("Device REST API bodies: one model per request and reply, the recorded bytes of both sides")
struct DeviceAPIRecordedTests {
    static let credential = "d0a1b2c3d4e5f60718293." + String(repeating: "5a", count: 32)
    static let token = String(repeating: "c3", count: 32)
    static let subscription = "q2Jx1mN0uVwT8sY4kR7fA3bC6dE9gH2iJ5lM8nO1pQ0"
    static let vapid =
        "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM"

    /// Requests as the agent wrote them (`GatewayAPI`, `HandlerTable.report()`, `GatewayAPI+WebPush`).
    static let requests: [RecordedDeviceBody] = [
        .init(
            "enroll", #"{"secret":"00112233445566778899aabbccddeeff"}"#,
            DeviceEnrollRequest(secret: "00112233445566778899aabbccddeeff")),
        .init("tokens", #"{"topic":"com.example.rouse.voip"}"#, DeviceTokenRequest(topic: "com.example.rouse.voip")),
        .init("ack", #"{"ids":["12","4611686018427387907"]}"#, DeviceAckRequest(ids: ["12", "4611686018427387907"])),
        .init("ack, one", #"{"ids":["1"]}"#, DeviceAckRequest(ids: ["1"])),
        .init(
            "handlers",
            #"{"handlers":[{"topic":"com.example.other","strikes":3,"voipBlocked":true},"#
                + #"{"topic":"com.example.rouse","strikes":0,"voipBlocked":false}]}"#,
            DeviceHandlerReport(handlers: [
                .init(topic: "com.example.other", strikes: 3, voipBlocked: true),
                .init(topic: "com.example.rouse", strikes: 0, voipBlocked: false),
            ])),
        .init("handlers, none", #"{"handlers":[]}"#, DeviceHandlerReport(handlers: [])),
        .init(
            "webpush", #"{"app":"org.kde.tokodon","token":"reg-1","vapid":"\#(vapid)"}"#,
            WebPushSubscriptionRequest(app: "org.kde.tokodon", token: "reg-1", vapid: vapid)),
        .init(
            "webpush, no VAPID", #"{"app":"org.kde.tokodon","token":"reg-2"}"#,
            WebPushSubscriptionRequest(app: "org.kde.tokodon", token: "reg-2", vapid: nil)),
        .init("urgency", #"{"urgency":"very-low"}"#, WebPushUrgencyRequest(urgency: .veryLow)),
    ]

    /// Replies as the gateway wrote them (`GatewayCore+Device`, `GatewayCore+WebPush`, `DeviceReply.error`).
    static let replies: [RecordedDeviceBody] = [
        .init(
            "enroll, secret", #"{"deviceID":"d0a1b2c3d4e5f60718293","credential":"\#(credential)"}"#,
            DeviceEnrollReply(deviceID: "d0a1b2c3d4e5f60718293", credential: credential)),
        .init(
            "enroll, certificate", #"{"deviceID":"rouse-device-1"}"#,
            DeviceEnrollReply(deviceID: "rouse-device-1", credential: nil)),
        .init(
            "tokens", #"{"token":"\#(token)","topic":"com.example.rouse","createdAt":1700000000123}"#,
            DeviceToken(token: token, topic: "com.example.rouse", createdAt: 1_700_000_000_123)),
        .init(
            "tokens, list",
            #"{"tokens":[{"token":"\#(token)","topic":"com.example.rouse","createdAt":1700000000123},"#
                + #"{"token":"ab","topic":"com.example.rouse.voip","createdAt":1}]}"#,
            DeviceTokenList(tokens: [
                DeviceToken(token: token, topic: "com.example.rouse", createdAt: 1_700_000_000_123),
                DeviceToken(token: "ab", topic: "com.example.rouse.voip", createdAt: 1),
            ])),
        .init("tokens, none", #"{"tokens":[]}"#, DeviceTokenList(tokens: [])),
        .init(
            "token revoked", #"{"token":"\#(token)","revokedAt":1700000000456}"#,
            DeviceRevocation(.token, token, revokedAt: 1_700_000_000_456)),
        .init(
            "subscription revoked", #"{"id":"\#(subscription)","revokedAt":1700000000456}"#,
            DeviceRevocation(.id, subscription, revokedAt: 1_700_000_000_456)),
        .init("ack", #"{"acked":2,"unknown":1}"#, DeviceAckReply(acked: 2, unknown: 1)),
        .init(
            "handlers", #"{"handlers":2,"reportedAt":1700000000789}"#,
            DeviceHandlerReportReply(handlers: 2, reportedAt: 1_700_000_000_789)),
        .init(
            "error", #"{"error":"badJSON","detail":"$.ids[0]: expected String"}"#,
            DeviceAPIFailure(error: "badJSON", detail: "$.ids[0]: expected String")),
        .init(
            "error, quoted", #"{"error":"badAck","detail":"$.ids[0]: '\"x\\' is not a delivery id"}"#,
            DeviceAPIFailure(error: "badAck", detail: #"$.ids[0]: '"x\' is not a delivery id"#)),
        .init(
            "webpush",
            #"{"app":"org.kde.tokodon","createdAt":1700000000000,"endpoint":"https://push.example/wp/\#(subscription)","#
                + #""id":"\#(subscription)","token":"reg-1","vapid":"\#(vapid)"}"#,
            WebPushSubscription(
                id: subscription, endpoint: "https://push.example/wp/\(subscription)", app: "org.kde.tokodon",
                token: "reg-1", vapid: vapid, createdAt: 1_700_000_000_000)),
        .init(
            "webpush, list",
            #"{"subscriptions":[{"app":"a","createdAt":5,"endpoint":"https://p/wp/\#(subscription)","#
                + #""id":"\#(subscription)","token":"t"}]}"#,
            WebPushSubscriptionList(subscriptions: [
                WebPushSubscription(
                    id: subscription, endpoint: "https://p/wp/\(subscription)", app: "a", token: "t", vapid: nil,
                    createdAt: 5)
            ])),
        .init("urgency", #"{"urgency":"high"}"#, WebPushUrgencyRequest(urgency: .high)),
    ]

    @Test(arguments: requests + replies)
    func theWriterWritesTheRecordedBytesAndTheReaderReadsThem(body: RecordedDeviceBody) throws {
        #expect(body.encodes() == body.bytes)
        #expect(try body.decodes(body.bytes))
    }

    @Test(arguments: requests + replies)
    func theWriterAgreesWithFoundationsEncoder(body: RecordedDeviceBody) throws {
        // Member for member what Foundation's encoding of the model is (the order aside).
        let written = try JSONSerialization.jsonObject(with: Data(body.encodes().utf8)) as? NSDictionary
        let encoded = try JSONSerialization.jsonObject(with: body.foundation()) as? NSDictionary
        #expect(written != nil && written == encoded)
    }

    @Test func subscriptionsAreWhatTheSortedKeysEncoderWrote() throws {
        // The gateway wrote subscriptions with a sorted-keys encoder; the model's writer is byte for byte the same.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for case let subscription as WebPushSubscription in [
            WebPushSubscription(
                id: Self.subscription, endpoint: "https://push.example:8443/wp/\(Self.subscription)", app: "org.x",
                token: "reg-1", vapid: Self.vapid, createdAt: 1_700_000_000_000),
            WebPushSubscription(id: "i", endpoint: "https://p/wp/i", app: "a", token: "t", vapid: nil, createdAt: 0),
        ] as [Any] {
            #expect(String(decoding: try encoder.encode(subscription), as: UTF8.self) == subscription.json)
            let list = WebPushSubscriptionList(subscriptions: [subscription, subscription])
            #expect(String(decoding: try encoder.encode(list), as: UTF8.self) == list.json)
        }
    }

    @Test func everyStringIsEscaped() throws {
        let hostile = "a\"b\\c\nd\u{1}é/😀"
        let messages: [any DeviceAPIMessage] = [
            DeviceEnrollRequest(secret: hostile), DeviceTokenRequest(topic: hostile), DeviceAckRequest(ids: [hostile]),
            DeviceHandlerReport(handlers: [.init(topic: hostile, strikes: -1, voipBlocked: true)]),
            DeviceEnrollReply(deviceID: hostile, credential: hostile), DeviceRevocation(.id, hostile, revokedAt: -1),
            DeviceAPIFailure(error: hostile, detail: hostile),
        ]
        for message in messages {
            #expect(try Self.roundTrips(message), "\(message.json)")
        }
    }

    private static func roundTrips<Message: DeviceAPIMessage>(_ message: Message) throws -> Bool {
        try Message.decode(Array(message.json.utf8)) == message
    }

    @Test(arguments: [
        (#"{"ids":[1]}"#, "$.ids[0]: expected String"),
        (#"{"ids":"12"}"#, "$.ids: expected Array<Any>"),
        (#"{"ids":null}"#, "$.ids: expected Array<Any>, found null"),
        (#"{"id":["12"]}"#, "$.ids: missing"),
    ])
    func malformedRequestsNameTheMemberAtFault(body: String, detail: String) {
        #expect(throws: DeviceAPIDecodingError(detail: detail)) { try DeviceAckRequest.decode(Array(body.utf8)) }
    }

    @Test func malformedHandlerReportsNameTheMemberAtFault() {
        #expect(throws: DeviceAPIDecodingError(detail: "$.handlers[0].strikes: expected Int")) {
            try DeviceHandlerReport.decode(
                Array(#"{"handlers":[{"topic":"t","strikes":"2","voipBlocked":false}]}"#.utf8))
        }
        #expect(throws: DeviceAPIDecodingError(detail: "$.handlers[1].voipBlocked: missing")) {
            try DeviceHandlerReport.decode(
                Array(#"{"handlers":[{"topic":"t","strikes":1,"voipBlocked":false},{"topic":"u","strikes":1}]}"#.utf8))
        }
        #expect(throws: DeviceAPIDecodingError(detail: "$.topic: missing")) {
            try DeviceTokenRequest.decode(Array("{}".utf8))
        }
        do {
            _ = try DeviceEnrollRequest.decode(Array("not json".utf8))
            Issue.record("decoded")
        } catch {
            #expect(error.detail.hasPrefix("$: "), "\(error.detail)")
        }
        do {
            _ = try DeviceEnrollReply.decode(Array(#"["deviceID"]"#.utf8))
            Issue.record("decoded")
        } catch {
            #expect(error.detail.hasPrefix("$: expected "), "\(error.detail)")
        }
    }

    @Test func unknownMembersAreIgnoredAsInChannelRecords() throws {
        #expect(
            try DeviceTokenRequest.decode(Array(#"{"topic":"com.example.rouse","later":[1,{"x":2}]}"#.utf8))
                == DeviceTokenRequest(topic: "com.example.rouse"))
        #expect(
            try DeviceAckReply.decode(Array(#"{"acked":1,"unknown":0,"window":64}"#.utf8))
                == DeviceAckReply(acked: 1, unknown: 0))
    }
}
