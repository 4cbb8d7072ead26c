import Foundation
import RouseAgentCore
import Testing

/// The UnifiedPush distributor's registration book and argument rules (docs/unifiedpush.md).
struct UnifiedPushBookTests {
    static func registration(_ token: String, service: String = "org.example.App", vapid: String? = nil, at: Int64 = 0)
        -> UnifiedPushBook.Registration
    {
        UnifiedPushBook.Registration(
            token: token, service: service, version: 2, description: nil, vapid: vapid, subscription: "sub-" + token,
            endpoint: "https://push.example/wp/sub-" + token, createdAt: at)
    }

    @Test func aKnownTokenIsTheSameRegistrationAnotherServiceCannotTakeItAndANewKeyNeedsANewSubscription() {
        var book = UnifiedPushBook()
        #expect(book.admit(service: "org.example.App", token: "t1", vapid: nil) == .new(replacing: nil))
        let first = Self.registration("t1")
        book.add(first)
        #expect(book.admit(service: "org.example.App", token: "t1", vapid: nil) == .known(first))
        #expect(book.admit(service: "org.example.Other", token: "t1", vapid: nil) == .tokenTaken)
        #expect(book.admit(service: "org.example.App", token: "t1", vapid: "K") == .new(replacing: first))
        // Re-registered with the key: the old subscription is to be deleted.
        var keyed = Self.registration("t1", vapid: "K")
        keyed.subscription = "sub-t1-keyed"
        book.add(keyed)
        #expect(book.registrations == [keyed])
        #expect(book.pendingDeletions == ["sub-t1"])
        book.deleted("sub-t1")
        #expect(book.pendingDeletions.isEmpty)
        #expect(book.registration(subscription: "sub-t1-keyed")?.token == "t1")
    }

    @Test func updatingARegistrationInPlaceKeepsItsSubscription() {
        var book = UnifiedPushBook()
        var registration = Self.registration("t1")
        book.add(registration)
        registration.version = 1
        registration.description = "Chat"
        book.add(registration)
        #expect(book.registrations == [registration])
        #expect(book.pendingDeletions.isEmpty, "an update in place deleted its own subscription")
    }

    @Test func capsPerAppAndPerDevice() {
        var book = UnifiedPushBook()
        for index in 0..<3 { book.add(Self.registration("a\(index)", service: "org.example.A")) }
        #expect(
            book.admit(service: "org.example.A", token: "a3", vapid: nil, maximumPerApp: 3, maximumPerDevice: 10)
                == .overAppLimit)
        #expect(
            book.admit(service: "org.example.B", token: "b0", vapid: nil, maximumPerApp: 3, maximumPerDevice: 3)
                == .overDeviceLimit)
        // A known token is never refused by a cap: the app re-registers at every start.
        #expect(
            book.admit(service: "org.example.A", token: "a0", vapid: nil, maximumPerApp: 3, maximumPerDevice: 3)
                == .known(Self.registration("a0", service: "org.example.A")))
    }

    @Test func removingListsTheSubscriptionForDeletionAndSurvivesCoding() throws {
        var book = UnifiedPushBook()
        book.add(Self.registration("t1"))
        book.add(Self.registration("t2"))
        #expect(book.remove(token: "t1")?.token == "t1")
        #expect(book.remove(token: "unknown") == nil)
        #expect(book.pendingDeletions == ["sub-t1"])
        var state = AgentState()
        state.unifiedPush = book
        let decoded = try JSONDecoder().decode(AgentState.self, from: JSONEncoder().encode(state))
        #expect(decoded.unifiedPush == book)
        // State written by an older agent has no `unifiedPush` member.
        let older = try JSONEncoder().encode(AgentState())
        #expect(!String(decoding: older, as: UTF8.self).contains("unifiedPush"))
        let old = try JSONDecoder().decode(AgentState.self, from: older)
        #expect(old.unifiedPush == nil)
    }

    @Test func thirtyDaysWithoutAnAcknowledgementCallForAPingVersionOneAppsAreNeverPinged() {
        let day: Int64 = 24 * 3600 * 1000
        var book = UnifiedPushBook()
        book.add(Self.registration("t2", at: 0))
        var v1 = Self.registration("t1", at: 0)
        v1.version = 1
        book.add(v1)
        #expect(book.silent(nowMilliseconds: 30 * day - 1).isEmpty)
        #expect(book.silent(nowMilliseconds: 30 * day).map(\.token) == ["t2"])
        book.acknowledged(token: "t2", nowMilliseconds: 29 * day)
        #expect(book.silent(nowMilliseconds: 30 * day).isEmpty)
        #expect(book.silent(nowMilliseconds: 59 * day).map(\.token) == ["t2"])
        // An acknowledgement never moves the time back.
        book.acknowledged(token: "t2", nowMilliseconds: day)
        #expect(book.registration(token: "t2")?.lastAckAt == 29 * day)
    }

    @Test(arguments: [
        ("", false), (String(repeating: "x", count: 100), true), (String(repeating: "x", count: 101), false),
        (String(repeating: "é", count: 50), true), (String(repeating: "é", count: 51), false),
    ])
    func tokens(_ token: String, valid: Bool) {
        #expect((UnifiedPushArguments.checkToken(token) == nil) == valid)
    }

    @Test(arguments: [
        ("org.kde.tokodon", true), ("org.example.App_2-x", true), ("single", false), ("org..kde", false),
        ("org.2kde", false), (":1.42", false), ("org.kde/x", false), ("org.kde.tokodon.", false),
        ("org." + String(repeating: "a", count: 252), false),
    ])
    func services(_ name: String, valid: Bool) {
        #expect((UnifiedPushArguments.checkService(name) == nil) == valid)
    }

    @Test func descriptions() {
        #expect(UnifiedPushArguments.checkDescription(String(repeating: "d", count: 100)) == nil)
        #expect(UnifiedPushArguments.checkDescription(String(repeating: "d", count: 101)) != nil)
    }

    @Test func vapidKeysMustBeUncompressedP256PointsInBase64URL() {
        let point = [UInt8(0x04)] + (1...64).map { UInt8($0) }
        let key = Data(point).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(key.count == 87)
        #expect(UnifiedPushArguments.checkVAPID(key) == nil)
        #expect(UnifiedPushArguments.base64URLDecode(key) == point)
        // A compressed point's prefix, padding, the standard alphabet, a wrong length: refused.
        let compressed = "A" + key.dropFirst()
        #expect(UnifiedPushArguments.checkVAPID(compressed) != nil)
        #expect(UnifiedPushArguments.checkVAPID(key + "=") != nil)
        #expect(UnifiedPushArguments.checkVAPID(String(key.dropLast()) + "+") != nil)
        #expect(UnifiedPushArguments.checkVAPID(String(key.dropLast())) != nil)
        // Non-zero trailing bits: not a canonical encoding.
        #expect(UnifiedPushArguments.base64URLDecode("AB") == nil)
        #expect(UnifiedPushArguments.base64URLDecode("AA") == [0])
        #expect(UnifiedPushArguments.base64URLDecode("A") == nil)
    }
}
