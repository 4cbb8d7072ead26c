import Foundation
import GRDB

/// The SQLite store: one file in WAL mode with `synchronous=FULL`, through GRDB.
///
/// Durability argument: in WAL mode every COMMIT appends the transaction's pages to the `-wal` file, and with
/// `synchronous=FULL` SQLite fsyncs that file before COMMIT returns. The gateway answers 200 only after the
/// COMMIT holding the push returned, so from that moment the push survives a crash of the process (SIGKILL)
/// and of the machine (power loss): recovery replays the WAL. The cost, one fsync per transaction, is shared
/// by every push of a batch (the gateway commits concurrent pushes together). Checkpoints run automatically
/// (SQLite's default 1000 pages) and are themselves synced.
public final class SQLiteGatewayStore: GatewayStore {
    private let pool: DatabasePool
    /// The database file.
    public let path: String
    /// What opening the store did to the schema.
    public let migration: GatewaySchema.Migration

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    public init(path: String) throws(GatewayError) {
        self.path = path
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // GRDB sets NORMAL when it enables WAL on the writer connection; the pool keeps that one connection
            // for every write, so FULL set here stays in force.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        } catch {
            throw .storage("\(path): \(error)")
        }
        migration = try Self.migrate(pool, path: path)
    }

    /// Refuses a database newer than this build, then runs GRDB's migrations (the version is one of them).
    private static func migrate(_ pool: DatabasePool, path: String) throws(GatewayError) -> GatewaySchema.Migration {
        let found: Int
        do {
            found = try pool.read { db -> Int in
                if try db.tableExists("schema_version") {
                    return try Int.fetchOne(db, sql: "SELECT max(version) FROM schema_version") ?? 0
                }
                // Before version 4 the version is the number of GRDB migrations applied.
                if try db.tableExists("grdb_migrations") {
                    return try Int.fetchOne(db, sql: "SELECT count(*) FROM grdb_migrations") ?? 0
                }
                return 0
            }
        } catch {
            throw .storage("\(path): \(error)")
        }
        if found > GatewaySchema.version { throw GatewaySchema.tooNew(found, in: path) }
        do {
            try migrator.migrate(pool)
        } catch {
            throw .storage("\(path): \(error)")
        }
        return GatewaySchema.Migration(from: found, to: GatewaySchema.version)
    }

    public func write<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        do {
            return try pool.write { db in try body(SQLiteTransaction(db: db)) }
        } catch let error as GatewayError {
            throw error
        } catch {
            throw GatewayError.storage("\(path): \(error)")
        }
    }

    public func read<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        do {
            return try pool.read { db in try body(SQLiteTransaction(db: db)) }
        } catch let error as GatewayError {
            throw error
        } catch {
            throw GatewayError.storage("\(path): \(error)")
        }
    }

    /// The durability settings in force on the writer connection: `journal_mode` and `synchronous`
    /// (2 = FULL), for checks and the admin view.
    public func durabilitySettings() throws -> (journalMode: String, synchronous: Int) {
        do {
            return try pool.write { db in
                let mode = try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? ""
                let synchronous = try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
                return (mode, synchronous)
            }
        } catch {
            throw GatewayError.storage("\(path): \(error)")
        }
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE devices(
                        id TEXT PRIMARY KEY NOT NULL,
                        authentication TEXT NOT NULL,
                        credential_hash BLOB,
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER);
                    CREATE TABLE enrollment_secrets(
                        hash BLOB PRIMARY KEY NOT NULL,
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER,
                        used_at INTEGER,
                        device_id TEXT);
                    CREATE TABLE tokens(
                        token TEXT PRIMARY KEY NOT NULL,
                        device_id TEXT NOT NULL,
                        topic TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER);
                    CREATE INDEX tokens_by_device ON tokens(device_id);
                    CREATE TABLE pushes(
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        device_id TEXT NOT NULL,
                        token TEXT NOT NULL,
                        topic TEXT NOT NULL,
                        push_type TEXT,
                        priority INTEGER NOT NULL,
                        apns_id TEXT NOT NULL,
                        collapse_id TEXT,
                        expiration INTEGER,
                        expires_at INTEGER NOT NULL,
                        received_at INTEGER NOT NULL,
                        is_voip INTEGER NOT NULL,
                        payload BLOB NOT NULL);
                    CREATE INDEX pushes_by_device ON pushes(device_id, is_voip DESC, seq);
                    CREATE INDEX pushes_by_expiry ON pushes(expires_at);
                    CREATE TABLE provider_keys(
                        key_id TEXT PRIMARY KEY NOT NULL,
                        team_id TEXT NOT NULL,
                        public_key_pem TEXT NOT NULL,
                        topics TEXT,
                        created_at INTEGER NOT NULL,
                        revoked_at INTEGER);
                    """)
        }
        // Additive: what agents report about their handlers (strikes, VoIP launches stopped).
        migrator.registerMigration("v2-handler-reports") { db in
            try db.execute(
                sql: """
                    CREATE TABLE handler_reports(
                        device_id TEXT NOT NULL,
                        topic TEXT NOT NULL,
                        strikes INTEGER NOT NULL,
                        voip_blocked INTEGER NOT NULL,
                        reported_at INTEGER NOT NULL,
                        PRIMARY KEY(device_id, topic));
                    """)
        }
        // Storage quotas: pending pushes and payload bytes per token and per device, kept by triggers on every
        // insert and delete (acknowledgement, expiry, collapse, revocation, the CLI), so a quota check is one
        // lookup. The token index serves the token's oldest pushes and the deletes by token.
        migrator.registerMigration("v3-backlog-totals") { db in
            try db.execute(
                sql: """
                    CREATE INDEX pushes_by_token ON pushes(token);
                    CREATE TABLE token_backlog(
                        token TEXT PRIMARY KEY NOT NULL, pushes INTEGER NOT NULL, bytes INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE TABLE device_backlog(
                        device_id TEXT PRIMARY KEY NOT NULL, pushes INTEGER NOT NULL, bytes INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    INSERT INTO token_backlog SELECT token, count(*), sum(length(payload)) FROM pushes GROUP BY token;
                    INSERT INTO device_backlog
                        SELECT device_id, count(*), sum(length(payload)) FROM pushes GROUP BY device_id;
                    CREATE TRIGGER pushes_backlog_insert AFTER INSERT ON pushes BEGIN
                        INSERT INTO token_backlog(token, pushes, bytes) VALUES (NEW.token, 1, length(NEW.payload))
                            ON CONFLICT(token) DO UPDATE SET pushes = pushes + 1, bytes = bytes + excluded.bytes;
                        INSERT INTO device_backlog(device_id, pushes, bytes)
                            VALUES (NEW.device_id, 1, length(NEW.payload))
                            ON CONFLICT(device_id) DO UPDATE SET pushes = pushes + 1, bytes = bytes + excluded.bytes;
                    END;
                    CREATE TRIGGER pushes_backlog_delete AFTER DELETE ON pushes BEGIN
                        UPDATE token_backlog SET pushes = pushes - 1, bytes = bytes - length(OLD.payload)
                            WHERE token = OLD.token;
                        DELETE FROM token_backlog WHERE token = OLD.token AND pushes <= 0;
                        UPDATE device_backlog SET pushes = pushes - 1, bytes = bytes - length(OLD.payload)
                            WHERE device_id = OLD.device_id;
                        DELETE FROM device_backlog WHERE device_id = OLD.device_id AND pushes <= 0;
                    END;
                    """)
        }
        // The version in a table of its own, shared with the PostgreSQL store (`GatewaySchema`).
        migrator.registerMigration("v4-schema-version") { db in
            try db.execute(
                sql: """
                    CREATE TABLE schema_version(version INTEGER NOT NULL);
                    INSERT INTO schema_version VALUES (4);
                    """)
        }
        // Version 5 is for several nodes on PostgreSQL; one SQLite node needs no change.
        migrator.registerMigration("v5-several-nodes") { db in
            try db.execute(sql: "UPDATE schema_version SET version = 5")
        }
        migrator.registerMigration("v6-cluster-key") { db in
            try db.execute(sql: "UPDATE schema_version SET version = 6")
        }
        migrator.registerMigration("v7-webpush") { db in
            try db.execute(sql: GatewaySchema.webPushTable + "UPDATE schema_version SET version = 7;")
        }
        return migrator
    }
}

/// One GRDB transaction (or read snapshot) behind `GatewayStoreTransaction`.
struct SQLiteTransaction: GatewayStoreTransaction {
    let db: Database

    /// `sql` compiled once per connection (GRDB's statement cache) instead of at every call: on the push path,
    /// compiling an insert with the backlog triggers cost more than running it. Only for SQL that does not vary;
    /// lists of ids go in one JSON array argument (`json_each`) so their statements stay the same too.
    private func statement(_ sql: String) throws -> Statement { try db.cachedStatement(sql: sql) }

    /// `ids` as one JSON array argument for `json_each(?)`.
    private static func jsonArray(_ ids: [Int64]) -> String { "[" + ids.map(String.init).joined(separator: ",") + "]" }

    private static let pushColumns =
        "seq, device_id, token, topic, push_type, priority, apns_id, collapse_id, expiration, expires_at, "
        + "received_at, payload"

    private static func push(_ row: Row) -> StoredPush {
        let payload: Data = row["payload"] ?? Data()
        return StoredPush(
            id: row["seq"], deviceID: row["device_id"], token: row["token"], topic: row["topic"],
            pushType: row["push_type"], priority: row["priority"], apnsID: row["apns_id"],
            collapseID: row["collapse_id"], expiration: row["expiration"], expiresAt: row["expires_at"],
            receivedAt: row["received_at"], payload: [UInt8](payload))
    }

    func insertPush(_ push: StoredPush) throws -> Int64 {
        try statement(
            """
            INSERT INTO pushes(device_id, token, topic, push_type, priority, apns_id, collapse_id, expiration,
                expires_at, received_at, is_voip, payload) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)
            """
        ).execute(arguments: [
            push.deviceID, push.token, push.topic, push.pushType, push.priority, push.apnsID, push.collapseID,
            push.expiration, push.expiresAt, push.receivedAt, push.isVoIP ? 1 : 0, Data(push.payload),
        ])
        return db.lastInsertedRowID
    }

    func deletePending(deviceID: String, topic: String, collapseID: String) throws -> [Int64] {
        try Int64.fetchAll(
            statement("DELETE FROM pushes WHERE device_id = ? AND topic = ? AND collapse_id = ? RETURNING seq"),
            arguments: [deviceID, topic, collapseID])
    }

    func deletePendingBackground(deviceID: String, topic: String) throws -> [Int64] {
        try Int64.fetchAll(
            statement(
                "DELETE FROM pushes WHERE device_id = ? AND topic = ? AND push_type = 'background' RETURNING seq"),
            arguments: [deviceID, topic])
    }

    func pending(deviceID: String, excluding: Set<Int64>, limit: Int, now: Int64, webPushMinimum: Int) throws
        -> [StoredPush]
    {
        guard limit > 0 else { return [] }
        let rows = try Row.fetchAll(
            statement(
                "SELECT \(Self.pushColumns) FROM pushes WHERE device_id = ? AND expires_at > ? "
                    + "AND (push_type IS NOT 'webpush' OR priority >= ?) "
                    + "AND seq NOT IN (SELECT value FROM json_each(?)) ORDER BY is_voip DESC, seq LIMIT ?"),
            arguments: [deviceID, now, webPushMinimum, Self.jsonArray(excluding.sorted()), limit])
        return rows.map(Self.push)
    }

    func acknowledge(deviceID: String, ids: [Int64]) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        try statement("DELETE FROM pushes WHERE device_id = ? AND seq IN (SELECT value FROM json_each(?))")
            .execute(arguments: [deviceID, Self.jsonArray(ids)])
        return db.changesCount
    }

    func deleteExpired(now: Int64) throws -> Int {
        try statement("DELETE FROM pushes WHERE expires_at <= ?").execute(arguments: [now])
        return db.changesCount
    }

    func pendingList(deviceID: String?, limit: Int) throws -> [StoredPush] {
        let rows: [Row]
        if let deviceID {
            rows = try Row.fetchAll(
                statement("SELECT \(Self.pushColumns) FROM pushes WHERE device_id = ? ORDER BY seq LIMIT ?"),
                arguments: [deviceID, limit])
        } else {
            rows = try Row.fetchAll(
                statement("SELECT \(Self.pushColumns) FROM pushes ORDER BY seq LIMIT ?"), arguments: [limit])
        }
        return rows.map(Self.push)
    }

    func pendingCounts(deviceIDs: [String]) throws -> [String: Int] {
        guard !deviceIDs.isEmpty else { return [:] }
        let marks = Array(repeating: "?", count: deviceIDs.count).joined(separator: ",")
        return Self.counts(
            try Row.fetchAll(
                db, sql: "SELECT device_id, pushes FROM device_backlog WHERE device_id IN (\(marks))",
                arguments: StatementArguments(deviceIDs)))
    }

    func pendingTotal() throws -> Int {
        try Int.fetchOne(statement("SELECT coalesce(sum(pushes), 0) FROM device_backlog")) ?? 0
    }

    func pendingCounts() throws -> [String: Int] {
        Self.counts(try Row.fetchAll(statement("SELECT device_id, pushes FROM device_backlog")))
    }

    private static func counts(_ rows: [Row]) -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in rows { counts[row["device_id"]] = row["pushes"] }
        return counts
    }

    func trimBacklog(_ owner: BacklogOwner, pushes maxPushes: Int, bytes maxBytes: Int) throws -> [(
        id: Int64, pushType: String?
    )] {
        let totals =
            switch owner {
            case .token(let token):
                try Row.fetchOne(
                    statement("SELECT pushes, bytes FROM token_backlog WHERE token = ?"), arguments: [token])
            case .device(let deviceID):
                try Row.fetchOne(
                    statement("SELECT pushes, bytes FROM device_backlog WHERE device_id = ?"), arguments: [deviceID])
            }
        guard let totals else { return [] }
        var pushes: Int = totals["pushes"]
        var bytes: Int = totals["bytes"]
        var dropped: [(id: Int64, pushType: String?)] = []
        var after: Int64 = 0
        while pushes > maxPushes || bytes > maxBytes {
            let page = try oldest(owner, after: after, limit: max(pushes - maxPushes, 16))
            if page.isEmpty { break }
            for row in page where pushes > maxPushes || bytes > maxBytes {
                dropped.append((row["seq"], row["push_type"]))
                after = row["seq"]
                pushes -= 1
                bytes -= row["size"] as Int
            }
        }
        if !dropped.isEmpty {
            try statement("DELETE FROM pushes WHERE seq IN (SELECT value FROM json_each(?))")
                .execute(arguments: [Self.jsonArray(dropped.map(\.id))])
        }
        return dropped
    }

    /// The owner's oldest pending pushes after `seq`: by the token index, or for a device by merging its VoIP and
    /// other pushes (the device index orders `is_voip` first), so neither needs a sort of the whole backlog.
    private func oldest(_ owner: BacklogOwner, after seq: Int64, limit: Int) throws -> [Row] {
        let columns = "seq, push_type, length(payload) AS size"
        switch owner {
        case .token(let token):
            return try Row.fetchAll(
                statement("SELECT \(columns) FROM pushes WHERE token = ? AND seq > ? ORDER BY seq LIMIT ?"),
                arguments: [token, seq, limit])
        case .device(let deviceID):
            var rows: [Row] = []
            for isVoIP in [0, 1] {
                rows += try Row.fetchAll(
                    statement(
                        "SELECT \(columns) FROM pushes WHERE device_id = ? AND is_voip = ? AND seq > ? ORDER BY seq LIMIT ?"
                    ),
                    arguments: [deviceID, isVoIP, seq, limit])
            }
            rows.sort { ($0["seq"] as Int64) < ($1["seq"] as Int64) }
            return Array(rows.prefix(limit))
        }
    }

    // MARK: Devices

    private static func device(_ row: Row) -> DeviceRecord {
        let hash: Data? = row["credential_hash"]
        let authentication: String = row["authentication"]
        return DeviceRecord(
            id: row["id"], authentication: DeviceRecord.Authentication(rawValue: authentication) ?? .secret,
            credentialHash: hash.map { [UInt8]($0) }, createdAt: row["created_at"], revokedAt: row["revoked_at"])
    }

    func device(_ id: String) throws -> DeviceRecord? {
        try Row.fetchOne(statement("SELECT * FROM devices WHERE id = ?"), arguments: [id]).map(Self.device)
    }

    func insertDevice(_ device: DeviceRecord) throws {
        try statement(
            "INSERT INTO devices(id, authentication, credential_hash, created_at, revoked_at) VALUES (?,?,?,?,?)"
        ).execute(arguments: [
            device.id, device.authentication.rawValue, device.credentialHash.map { Data($0) }, device.createdAt,
            device.revokedAt,
        ])
    }

    func revokeDevice(_ id: String, at time: Int64) throws -> Bool {
        try statement("UPDATE devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL").execute(arguments: [
            time, id,
        ])
        guard db.changesCount > 0 else { return false }
        try statement("UPDATE tokens SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL").execute(
            arguments: [time, id])
        try statement("UPDATE webpush_subscriptions SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL")
            .execute(arguments: [time, id])
        try statement("DELETE FROM pushes WHERE device_id = ?").execute(arguments: [id])
        return true
    }

    func devices() throws -> [DeviceRecord] {
        try Row.fetchAll(statement("SELECT * FROM devices ORDER BY id")).map(Self.device)
    }

    func devices(after: String?, limit: Int) throws -> [DeviceRecord] {
        try Row.fetchAll(
            statement("SELECT * FROM devices WHERE id > ? ORDER BY id LIMIT ?"), arguments: [after ?? "", limit]
        ).map(Self.device)
    }

    func devicesRevoked(since time: Int64) throws -> [String] {
        try String.fetchAll(statement("SELECT id FROM devices WHERE revoked_at >= ?"), arguments: [time])
    }

    func insertEnrollmentSecret(hash: [UInt8], createdAt: Int64, expiresAt: Int64?) throws {
        try statement("INSERT INTO enrollment_secrets(hash, created_at, expires_at) VALUES (?,?,?)").execute(
            arguments: [Data(hash), createdAt, expiresAt])
    }

    func consumeEnrollmentSecret(hash: [UInt8], deviceID: String, now: Int64) throws -> Bool {
        try statement(
            """
            UPDATE enrollment_secrets SET used_at = ?, device_id = ?
            WHERE hash = ? AND used_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
            """
        ).execute(arguments: [now, deviceID, Data(hash), now])
        return db.changesCount > 0
    }

    // MARK: Tokens

    private static func token(_ row: Row) -> TokenRecord {
        TokenRecord(
            token: row["token"], deviceID: row["device_id"], topic: row["topic"], createdAt: row["created_at"],
            revokedAt: row["revoked_at"])
    }

    func token(_ token: String) throws -> TokenRecord? {
        try Row.fetchOne(statement("SELECT * FROM tokens WHERE token = ?"), arguments: [token]).map(Self.token)
    }

    func insertToken(_ token: TokenRecord) throws {
        try statement("INSERT INTO tokens(token, device_id, topic, created_at, revoked_at) VALUES (?,?,?,?,?)").execute(
            arguments: [token.token, token.deviceID, token.topic, token.createdAt, token.revokedAt])
    }

    func tokens(deviceID: String?) throws -> [TokenRecord] {
        if let deviceID {
            return try Row.fetchAll(
                statement("SELECT * FROM tokens WHERE device_id = ? ORDER BY created_at, token"), arguments: [deviceID]
            ).map(Self.token)
        }
        return try Row.fetchAll(statement("SELECT * FROM tokens ORDER BY created_at, token")).map(Self.token)
    }

    func tokens(offset: Int, limit: Int) throws -> [TokenRecord] {
        try Row.fetchAll(
            statement("SELECT * FROM tokens ORDER BY token LIMIT ? OFFSET ?"), arguments: [limit, offset]
        ).map(Self.token)
    }

    func revokeToken(_ token: String, deviceID: String, at time: Int64) throws -> [Int64]? {
        try statement("UPDATE tokens SET revoked_at = ? WHERE token = ? AND device_id = ? AND revoked_at IS NULL")
            .execute(arguments: [time, token, deviceID])
        guard db.changesCount > 0 else { return nil }
        return try Int64.fetchAll(statement("DELETE FROM pushes WHERE token = ? RETURNING seq"), arguments: [token])
    }

    // MARK: Handler reports

    func replaceHandlerReports(deviceID: String, _ reports: [HandlerReport]) throws {
        try statement("DELETE FROM handler_reports WHERE device_id = ?").execute(arguments: [deviceID])
        for report in reports {
            try statement(
                """
                INSERT INTO handler_reports(device_id, topic, strikes, voip_blocked, reported_at)
                VALUES (?,?,?,?,?)
                """
            ).execute(arguments: [deviceID, report.topic, report.strikes, report.voipBlocked, report.reportedAt])
        }
    }

    func handlerReports(deviceID: String?) throws -> [HandlerReport] {
        let rows =
            if let deviceID {
                try Row.fetchAll(
                    statement("SELECT * FROM handler_reports WHERE device_id = ? ORDER BY topic"), arguments: [deviceID]
                )
            } else {
                try Row.fetchAll(statement("SELECT * FROM handler_reports ORDER BY device_id, topic"))
            }
        return Self.handlerReports(rows)
    }

    func handlerReports(deviceIDs: [String]) throws -> [HandlerReport] {
        guard !deviceIDs.isEmpty else { return [] }
        let marks = Array(repeating: "?", count: deviceIDs.count).joined(separator: ",")
        return Self.handlerReports(
            try Row.fetchAll(
                db, sql: "SELECT * FROM handler_reports WHERE device_id IN (\(marks)) ORDER BY device_id, topic",
                arguments: StatementArguments(deviceIDs)))
    }

    private static func handlerReports(_ rows: [Row]) -> [HandlerReport] {
        rows.map { row in
            HandlerReport(
                deviceID: row["device_id"], topic: row["topic"], strikes: row["strikes"],
                voipBlocked: row["voip_blocked"], reportedAt: row["reported_at"])
        }
    }

    // MARK: Provider keys

    func providerKeys(includeRevoked: Bool) throws -> [ProviderKeyRecord] {
        let sql =
            includeRevoked
            ? "SELECT * FROM provider_keys ORDER BY key_id"
            : "SELECT * FROM provider_keys WHERE revoked_at IS NULL ORDER BY key_id"
        return try Row.fetchAll(db, sql: sql).map { row in
            let topics: String? = row["topics"]
            return ProviderKeyRecord(
                keyID: row["key_id"], teamID: row["team_id"], publicKeyPEM: row["public_key_pem"],
                topics: topics.map { $0.split(separator: ",").map(String.init) }, createdAt: row["created_at"],
                revokedAt: row["revoked_at"])
        }
    }

    func upsertProviderKey(_ key: ProviderKeyRecord) throws {
        try statement(
            """
            INSERT INTO provider_keys(key_id, team_id, public_key_pem, topics, created_at, revoked_at)
            VALUES (?,?,?,?,?,NULL)
            ON CONFLICT(key_id) DO UPDATE SET team_id = excluded.team_id,
                public_key_pem = excluded.public_key_pem, topics = excluded.topics
            """
        ).execute(arguments: [
            key.keyID, key.teamID, key.publicKeyPEM, key.topics?.joined(separator: ","), key.createdAt,
        ])
    }

    func revokeProviderKey(_ keyID: String, at time: Int64) throws -> Bool {
        try statement("UPDATE provider_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL").execute(
            arguments: [time, keyID])
        return db.changesCount > 0
    }

    func unrevokeProviderKey(_ keyID: String) throws -> Bool {
        try statement("UPDATE provider_keys SET revoked_at = NULL WHERE key_id = ? AND revoked_at IS NOT NULL").execute(
            arguments: [keyID])
        return db.changesCount > 0
    }
}
