import CSQLite

/// One SQLite connection through the C API: the only file that opens, closes and runs SQL on one.
///
/// Hand-written rather than through GRDB: GRDB needs full Foundation (142 symbols), which brings ICU's ~40 MB of
/// data into every binary linking the gateway, and the multi-call binary links it (issue 31's size target,
/// docs/benchmarks.md "Footprint"). The stores need little: prepared statements with bound parameters, rows read
/// by column name, transactions, the busy timeout, WAL.
///
/// Used by one thread at a time: its owner serializes every use (the gateway store's permits), hence
/// `@unchecked Sendable` (a connection is handed between threads, never shared). Statements are compiled once per
/// SQL text and kept (at most `statementCacheLimit`; past that a statement is compiled for its one use), so the
/// push path does not recompile an insert whose triggers cost more to compile than to run.
package final class SQLiteConnection: @unchecked Sendable {  // one user at a time: its owner's permit
    private let handle: OpaquePointer
    /// The database file.
    package let path: String
    private var statements: [String: SQLiteStatement] = [:]
    /// The most statements kept compiled; the stores' SQL is a fixed set of a few dozen texts.
    package static let statementCacheLimit = 128

    /// How a transaction starts.
    package enum TransactionKind: Sendable {
        /// `BEGIN DEFERRED`: a read snapshot from the first read (WAL readers never block the writer).
        case deferred
        /// `BEGIN IMMEDIATE`: the write lock at once, so the transaction never fails to upgrade half-way.
        case immediate
    }

    /// Opens (creating if needed) the database at `path`; a locked database is retried for `busyTimeout`
    /// milliseconds before a statement fails with `SQLITE_BUSY`. `queryOnly` connections refuse every write.
    package init(path: String, busyTimeout: Int32, queryOnly: Bool = false) throws(SQLiteError) {
        var connection: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &connection, flags, nil)
        guard code == SQLITE_OK, let connection else {
            let error = SQLiteError.last(connection, code: code, statement: "")
            sqlite3_close_v2(connection)
            throw error
        }
        handle = connection
        self.path = path
        sqlite3_extended_result_codes(connection, 1)
        sqlite3_busy_timeout(connection, busyTimeout)
        if queryOnly { try execute("PRAGMA query_only = ON") }
    }

    deinit {
        statements.removeAll()  // each finalizes in its deinit, before the connection closes
        sqlite3_close_v2(handle)
    }

    /// Runs SQL text without parameters: one statement or several separated by `;` (schema scripts, `BEGIN`,
    /// pragmas). Only for SQL written in the program, never for text built from input.
    package func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) }
            sqlite3_free(message)
            var error = SQLiteError.last(handle, code: code, statement: sql)
            if let text { error = SQLiteError(code: error.code, message: text, statement: sql) }
            throw error
        }
    }

    /// Runs one statement with `arguments` bound to its `?` parameters, reading no rows.
    package func run(_ sql: String, _ arguments: [any SQLiteBindable] = [], cached: Bool = true) throws {
        try use(sql, arguments, cached: cached) { statement in
            while try statement.step() {}
        }
    }

    /// Runs one statement with `arguments` bound and returns its rows, each read by `map`.
    package func rows<T>(
        _ sql: String, _ arguments: [any SQLiteBindable] = [], cached: Bool = true,
        _ map: (SQLiteRow) throws -> T
    ) throws -> [T] {
        try use(sql, arguments, cached: cached) { statement in
            var rows: [T] = []
            while try statement.step() { rows.append(try map(SQLiteRow(statement))) }
            return rows
        }
    }

    /// The first row of a statement, read by `map`, or `nil` when there is none (the rest are not read).
    package func row<T>(
        _ sql: String, _ arguments: [any SQLiteBindable] = [], _ map: (SQLiteRow) throws -> T
    ) throws -> T? {
        try use(sql, arguments, cached: true) { statement in
            try statement.step() ? try map(SQLiteRow(statement)) : nil
        }
    }

    /// The rowid of the last row inserted on this connection.
    package var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Rows changed by the last INSERT, UPDATE or DELETE on this connection.
    package var changes: Int { Int(sqlite3_changes64(handle)) }

    /// False inside a transaction.
    package var isAutocommit: Bool { sqlite3_get_autocommit(handle) != 0 }

    /// Whether a table exists in the main schema.
    package func tableExists(_ name: String) throws -> Bool {
        try row("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?", [name]) { _ in true }
            ?? false
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it (or COMMIT) throws.
    package func transaction<T>(_ kind: TransactionKind, _ body: () throws -> T) throws -> T {
        try execute(kind == .immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            // SQLite may have rolled back already (some errors do); a second ROLLBACK would fail.
            if !isAutocommit { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// The statement for `sql`, bound, given to `body`, then reset (a statement left stepping would hold its
    /// read open).
    private func use<T>(
        _ sql: String, _ arguments: [any SQLiteBindable], cached: Bool, _ body: (SQLiteStatement) throws -> T
    ) throws -> T {
        let statement: SQLiteStatement
        if cached, let known = statements[sql] {
            statement = known
        } else {
            statement = try SQLiteStatement(connection: handle, sql: sql)
            if cached, statements.count < Self.statementCacheLimit { statements[sql] = statement }
        }
        defer { statement.reset() }
        try statement.bind(arguments)
        return try body(statement)
    }
}
