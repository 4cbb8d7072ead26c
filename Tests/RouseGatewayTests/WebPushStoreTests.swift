import Foundation
import RouseGateway
import RouseTestSupport
import Testing

/// The WebPush part of the store contract (schema 7), on SQLite and a real PostgreSQL 15.
@Suite("WebPush subscriptions in the store, SQLite and PostgreSQL", .timeLimit(.minutes(5)), .stopsWhatItStarts)
struct WebPushStoreTests {
    static func message(_ subscription: String, urgency: Int, device: String = "d1") -> StoredPush {
        StoredPush(
            id: 0, deviceID: device, token: subscription, topic: subscription,
            pushType: WebPushSubscriptionRecord.pushType, priority: urgency, apnsID: "m", collapseID: nil,
            expiration: 60, expiresAt: 10_000, receivedAt: 1_000, payload: [1, 2, 3])
    }

    @Test(
        "subscriptions: insert, read, list, revoke drops pending messages; pending filters by urgency",
        arguments: StoreBackend.allCases)
    func subscriptions(backend: StoreBackend) async throws {
        let opened = try await backend.open()
        let store = opened.store
        let first = WebPushSubscriptionRecord(
            id: "s1", deviceID: "d1", app: "org.example.a", token: "r1", vapidKey: "k", createdAt: 1, revokedAt: nil)
        let second = WebPushSubscriptionRecord(
            id: "s2", deviceID: "d1", app: "org.example.b", token: "r2", vapidKey: nil, createdAt: 2, revokedAt: nil)
        let ids = try store.write { t in
            try t.insertWebPushSubscription(first)
            try t.insertWebPushSubscription(second)
            return try [
                t.insertPush(Self.message("s1", urgency: 0)), t.insertPush(Self.message("s1", urgency: 2)),
                t.insertPush(Self.message("s2", urgency: 3)),
                t.insertPush(StoreContractTests.push(device: "d1")),
            ]
        }
        #expect(try store.read { try $0.webPushSubscription("s1") } == first)
        #expect(try store.read { try $0.webPushSubscription("nope") } == nil)
        #expect(try store.read { try $0.webPushSubscriptions(deviceID: "d1") } == [first, second])
        // A channel without the feature (minimum above 3) gets no WebPush message; minimum normal: 2 and 3 only.
        let none = try store.read {
            try $0.pending(deviceID: "d1", excluding: [], limit: 10, now: 1_000, webPushMinimum: 4)
        }
        #expect(none.map(\.id) == [ids[3]])
        let normal = try store.read {
            try $0.pending(deviceID: "d1", excluding: [], limit: 10, now: 1_000, webPushMinimum: 2)
        }
        #expect(normal.map(\.id) == [ids[1], ids[2], ids[3]])
        #expect(try store.read { try $0.pending(deviceID: "d1", excluding: [], limit: 10, now: 1_000) }.count == 4)
        // Revoking drops its pending messages and only its own; another device cannot revoke it.
        #expect(try store.write { try $0.revokeWebPushSubscription("s1", deviceID: "d2", at: 5) } == nil)
        let dropped = try store.write { try $0.revokeWebPushSubscription("s1", deviceID: "d1", at: 5) }
        #expect(dropped.map { Set($0) } == Set([ids[0], ids[1]]))
        #expect(try store.read { try $0.webPushSubscription("s1") }?.revokedAt == 5)
        #expect(try store.read { try $0.webPushSubscriptions(deviceID: "d1") } == [second])
        #expect(try store.write { try $0.revokeWebPushSubscription("s1", deviceID: "d1", at: 6) } == nil)
        // Revoking the device revokes its subscriptions.
        let device = DeviceRecord(id: "d1", authentication: .secret, credentialHash: [1], createdAt: 0, revokedAt: nil)
        try store.write { try $0.insertDevice(device) }
        #expect(try store.write { try $0.revokeDevice("d1", at: 7) })
        #expect(try store.read { try $0.webPushSubscription("s2") }?.revokedAt == 7)
    }
}
