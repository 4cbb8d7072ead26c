import RouseSQLite

extension SQLiteTransaction {
    private static let subscriptionColumns = "id, device_id, app, token, vapid_key, created_at, revoked_at"

    private static func webPushSubscription(_ row: SQLiteRow) throws -> WebPushSubscriptionRecord {
        WebPushSubscriptionRecord(
            id: try row.string("id"), deviceID: try row.string("device_id"), app: try row.string("app"),
            token: try row.string("token"), vapidKey: try row.optionalString("vapid_key"),
            createdAt: try row.int64("created_at"), revokedAt: try row.optionalInt64("revoked_at"))
    }

    func insertWebPushSubscription(_ subscription: WebPushSubscriptionRecord) throws {
        try db.run(
            """
            INSERT INTO webpush_subscriptions(id, device_id, app, token, vapid_key, created_at, revoked_at)
            VALUES (?,?,?,?,?,?,?)
            """,
            [
                subscription.id, subscription.deviceID, subscription.app, subscription.token, subscription.vapidKey,
                subscription.createdAt, subscription.revokedAt,
            ])
    }

    func webPushSubscription(_ id: String) throws -> WebPushSubscriptionRecord? {
        try db.row(
            "SELECT \(Self.subscriptionColumns) FROM webpush_subscriptions WHERE id = ?", [id],
            Self.webPushSubscription)
    }

    func webPushSubscriptions(deviceID: String) throws -> [WebPushSubscriptionRecord] {
        try db.rows(
            "SELECT \(Self.subscriptionColumns) FROM webpush_subscriptions WHERE device_id = ? AND revoked_at IS NULL "
                + "ORDER BY created_at, id", [deviceID], Self.webPushSubscription)
    }

    func revokeWebPushSubscription(_ id: String, deviceID: String, at time: Int64) throws -> [Int64]? {
        try db.run(
            "UPDATE webpush_subscriptions SET revoked_at = ? WHERE id = ? AND device_id = ? AND revoked_at IS NULL",
            [time, id, deviceID])
        guard db.changes > 0 else { return nil }
        return try db.rows("DELETE FROM pushes WHERE token = ? RETURNING seq", [id]) { try $0.int64("seq") }
    }
}
