import CSQLite

/// The current row of a stepped statement, read by column name with the type the caller expects. Valid only inside
/// the closure it is given to (the statement moves on after it). A NULL where a value is required, or a missing
/// column, throws; nothing traps.
package struct SQLiteRow {
    private let statement: SQLiteStatement

    init(_ statement: SQLiteStatement) { self.statement = statement }

    private func index(_ name: String) throws(SQLiteError) -> Int32 {
        guard let index = statement.columns[name] else {
            throw .misuse("no result column \(name)", statement: statement.sql)
        }
        return index
    }

    private func isNull(_ index: Int32) -> Bool { sqlite3_column_type(statement.handle, index) == SQLITE_NULL }

    private func required<T>(_ name: String, _ value: T?) throws(SQLiteError) -> T {
        guard let value else { throw .misuse("column \(name) is NULL", statement: statement.sql) }
        return value
    }

    /// An INTEGER column, or `nil` for NULL.
    package func optionalInt64(_ name: String) throws(SQLiteError) -> Int64? {
        let index = try index(name)
        return isNull(index) ? nil : sqlite3_column_int64(statement.handle, index)
    }

    /// An INTEGER column that is never NULL.
    package func int64(_ name: String) throws(SQLiteError) -> Int64 { try required(name, optionalInt64(name)) }

    /// An INTEGER column as `Int` (SQLite's integers are 64-bit, as `Int` is here).
    package func int(_ name: String) throws(SQLiteError) -> Int { Int(try int64(name)) }

    /// An INTEGER column read as a boolean (non-zero is true).
    package func bool(_ name: String) throws(SQLiteError) -> Bool { try int64(name) != 0 }

    /// A TEXT column, or `nil` for NULL.
    package func optionalString(_ name: String) throws(SQLiteError) -> String? {
        let index = try index(name)
        guard !isNull(index) else { return nil }
        // The pointer first, then its length (SQLite's documented order: the length is of that conversion).
        guard let text = sqlite3_column_text(statement.handle, index) else { return "" }
        let count = Int(sqlite3_column_bytes(statement.handle, index))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// A TEXT column that is never NULL.
    package func string(_ name: String) throws(SQLiteError) -> String { try required(name, optionalString(name)) }

    /// A BLOB column, or `nil` for NULL.
    package func optionalBytes(_ name: String) throws(SQLiteError) -> [UInt8]? {
        let index = try index(name)
        guard !isNull(index) else { return nil }
        let bytes = sqlite3_column_blob(statement.handle, index)
        let count = Int(sqlite3_column_bytes(statement.handle, index))
        guard count > 0, let bytes else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: bytes, count: count))
    }

    /// A BLOB column that is never NULL.
    package func bytes(_ name: String) throws(SQLiteError) -> [UInt8] { try required(name, optionalBytes(name)) }
}
