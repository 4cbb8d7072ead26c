import CSQLite

/// SQLite's `SQLITE_TRANSIENT` (a macro Swift cannot import): SQLite copies a bound value before the call returns.
private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

/// One compiled statement (`sqlite3_stmt`), owned by its connection: bound, stepped, reset, finalized in `deinit`.
///
/// Used by one thread at a time, like its connection. Parameters are only ever bound (`?`), so no input becomes
/// SQL text.
final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String
    private let connection: OpaquePointer
    /// Result column index by name, for `SQLiteRow`.
    let columns: [String: Int32]

    init(connection: OpaquePointer, sql: String) throws(SQLiteError) {
        var statement: OpaquePointer?
        // `tail` points into the C string SQLite was given: it is read inside `withCString`, while that string
        // lives (a String passed straight to the call is a temporary, freed when the call returns).
        let (code, trailing) = sql.withCString { text -> (Int32, Bool) in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v2(connection, text, -1, &statement, &tail)
            guard code == SQLITE_OK, let tail, tail.pointee != 0 else { return (code, false) }
            return (code, !String(cString: tail).allSatisfy { $0.isWhitespace || $0 == ";" })
        }
        guard code == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw SQLiteError.last(connection, code: code, statement: sql)
        }
        if trailing {
            sqlite3_finalize(statement)
            throw SQLiteError.misuse("one statement at a time (prepare); use execute for a script", statement: sql)
        }
        handle = statement
        self.sql = sql
        self.connection = connection
        var columns: [String: Int32] = [:]
        for index in 0..<sqlite3_column_count(statement) {
            if let name = sqlite3_column_name(statement, index) { columns[String(cString: name)] = index }
        }
        self.columns = columns
    }

    deinit { sqlite3_finalize(handle) }

    /// Binds `arguments` to the `?` parameters in order (after clearing what a previous use bound).
    func bind(_ arguments: [any SQLiteBindable]) throws(SQLiteError) {
        sqlite3_clear_bindings(handle)
        guard arguments.count == Int(sqlite3_bind_parameter_count(handle)) else {
            throw .misuse(
                "\(arguments.count) arguments for \(sqlite3_bind_parameter_count(handle)) parameters", statement: sql)
        }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch argument.sqliteValue {
            case .null:
                code = sqlite3_bind_null(handle, index)
            case .integer(let value):
                code = sqlite3_bind_int64(handle, index, value)
            case .text(var value):
                code = value.withUTF8 { bytes in
                    // An empty buffer may have no address, which SQLite would take for NULL.
                    guard let base = bytes.baseAddress, !bytes.isEmpty else {
                        return sqlite3_bind_text(handle, index, "", 0, transient)
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                        sqlite3_bind_text(handle, index, $0, Int32(bytes.count), transient)
                    }
                }
            case .blob(let value):
                code = value.withUnsafeBytes { bytes in
                    guard let base = bytes.baseAddress, !bytes.isEmpty else {
                        return sqlite3_bind_zeroblob(handle, index, 0)
                    }
                    return sqlite3_bind_blob(handle, index, base, Int32(bytes.count), transient)
                }
            }
            guard code == SQLITE_OK else { throw SQLiteError.last(connection, code: code, statement: sql) }
        }
    }

    /// Runs the statement one step: true with a row ready to read, false when it is done.
    func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw SQLiteError.last(connection, code: code, statement: sql)
        }
    }

    /// Makes the statement ready for its next use (and ends the read it held open).
    func reset() { sqlite3_reset(handle) }
}
