import RouseSQLite

/// One SQLite transaction (or read snapshot) behind `GatewayStoreTransaction`.
///
/// Every statement's SQL is fixed text with `?` parameters, compiled once per connection (`SQLiteConnection` keeps
/// them): on the push path, compiling an insert with the backlog triggers cost more than running it. Lists of ids go
/// in one JSON array argument (`json_each`) so their statements stay the same too; lists of device ids (admin pages,
/// at most a page long) get one `?` each and are compiled for their one use.
struct SQLiteTransaction: GatewayStoreTransaction {
    let db: SQLiteConnection

    /// `ids` as one JSON array argument for `json_each(?)`.
    private static func jsonArray(_ ids: [Int64]) -> String { "[" + ids.map(String.init).joined(separator: ",") + "]" }

    /// `count` parameter marks, `?,?,?`.
    private static func marks(_ count: Int) -> String { Array(repeating: "?", count: count).joined(separator: ",") }

    private static let pushColumns =
        "seq, device_id, token, topic, push_type, priority, apns_id, collapse_id, expiration, expires_at, "
        + "received_at, payload"

    private static func push(_ row: SQLiteRow) throws -> StoredPush {
        StoredPush(
            id: try row.int64("seq"), deviceID: try row.string("device_id"), token: try row.string("token"),
            topic: try row.string("topic"), pushType: try row.optionalString("push_type"),
            priority: try row.int("priority"), apnsID: try row.string("apns_id"),
            collapseID: try row.optionalString("collapse_id"), expiration: try row.optionalInt64("expiration"),
            expiresAt: try row.int64("expires_at"), receivedAt: try row.int64("received_at"),
            payload: try row.optionalBytes("payload") ?? [])
    }

    private static func seq(_ row: SQLiteRow) throws -> Int64 { try row.int64("seq") }

    func insertPush(_ push: StoredPush) throws -> Int64 {
        try db.run(
            """
            INSERT INTO pushes(device_id, token, topic, push_type, priority, apns_id, collapse_id, expiration,
                expires_at, received_at, is_voip, payload) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)
            """,
            [
                push.deviceID, push.token, push.topic, push.pushType, push.priority, push.apnsID, push.collapseID,
                push.expiration, push.expiresAt, push.receivedAt, push.isVoIP, push.payload,
            ])
        return db.lastInsertedRowID
    }

    func deletePending(deviceID: String, topic: String, collapseID: String) throws -> [Int64] {
        try db.rows(
            "DELETE FROM pushes WHERE device_id = ? AND topic = ? AND collapse_id = ? RETURNING seq",
            [deviceID, topic, collapseID], Self.seq)
    }

    func deletePendingBackground(deviceID: String, topic: String) throws -> [Int64] {
        try db.rows(
            "DELETE FROM pushes WHERE device_id = ? AND topic = ? AND push_type = 'background' RETURNING seq",
            [deviceID, topic], Self.seq)
    }

    func pending(deviceID: String, excluding: Set<Int64>, limit: Int, now: Int64, webPushMinimum: Int) throws
        -> [StoredPush]
    {
        guard limit > 0 else { return [] }
        return try db.rows(
            "SELECT \(Self.pushColumns) FROM pushes WHERE device_id = ? AND expires_at > ? "
                + "AND (push_type IS NOT 'webpush' OR priority >= ?) "
                + "AND seq NOT IN (SELECT value FROM json_each(?)) ORDER BY is_voip DESC, seq LIMIT ?",
            [deviceID, now, webPushMinimum, Self.jsonArray(excluding.sorted()), limit], Self.push)
    }

