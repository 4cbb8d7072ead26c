import RousePostgres

extension PostgresTransaction {
    private static let webPushColumns = "id, device_id, app, token, vapid_key, created_at, revoked_at"

    private static func webPushSubscriptions(_ result: PostgresResult) -> [WebPushSubscriptionRecord] {
        (0..<result.count).map { row in
            WebPushSubscriptionRecord(
                id: result.string(row, 0) ?? "", deviceID: result.string(row, 1) ?? "",
                app: result.string(row, 2) ?? "", token: result.string(row, 3) ?? "",
                vapidKey: result.string(row, 4), createdAt: result.int64(row, 5) ?? 0,
                revokedAt: result.int64(row, 6))
        }
    }

    func insertWebPushSubscription(_ subscription: WebPushSubscriptionRecord) throws {
        try query(
            """
            INSERT INTO webpush_subscriptions(id, device_id, app, token, vapid_key, created_at, revoked_at)
            VALUES ($1,$2,$3,$4,$5,$6,$7)
            """,
            [
                .init(subscription.id), .init(subscription.deviceID), .init(subscription.app),
                .init(subscription.token), .init(subscription.vapidKey), .init(subscription.createdAt),
                .init(subscription.revokedAt),
            ])
    }

    func webPushSubscription(_ id: String) throws -> WebPushSubscriptionRecord? {
        Self.webPushSubscriptions(
            try query(
                "SELECT \(Self.webPushColumns) FROM webpush_subscriptions WHERE id = $1", [.init(id)])
        ).first
    }

    func webPushSubscriptions(deviceID: String) throws -> [WebPushSubscriptionRecord] {
        Self.webPushSubscriptions(
            try query(
                "SELECT \(Self.webPushColumns) FROM webpush_subscriptions WHERE device_id = $1 AND revoked_at IS NULL "
                    + "ORDER BY created_at, id", [.init(deviceID)]))
    }

    func revokeWebPushSubscription(_ id: String, deviceID: String, at time: Int64) throws -> [Int64]? {
        let changed = try query(
            "UPDATE webpush_subscriptions SET revoked_at = $1 WHERE id = $2 AND device_id = $3 AND revoked_at IS NULL",
            [.init(time), .init(id), .init(deviceID)]
        ).affected
        guard changed > 0 else { return nil }
        let deleted = try query("DELETE FROM pushes WHERE token = $1 RETURNING seq", [.init(id)])
        return (0..<deleted.count).compactMap { deleted.int64($0, 0) }
    }
}
