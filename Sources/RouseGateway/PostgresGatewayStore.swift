import Dispatch
import FoundationEssentials
import RouseClock
import RousePostgres
import Synchronization

/// The PostgreSQL store, through libpq: one connection for writes (the store thread's batches, and the few writes
/// made elsewhere, serialized by a lock) and up to `poolSize - 1` for reads.
///
/// Durability argument: every connection runs with `synchronous_commit = on` (set by the gateway, whatever the
/// server's default), so COMMIT returns only after the transaction's WAL is flushed on the server (and on
/// synchronous standbys, if configured). The gateway answers 200 only after that COMMIT returned. A connection
/// that breaks mid-transaction fails the batch with `GatewayError.unavailable`: its providers get 503
/// `ServiceUnavailable`, never 200 (if COMMIT was sent and the answer was lost, the pushes may be stored; the
/// provider's retry then stores them twice, and the agent de-duplicates by `apns-id`). The next batch reconnects,
/// at most one attempt per `reconnectInterval`, so an outage costs each push one fast 503 rather than a timeout.
package final class PostgresGatewayStore: GatewayStore, @unchecked Sendable {  // writer and readers: under `lock`
    /// Where the store connects (for logs; no password).
    package let displayName: String
    /// What opening the store did to the schema.
    package let migration: GatewaySchema.Migration
    /// The settings it connects with (the node's listener opens its own connection with them).
    let settings: PostgresSettings
    /// The cluster key node messages are sealed with (`NodeMessageSeal`), read from the database.
    let clusterKey: [UInt8]
    /// Seals what this process's transactions tell other nodes.
    let seal: NodeMessageSeal
    private let lock = Mutex(())
    private let writeLock = Mutex(())
    private var writer: PostgresConnection?
    private var lastWriterAttempt: RouseInstant?
    private var idleReaders: [PostgresConnection] = []
    private let readerPermits: DispatchSemaphore
    private static let reconnectInterval = Duration.milliseconds(250)

    /// Connects (a failure names the setting at fault), then brings the schema up to date.
    package init(settings: PostgresSettings) throws(GatewayError) {
        try settings.validate()
        self.settings = settings
        displayName = settings.displayName
        readerPermits = DispatchSemaphore(value: settings.poolSize - 1)
        let connection: PostgresConnection
        do {
            connection = try Self.connect(settings)
        } catch {
            if error.isMissingLibrary { throw error }
            // At start a connection failure is a configuration problem until shown otherwise.
            throw .badConfiguration(error.detail)
        }
        writer = connection
        migration = try Self.migrate(connection, name: settings.displayName)
        clusterKey = try Self.clusterKey(connection, name: settings.displayName)
        seal = NodeMessageSeal(key: clusterKey)
    }

    /// The cluster key: made by the first gateway that opens the database (a random 256-bit key), read by every
    /// other. The table is the gateway role's and granted to nobody else (schema version 6).
    private static func clusterKey(_ connection: PostgresConnection, name: String) throws(GatewayError) -> [UInt8] {
        try GatewayError.wrapping(
            try connection.query(
                "INSERT INTO gateway_cluster_key(id, key) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
                [.bytes(NodeMessageSeal.makeKey())]))
        guard
            let key = try GatewayError.wrapping(
                try connection.query("SELECT key FROM gateway_cluster_key WHERE id = 1")
            ).bytes(0, 0),
            key.count == NodeMessageSeal.keyBytes
        else { throw .storage("postgres: \(name): gateway_cluster_key holds no \(NodeMessageSeal.keyBytes)-byte key") }
        return key
    }

    private static func connect(_ settings: PostgresSettings) throws(GatewayError) -> PostgresConnection {
        let connection = try PostgresConnection.connect(settings)
        // 200 means durable: never let a server or role default weaken COMMIT.
        try GatewayError.wrapping(try connection.execute("SET synchronous_commit = on"))
        return connection
    }

    /// Applies the migrations newer than the database's version, in one transaction holding `schema_version` in
    /// `SHARE UPDATE EXCLUSIVE` mode (nodes starting together migrate once). Not an advisory lock: any role may take
    /// those, and one holding it kept every node from starting; this one needs a privilege on the table, and the
    /// locks any role can get on it (a `PREPARE` locks before its privilege check) do not conflict with it.
    private static func migrate(_ connection: PostgresConnection, name: String) throws(GatewayError)
        -> GatewaySchema.Migration
    {
        do {
            try GatewayError.wrapping(
                try connection.execute("CREATE TABLE IF NOT EXISTS schema_version(version integer NOT NULL)"))
        } catch {
            // Nodes starting together on an empty database: one CREATE fails (a unique violation in the catalog),
            // the table is there.
            guard !error.isUnavailable else { throw error }
        }
        try GatewayError.wrapping(try connection.execute("BEGIN"))
        do throws(GatewayError) {
            try GatewayError.wrapping(
                try connection.execute("LOCK TABLE schema_version IN SHARE UPDATE EXCLUSIVE MODE"))
            var found = 0
            if let version = try GatewayError.wrapping(try connection.query("SELECT max(version) FROM schema_version"))
                .int(0, 0)
            {
                found = version
            } else {
                try GatewayError.wrapping(try connection.execute("INSERT INTO schema_version VALUES (0)"))
            }
            if found > GatewaySchema.version { throw GatewaySchema.tooNew(found, in: name) }
            for migration in GatewaySchema.postgresMigrations where migration.version > found {
                try GatewayError.wrapping(try connection.execute(migration.sql))
                try GatewayError.wrapping(
                    try connection.query("UPDATE schema_version SET version = $1", [PostgresValue(migration.version)]))
            }
            try GatewayError.wrapping(try connection.execute("COMMIT"))
            return GatewaySchema.Migration(from: found, to: max(found, GatewaySchema.version))
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// The writer, reconnected when it broke (at most one attempt per `reconnectInterval`).
    private func readyWriter() throws(GatewayError) -> PostgresConnection {
        if let writer, writer.isHealthy { return writer }
        writer = nil
        // Real time: the store is opened from its configuration, before any gateway (and its clock) exists.
        let now = SystemClock().now
        if let last = lastWriterAttempt, last.duration(to: now) < Self.reconnectInterval {
            throw .unavailable("postgres: \(displayName): reconnecting")
        }
        lastWriterAttempt = now
        let connection = try Self.connect(settings)
        writer = connection
        return connection
    }

    package func write<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        try writeLock.withLock { _ in
            var connection = try readyWriter()
            do {
                try GatewayError.wrapping(try connection.execute("BEGIN"))
            } catch  where !connection.isHealthy {
                // The writer broke while idle (the server restarted): nothing was sent but BEGIN, so a fresh
                // connection may take the batch at once instead of failing it.
                writer = nil
                lastWriterAttempt = nil
                connection = try readyWriter()
                try GatewayError.wrapping(try connection.execute("BEGIN"))
            }
            return try transaction(connection, begin: nil, body)
        }
    }

    package func read<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        guard readerPermits.wait(timeout: .now() + .seconds(10)) == .success else {
            throw GatewayError.unavailable("postgres: \(displayName): every read connection is busy")
        }
        defer { readerPermits.signal() }
        var connection = lock.withLock { _ in idleReaders.popLast() }
        if connection?.isHealthy != true { connection = try Self.connect(settings) }
        guard let connection else { throw GatewayError.unavailable("postgres: \(displayName): no connection") }
        let value = try transaction(connection, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", body)
        if connection.isHealthy { lock.withLock { _ in idleReaders.append(connection) } }
        return value
    }

    private func transaction<T>(
        _ connection: PostgresConnection, begin: String?, _ body: (any GatewayStoreTransaction) throws -> T
    ) throws -> T {
        if let begin { try GatewayError.wrapping(try connection.execute(begin)) }
        do {
            let value = try body(PostgresTransaction(connection: connection, seal: seal))
            try GatewayError.wrapping(try connection.execute("COMMIT"))
            return value
        } catch {
            if connection.isHealthy { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// `synchronous_commit` as the writer connection sees it (`on`), for checks.
    package func synchronousCommit() throws -> String {
        try writeLock.withLock { _ in
            let writer = try readyWriter()
            return try GatewayError.wrapping(try writer.query("SHOW synchronous_commit")).string(0, 0) ?? ""
        }
    }
}
