import RouseAPNs
import Testing

@Suite("APNs request rules")
struct APNsRulesTests {
    @Test(arguments: [
        ("POST", nil), ("GET", APNsReason.methodNotAllowed), ("post", .methodNotAllowed), ("", .methodNotAllowed),
    ])
    func method(method: String, expected: APNsReason?) {
        #expect(APNsRules.checkMethod(method) == expected)
    }

    @Test(arguments: [
        ("/3/device/abcdef01", nil),
        ("/3/device/ABCDEF01", nil),
        ("/3/device/" + String(repeating: "ab", count: 100), nil),
        ("/3/device/", APNsReason.missingDeviceToken),
        ("/3/device", .missingDeviceToken),
        ("/3/devices/ab", .badPath),
        ("/2/device/ab", .badPath),
        ("/", .badPath),
        ("", .badPath),
        ("/3/device/abc", .badDeviceToken),
        ("/3/device/zz", .badDeviceToken),
        ("/3/device/ab/cd", .badDeviceToken),
        ("/3/device/ab?x=1", .badDeviceToken),
        ("/3/device/" + String(repeating: "a", count: 2000), .badDeviceToken),
    ])
    func path(path: String, expected: APNsReason?) {
        switch APNsRules.deviceToken(fromPath: path) {
        case .success(let token):
            #expect(expected == nil)
            #expect(path.hasSuffix(token))
        case .failure(let reason):
            #expect(reason == expected)
        }
    }

    @Test(arguments: [
        ("123e4567-e89b-12d3-a456-426614174000", true),
        ("123E4567-E89B-12D3-A456-426614174000", false),
        ("123e4567e89b12d3a456426614174000", false),
        ("123e4567-e89b-12d3-a456-4266141740000", false),
        ("123e4567-e89b-12d3-a456-42661417400", false),
        ("123e4567-e89b-12d3-a456_426614174000", false),
        ("g23e4567-e89b-12d3-a456-426614174000", false),
        ("", false),
    ])
    func apnsID(value: String, valid: Bool) {
        #expect(APNsRules.checkAPNsID(value) == (valid ? nil : .badMessageId))
    }