    func acknowledge(deviceID: String, ids: [Int64]) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        try db.run(
            "DELETE FROM pushes WHERE device_id = ? AND seq IN (SELECT value FROM json_each(?))",
            [deviceID, Self.jsonArray(ids)])
        return db.changes
    }

    func deleteExpired(now: Int64) throws -> Int {
        try db.run("DELETE FROM pushes WHERE expires_at <= ?", [now])
        return db.changes
    }

    func pendingList(deviceID: String?, limit: Int) throws -> [StoredPush] {
        if let deviceID {
            return try db.rows(
                "SELECT \(Self.pushColumns) FROM pushes WHERE device_id = ? ORDER BY seq LIMIT ?", [deviceID, limit],
                Self.push)
        }
        return try db.rows("SELECT \(Self.pushColumns) FROM pushes ORDER BY seq LIMIT ?", [limit], Self.push)
    }

    func pendingCounts(deviceIDs: [String]) throws -> [String: Int] {
        guard !deviceIDs.isEmpty else { return [:] }
        return Self.counts(
            try db.rows(
                "SELECT device_id, pushes FROM device_backlog WHERE device_id IN (\(Self.marks(deviceIDs.count)))",
                deviceIDs, cached: false, Self.count))
    }

    func pendingTotal() throws -> Int {
        try db.row("SELECT coalesce(sum(pushes), 0) AS total FROM device_backlog") { try $0.int("total") } ?? 0
    }

    func pendingCounts() throws -> [String: Int] {
        Self.counts(try db.rows("SELECT device_id, pushes FROM device_backlog", [], Self.count))
    }

    private static func count(_ row: SQLiteRow) throws -> (String, Int) {
        (try row.string("device_id"), try row.int("pushes"))
    }

    private static func counts(_ rows: [(String, Int)]) -> [String: Int] {
        Dictionary(rows, uniquingKeysWith: { _, last in last })
    }

    func trimBacklog(_ owner: BacklogOwner, pushes maxPushes: Int, bytes maxBytes: Int) throws -> [(
        id: Int64, pushType: String?
    )] {
        let totals: (pushes: Int, bytes: Int)? =
            switch owner {
            case .token(let token):
                try db.row("SELECT pushes, bytes FROM token_backlog WHERE token = ?", [token]) {
                    (try $0.int("pushes"), try $0.int("bytes"))
                }
            case .device(let deviceID):
                try db.row("SELECT pushes, bytes FROM device_backlog WHERE device_id = ?", [deviceID]) {
                    (try $0.int("pushes"), try $0.int("bytes"))
                }
            }
        guard var (pushes, bytes) = totals else { return [] }
        var dropped: [(id: Int64, pushType: String?)] = []
        var after: Int64 = 0
        while pushes > maxPushes || bytes > maxBytes {
            let page = try oldest(owner, after: after, limit: max(pushes - maxPushes, 16))
            if page.isEmpty { break }
            for row in page where pushes > maxPushes || bytes > maxBytes {
                dropped.append((row.seq, row.pushType))
                after = row.seq
                pushes -= 1
                bytes -= row.size
            }
        }
        if !dropped.isEmpty {
            try db.run(
                "DELETE FROM pushes WHERE seq IN (SELECT value FROM json_each(?))", [Self.jsonArray(dropped.map(\.id))])
        }
        return dropped
    }

    /// The owner's oldest pending pushes after `seq`: by the token index, or for a device by merging its VoIP and
    /// other pushes (the device index orders `is_voip` first), so neither needs a sort of the whole backlog.
    private func oldest(_ owner: BacklogOwner, after seq: Int64, limit: Int) throws -> [(
        seq: Int64, pushType: String?, size: Int
    )] {
        let columns = "seq, push_type, length(payload) AS size"
        let read = { (row: SQLiteRow) throws -> (seq: Int64, pushType: String?, size: Int) in
            (try row.int64("seq"), try row.optionalString("push_type"), try row.int("size"))
        }
        switch owner {
        case .token(let token):
            return try db.rows(
                "SELECT \(columns) FROM pushes WHERE token = ? AND seq > ? ORDER BY seq LIMIT ?", [token, seq, limit],
                read)
        case .device(let deviceID):
            var rows: [(seq: Int64, pushType: String?, size: Int)] = []
            for isVoIP in [0, 1] {
                rows += try db.rows(
                    "SELECT \(columns) FROM pushes WHERE device_id = ? AND is_voip = ? AND seq > ? ORDER BY seq LIMIT ?",
                    [deviceID, isVoIP, seq, limit], read)
            }
            rows.sort { $0.seq < $1.seq }
            return Array(rows.prefix(limit))
        }
    }

    // MARK: Devices

    private static let deviceColumns = "id, authentication, credential_hash, created_at, revoked_at"

    private static func device(_ row: SQLiteRow) throws -> DeviceRecord {
        DeviceRecord(
            id: try row.string("id"),
            authentication: DeviceRecord.Authentication(rawValue: try row.string("authentication")) ?? .secret,
            credentialHash: try row.optionalBytes("credential_hash"), createdAt: try row.int64("created_at"),
            revokedAt: try row.optionalInt64("revoked_at"))
    }

    func device(_ id: String) throws -> DeviceRecord? {
        try db.row("SELECT \(Self.deviceColumns) FROM devices WHERE id = ?", [id], Self.device)
    }

    func insertDevice(_ device: DeviceRecord) throws {
        try db.run(
            "INSERT INTO devices(id, authentication, credential_hash, created_at, revoked_at) VALUES (?,?,?,?,?)",
            [device.id, device.authentication.rawValue, device.credentialHash, device.createdAt, device.revokedAt])
    }

    func revokeDevice(_ id: String, at time: Int64) throws -> Bool {
        try db.run("UPDATE devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [time, id])
        guard db.changes > 0 else { return false }
        try db.run("UPDATE tokens SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL", [time, id])
        try db.run(
            "UPDATE webpush_subscriptions SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL", [time, id])
        try db.run("DELETE FROM pushes WHERE device_id = ?", [id])
        return true
    }

    func devices() throws -> [DeviceRecord] {
        try db.rows("SELECT \(Self.deviceColumns) FROM devices ORDER BY id", [], Self.device)
    }

    func devices(after: String?, limit: Int) throws -> [DeviceRecord] {
        try db.rows(
            "SELECT \(Self.deviceColumns) FROM devices WHERE id > ? ORDER BY id LIMIT ?", [after ?? "", limit],
            Self.device)
    }

    func devicesRevoked(since time: Int64) throws -> [String] {
        try db.rows("SELECT id FROM devices WHERE revoked_at >= ?", [time]) { try $0.string("id") }
    }

    func insertEnrollmentSecret(hash: [UInt8], createdAt: Int64, expiresAt: Int64?) throws {
        try db.run(
            "INSERT INTO enrollment_secrets(hash, created_at, expires_at) VALUES (?,?,?)", [hash, createdAt, expiresAt])
    }

    func consumeEnrollmentSecret(hash: [UInt8], deviceID: String, now: Int64) throws -> Bool {
        try db.run(
            """
            UPDATE enrollment_secrets SET used_at = ?, device_id = ?
            WHERE hash = ? AND used_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
            """, [now, deviceID, hash, now])
        return db.changes > 0
    }

    // MARK: Tokens

    private static let tokenColumns = "token, device_id, topic, created_at, revoked_at"

    private static func token(_ row: SQLiteRow) throws -> TokenRecord {
        TokenRecord(
            token: try row.string("token"), deviceID: try row.string("device_id"), topic: try row.string("topic"),
            createdAt: try row.int64("created_at"), revokedAt: try row.optionalInt64("revoked_at"))
    }

    func token(_ token: String) throws -> TokenRecord? {
        try db.row("SELECT \(Self.tokenColumns) FROM tokens WHERE token = ?", [token], Self.token)
    }

    func insertToken(_ token: TokenRecord) throws {
        try db.run(
            "INSERT INTO tokens(token, device_id, topic, created_at, revoked_at) VALUES (?,?,?,?,?)",
            [token.token, token.deviceID, token.topic, token.createdAt, token.revokedAt])
    }

    func tokens(deviceID: String?) throws -> [TokenRecord] {
        if let deviceID {
            return try db.rows(
                "SELECT \(Self.tokenColumns) FROM tokens WHERE device_id = ? ORDER BY created_at, token", [deviceID],
                Self.token)
        }
        return try db.rows("SELECT \(Self.tokenColumns) FROM tokens ORDER BY created_at, token", [], Self.token)
    }

    func tokens(offset: Int, limit: Int) throws -> [TokenRecord] {
        try db.rows(
            "SELECT \(Self.tokenColumns) FROM tokens ORDER BY token LIMIT ? OFFSET ?", [limit, offset], Self.token)
    }

    func revokeToken(_ token: String, deviceID: String, at time: Int64) throws -> [Int64]? {
        try db.run(
            "UPDATE tokens SET revoked_at = ? WHERE token = ? AND device_id = ? AND revoked_at IS NULL",
            [time, token, deviceID])
        guard db.changes > 0 else { return nil }
        return try db.rows("DELETE FROM pushes WHERE token = ? RETURNING seq", [token], Self.seq)
    }

    // MARK: Handler reports

    private static let reportColumns = "device_id, topic, strikes, voip_blocked, reported_at"

    private static func handlerReport(_ row: SQLiteRow) throws -> HandlerReport {
        HandlerReport(
            deviceID: try row.string("device_id"), topic: try row.string("topic"), strikes: try row.int("strikes"),
            voipBlocked: try row.bool("voip_blocked"), reportedAt: try row.int64("reported_at"))
    }

    func replaceHandlerReports(deviceID: String, _ reports: [HandlerReport]) throws {
        try db.run("DELETE FROM handler_reports WHERE device_id = ?", [deviceID])
        for report in reports {
            try db.run(
                """
                INSERT INTO handler_reports(device_id, topic, strikes, voip_blocked, reported_at)
                VALUES (?,?,?,?,?)
                """, [deviceID, report.topic, report.strikes, report.voipBlocked, report.reportedAt])
        }
    }

    func handlerReports(deviceID: String?) throws -> [HandlerReport] {
        if let deviceID {
            return try db.rows(
                "SELECT \(Self.reportColumns) FROM handler_reports WHERE device_id = ? ORDER BY topic", [deviceID],
                Self.handlerReport)
        }
        return try db.rows(
            "SELECT \(Self.reportColumns) FROM handler_reports ORDER BY device_id, topic", [], Self.handlerReport)
    }

    func handlerReports(deviceIDs: [String]) throws -> [HandlerReport] {
        guard !deviceIDs.isEmpty else { return [] }
        return try db.rows(
            "SELECT \(Self.reportColumns) FROM handler_reports WHERE device_id IN (\(Self.marks(deviceIDs.count))) "
                + "ORDER BY device_id, topic", deviceIDs, cached: false, Self.handlerReport)
    }

    // MARK: Provider keys

    func providerKeys(includeRevoked: Bool) throws -> [ProviderKeyRecord] {
        let columns = "key_id, team_id, public_key_pem, topics, created_at, revoked_at"
        let sql =
            includeRevoked
            ? "SELECT \(columns) FROM provider_keys ORDER BY key_id"
            : "SELECT \(columns) FROM provider_keys WHERE revoked_at IS NULL ORDER BY key_id"
        return try db.rows(sql) { row in
            ProviderKeyRecord(
                keyID: try row.string("key_id"), teamID: try row.string("team_id"),
                publicKeyPEM: try row.string("public_key_pem"),
                topics: try row.optionalString("topics").map { $0.split(separator: ",").map(String.init) },
                createdAt: try row.int64("created_at"), revokedAt: try row.optionalInt64("revoked_at"))
        }
    }

    func upsertProviderKey(_ key: ProviderKeyRecord) throws {
        try db.run(
            """
            INSERT INTO provider_keys(key_id, team_id, public_key_pem, topics, created_at, revoked_at)
            VALUES (?,?,?,?,?,NULL)
            ON CONFLICT(key_id) DO UPDATE SET team_id = excluded.team_id,
                public_key_pem = excluded.public_key_pem, topics = excluded.topics
            """, [key.keyID, key.teamID, key.publicKeyPEM, key.topics?.joined(separator: ","), key.createdAt])
    }

    func revokeProviderKey(_ keyID: String, at time: Int64) throws -> Bool {
        try db.run("UPDATE provider_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL", [time, keyID])
        return db.changes > 0
    }

    func unrevokeProviderKey(_ keyID: String) throws -> Bool {
        try db.run("UPDATE provider_keys SET revoked_at = NULL WHERE key_id = ? AND revoked_at IS NOT NULL", [keyID])
        return db.changes > 0
    }
}
