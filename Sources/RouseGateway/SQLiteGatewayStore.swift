import Dispatch
import RouseSQLite
import Synchronization

/// The SQLite store: one file in WAL mode with `synchronous=FULL`, through SQLite's C API (`RouseSQLite`).
///
/// Durability argument: in WAL mode every COMMIT appends the transaction's pages to the `-wal` file, and with
/// `synchronous=FULL` SQLite fsyncs that file before COMMIT returns. The gateway answers 200 only after the
/// COMMIT holding the push returned, so from that moment the push survives a crash of the process (SIGKILL)
/// and of the machine (power loss): recovery replays the WAL. The cost, one fsync per transaction, is shared
/// by every push of a batch (the gateway commits concurrent pushes together). Checkpoints run automatically
/// (SQLite's default 1000 pages) and are themselves synced.
///
/// Threads: the model GRDB's `DatabasePool` gave it. One writer connection, its transactions (`BEGIN IMMEDIATE`)
/// one at a time; up to `maxReaders` query-only reader connections, opened when needed and kept, each read a
/// `BEGIN DEFERRED` snapshot that runs beside the writer (WAL: readers and the writer never block each other).
/// Other processes on the same file (the `rouse gateway` CLI) wait up to `busyTimeout` for its lock.
package final class SQLiteGatewayStore: GatewayStore, @unchecked Sendable {  // writer: under writerPermit
    /// The database file.
    package let path: String
    /// What opening the store did to the schema.
    package let migration: GatewaySchema.Migration
    private let writer: SQLiteConnection
    private let writerPermit = DispatchSemaphore(value: 1)
    private let readerPermits = DispatchSemaphore(value: SQLiteGatewayStore.maxReaders)
    private let idleReaders = Mutex<[SQLiteConnection]>([])
    /// Readers at once (GRDB's pool default): more reads wait for one to finish.
    static let maxReaders = 5
    /// Milliseconds a statement waits for another connection's lock (GRDB's `.timeout(5)` before).
    static let busyTimeout: Int32 = 5_000

    /// Opens (creating if needed) the database at `path` and brings its schema up to date.
    package init(path: String) throws(GatewayError) {
        self.path = path
        do {
            writer = try SQLiteConnection(path: path, busyTimeout: Self.busyTimeout)
            let mode = try writer.row("PRAGMA journal_mode = WAL") { try $0.string("journal_mode") }
            guard mode == "wal" else { throw GatewayError.storage("\(path): journal_mode is \(mode ?? "?"), not wal") }
            // FULL: COMMIT fsyncs the WAL (the durability argument above); set on the one connection that writes.
            try writer.execute("PRAGMA synchronous = FULL")
        } catch let error as GatewayError {
            throw error
        } catch {
            throw .storage("\(path): \(error)")
        }
        migration = try Self.migrate(writer, path: path)
    }

    package func write<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        writerPermit.wait()
        defer { writerPermit.signal() }
        return try storageErrors {
            try writer.transaction(.immediate) { try body(SQLiteTransaction(db: writer)) }
        }
    }

    package func read<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        readerPermits.wait()
        defer { readerPermits.signal() }
        let reader = try storageErrors {
            try idleReaders.withLock { $0.popLast() }
                ?? SQLiteConnection(path: path, busyTimeout: Self.busyTimeout, queryOnly: true)
        }
        defer { idleReaders.withLock { $0.append(reader) } }
        return try storageErrors { try reader.transaction(.deferred) { try body(SQLiteTransaction(db: reader)) } }
    }

    /// Errors of the store as `GatewayError`s naming the file (a `GatewayError` thrown by a body passes as it is).
    private func storageErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as GatewayError {
            throw error
        } catch {
            throw GatewayError.storage("\(path): \(error)")
        }
    }

    /// The durability settings in force on the writer connection: `journal_mode` and `synchronous`
    /// (2 = FULL), for checks and the admin view.
    package func durabilitySettings() throws -> (journalMode: String, synchronous: Int) {
        writerPermit.wait()
        defer { writerPermit.signal() }
        return try storageErrors {
            let mode = try writer.row("PRAGMA journal_mode") { try $0.string("journal_mode") } ?? ""
            let synchronous = try writer.row("PRAGMA synchronous") { try $0.int("synchronous") } ?? -1
            return (mode, synchronous)
        }
    }
}