    @Test func generatedIDsAreCanonical() {
        for _ in 0..<100 { #expect(APNsRules.isCanonicalUUID(APNsID.random())) }
    }

    @Test(arguments: [
        ("0", Int64(0)), ("1700000000", 1_700_000_000), ("-1", nil), ("", nil), ("1.5", nil), (" 1", nil),
        ("99999999999999999999", nil),
    ])
    func expiration(value: String, expected: Int64?) {
        switch APNsRules.parseExpiration(value) {
        case .success(let parsed): #expect(parsed == expected)
        case .failure(let reason):
            #expect(expected == nil)
            #expect(reason == .badExpirationDate)
        }
    }

    @Test(arguments: [("10", 10), ("5", 5), ("1", 1), ("0", nil), ("05", nil), ("high", nil), ("", nil)])
    func priority(value: String, expected: Int?) {
        switch APNsRules.parsePriority(value) {
        case .success(let priority): #expect(priority.rawValue == expected)
        case .failure(let reason):
            #expect(expected == nil)
            #expect(reason == .badPriority)
        }
    }

    @Test(arguments: APNsPushType.known)
    func knownPushTypes(type: APNsPushType) {
        #expect(APNsRules.parsePushType(type.rawValue) == .success(type))
    }

    @Test(arguments: ["", "VOIP", "notification", "alert "])
    func unknownPushTypes(value: String) {
        #expect(APNsRules.parsePushType(value) == .failure(.invalidPushType))
    }

    @Test(arguments: [
        ("com.example.app", APNsPushType.alert, nil),
        ("com.example.app", .background, nil),
        ("com.example.app.voip", .voip, nil),
        ("com.example.app", .voip, APNsReason.badTopic),
        (".voip", .voip, .badTopic),
        ("com.example.app.complication", .complication, nil),
        ("com.example.app.pushkit.fileprovider", .fileprovider, nil),
        ("com.example.app.location-query", .location, nil),
        ("com.example.app.push-type.liveactivity", .liveactivity, nil),
        ("com.example.app.voip-ptt", .pushtotalk, nil),
        ("com.example.app.push-type.widgets", .widgets, nil),
        ("com.example.app.push-type.controls", .controls, nil),
        ("com.example.app.voip", .controls, .badTopic),
        ("com.apple.mgmt.External.1234", .mdm, nil),
        ("", .alert, .badTopic),
    ])
    func topicSuffix(topic: String, type: APNsPushType, expected: APNsReason?) {
        #expect(APNsRules.checkTopic(topic, pushType: type) == expected)
    }

    @Test func backgroundPriority() {
        #expect(APNsRules.checkPriority(.conservePower, pushType: .background) == nil)
        #expect(APNsRules.checkPriority(.immediate, pushType: .background) == .badPriority)
        #expect(APNsRules.checkPriority(.low, pushType: .background) == .badPriority)
        #expect(APNsRules.checkPriority(.immediate, pushType: .alert) == nil)
        #expect(APNsRules.checkPriority(APNsPriority(rawValue: 7), pushType: nil) == .badPriority)
    }

    @Test func collapseID() {
        #expect(APNsRules.checkCollapseID(String(repeating: "x", count: 64)) == nil)
        #expect(APNsRules.checkCollapseID(String(repeating: "x", count: 65)) == .badCollapseId)
        #expect(APNsRules.checkCollapseID(String(repeating: "é", count: 33)) == .badCollapseId)
    }

    @Test(arguments: [
        (0, APNsPushType.alert, Optional(APNsReason.payloadEmpty)), (1, .alert, nil), (4096, .alert, nil),
        (4097, .alert, .payloadTooLarge), (4097, .voip, nil), (5120, .voip, nil), (5121, .voip, .payloadTooLarge),
        (4097, .background, .payloadTooLarge),
    ])
    func payload(size: Int, type: APNsPushType, expected: APNsReason?) {
        #expect(APNsRules.checkPayload(byteCount: size, pushType: type) == expected)
    }

    @Test func duplicateHeaders() {
        let fields = [(name: "apns-topic", value: "a"), (name: "apns-topic", value: "b")]
        #expect(APNsRequestHeaders.parse(fields) == .failure(.duplicateHeaders))
        let unknownTwice = [(name: "x-custom", value: "a"), (name: "x-custom", value: "b")]
        #expect((try? APNsRequestHeaders.parse(unknownTwice).get()) != nil)
    }

    @Test func headerValidationOrder() throws {
        var headers = APNsRequestHeaders()
        headers.apnsID = "bad"
        headers.priority = "7"
        #expect(headers.validate() == .failure(.badMessageId))
        headers.apnsID = nil
        #expect(headers.validate() == .failure(.badPriority))
        headers.priority = "5"
        headers.pushType = "background"
        headers.topic = "com.example.app"
        headers.expiration = "0"
        headers.collapseID = "c"
        let valid = try headers.validate().get()
        #expect(valid.priority == .conservePower)
        #expect(valid.expiration == 0)
        headers.priority = nil
        #expect(headers.validate() == .failure(.badPriority))
    }
}

@Suite("APNs push pre-flight")
struct APNsPushTests {
    static func push(_ edit: (inout APNsPush) -> Void) -> APNsPush {
        var push = APNsPush(
            deviceToken: "abcdef0123456789",
            topic: "com.example.app.voip",
            pushType: .voip,
            expiration: 0,
            payload: Array(#"{"aps":{}}"#.utf8)
        )
        edit(&push)
        return push
    }

    @Test(arguments: [
        (push { _ in }, nil),
        (push { $0.deviceToken = "" }, APNsReason.missingDeviceToken),
        (push { $0.deviceToken = "xyz1" }, .badDeviceToken),
        (push { $0.apnsID = "ABC" }, .badMessageId),
        (push { $0.expiration = -5 }, .badExpirationDate),
        (push { $0.priority = APNsPriority(rawValue: 3) }, .badPriority),
        (push { $0.pushType = APNsPushType(rawValue: "fax") }, .invalidPushType),
        (push { $0.topic = "com.example.app" }, .badTopic),
        (push { $0.collapseID = String(repeating: "c", count: 65) }, .badCollapseId),
        (push { $0.payload = [] }, .payloadEmpty),
        (push { $0.payload = [UInt8](repeating: 0x20, count: 5121) }, .payloadTooLarge),
        (push { $0.payload = [UInt8](repeating: 0x20, count: 5120) }, nil),
        (
            push {
                $0.pushType = .background
                $0.topic = "com.example.app"
            }, .badPriority
        ),
        (
            push {
                $0.pushType = .background
                $0.topic = "com.example.app"
                $0.priority = .conservePower
            }, nil
        ),
    ])
    func preflight(push: APNsPush, expected: APNsReason?) {
        #expect(push.validate() == expected)
    }

    @Test func headerFields() {
        let push = Self.push {
            $0.apnsID = "123e4567-e89b-12d3-a456-426614174000"
            $0.priority = .immediate
            $0.collapseID = "call"
        }
        let fields = push.headerFields(authorization: "jwt")
        #expect(fields.first?.name == ":method")
        #expect(fields.first { $0.name == ":path" }?.value == "/3/device/abcdef0123456789")
        #expect(fields.first { $0.name == ":path" }?.indexing == .never)
        #expect(fields.first { $0.name == "authorization" }?.value == "bearer jwt")
        #expect(fields.first { $0.name == "authorization" }?.indexing == .never)
        #expect(fields.first { $0.name == "apns-expiration" }?.value == "0")
        #expect(fields.first { $0.name == "apns-id" }?.indexing == .firstTimeOnly)
        #expect(fields.first { $0.name == "apns-priority" }?.value == "10")
        #expect(push.headerFields(authorization: nil).contains { $0.name == "authorization" } == false)
    }
}
