import RouseSQLite

/// The SQLite schema and its migrations, kept in GRDB's format: databases made while the store ran on GRDB open
/// unchanged, and new ones are the same (a `grdb_migrations` table listing the migrations applied, each run in its
/// own `BEGIN IMMEDIATE` transaction with its identifier, as GRDB's `DatabaseMigrator` did). The SQL is GRDB-era
/// SQL, byte for byte: `sqlite_master` keeps the text, and StoreMigrationCompatibilityTests compares it with a
/// database made by the GRDB build.
extension SQLiteGatewayStore {
    /// Refuses a database newer than this build, then applies the migrations it lacks.
    static func migrate(_ db: SQLiteConnection, path: String) throws(GatewayError) -> GatewaySchema.Migration {
        do {
            let found = try version(db)
            if found > GatewaySchema.version { throw GatewaySchema.tooNew(found, in: path) }
            try db.execute("CREATE TABLE IF NOT EXISTS grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY)")
            for (identifier, sql) in migrations {
                try db.transaction(.immediate) {
                    // Checked inside the transaction: another process opening the file at once migrates once.
                    let applied = try db.row(
                        "SELECT 1 AS applied FROM grdb_migrations WHERE identifier = ?", [identifier]
                    ) { _ in true }
                    guard applied == nil else { return }
                    try db.execute(sql)
                    try db.run("INSERT INTO grdb_migrations (identifier) VALUES (?)", [identifier])
                }
            }
            return GatewaySchema.Migration(from: found, to: GatewaySchema.version)
        } catch let error as GatewayError {
            throw error
        } catch {
            throw .storage("\(path): \(error)")
        }
    }

    /// The database's schema version: its `schema_version`, or before version 4 the number of migrations applied.
    private static func version(_ db: SQLiteConnection) throws -> Int {
        if try db.tableExists("schema_version") {
            return try db.row("SELECT max(version) AS version FROM schema_version") {
                try $0.optionalInt64("version")
            }.flatMap { $0 }.map { Int($0) } ?? 0
        }
        if try db.tableExists("grdb_migrations") {
            return try db.row("SELECT count(*) AS applied FROM grdb_migrations") { try $0.int("applied") } ?? 0
        }
        return 0
    }

    /// The migrations in order, by GRDB identifier.
    static let migrations: [(identifier: String, sql: String)] = [
        (
            "v1",
            """
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
            """
        ),
        // Additive: what agents report about their handlers (strikes, VoIP launches stopped).
        (
            "v2-handler-reports",
            """
            CREATE TABLE handler_reports(
                device_id TEXT NOT NULL,
                topic TEXT NOT NULL,
                strikes INTEGER NOT NULL,
                voip_blocked INTEGER NOT NULL,
                reported_at INTEGER NOT NULL,
                PRIMARY KEY(device_id, topic));
            """
        ),
        // Storage quotas: pending pushes and payload bytes per token and per device, kept by triggers on every
        // insert and delete (acknowledgement, expiry, collapse, revocation, the CLI), so a quota check is one
        // lookup. The token index serves the token's oldest pushes and the deletes by token.
        (
            "v3-backlog-totals",
            """
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
            """
        ),
        // The version in a table of its own, shared with the PostgreSQL store (`GatewaySchema`).
        (
            "v4-schema-version",
            """
            CREATE TABLE schema_version(version INTEGER NOT NULL);
            INSERT INTO schema_version VALUES (4);
            """
        ),
        // Version 5 is for several nodes on PostgreSQL; one SQLite node needs no change.
        ("v5-several-nodes", "UPDATE schema_version SET version = 5"),
        ("v6-cluster-key", "UPDATE schema_version SET version = 6"),
        ("v7-webpush", GatewaySchema.webPushTable + "UPDATE schema_version SET version = 7;"),
    ]
}
