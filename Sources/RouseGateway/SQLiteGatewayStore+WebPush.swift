import Foundation
import GRDB

extension SQLiteTransaction {
    private static func webPushSubscription(_ row: Row) -> WebPushSubscriptionRecord {
        WebPushSubscriptionRecord(
            id: row["id"], deviceID: row["device_id"], app: row["app"], token: row["token"],
            vapidKey: row["vapid_key"], createdAt: row["created_at"], revokedAt: row["revoked_at"])
    }

    func insertWebPushSubscription(_ subscription: WebPushSubscriptionRecord) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO webpush_subscriptions(id, device_id, app, token, vapid_key, created_at, revoked_at)
                VALUES (?,?,?,?,?,?,?)
                """
        ).execute(arguments: [
            subscription.id, subscription.deviceID, subscription.app, subscription.token, subscription.vapidKey,
            subscription.createdAt, subscription.revokedAt,
        ])
    }

    func webPushSubscription(_ id: String) throws -> WebPushSubscriptionRecord? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM webpush_subscriptions WHERE id = ?"), arguments: [id])
            .map(Self.webPushSubscription)
    }

    func webPushSubscriptions(deviceID: String) throws -> [WebPushSubscriptionRecord] {
        try Row.fetchAll(
            db.cachedStatement(
                sql:
                    "SELECT * FROM webpush_subscriptions WHERE device_id = ? AND revoked_at IS NULL ORDER BY created_at, id"
            ), arguments: [deviceID]
        ).map(Self.webPushSubscription)
    }

    func revokeWebPushSubscription(_ id: String, deviceID: String, at time: Int64) throws -> [Int64]? {
        try db.cachedStatement(
            sql: "UPDATE webpush_subscriptions SET revoked_at = ? WHERE id = ? AND device_id = ? AND revoked_at IS NULL"
        ).execute(arguments: [time, id, deviceID])
        guard db.changesCount > 0 else { return nil }
        return try Int64.fetchAll(
            db.cachedStatement(sql: "DELETE FROM pushes WHERE token = ? RETURNING seq"), arguments: [id])
    }
}
