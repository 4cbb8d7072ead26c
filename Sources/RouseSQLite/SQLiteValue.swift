/// A value bound to a statement's `?` parameter: SQLite's storage classes that the stores use.
package enum SQLiteValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A 64-bit integer (also booleans: 0 and 1).
    case integer(Int64)
    /// UTF-8 text.
    case text(String)
    /// Bytes, stored as a BLOB (an empty array is an empty BLOB, not NULL).
    case blob([UInt8])
}

/// A Swift value that binds to a statement parameter. Arguments are always bound, never spliced into SQL text.
package protocol SQLiteBindable {
    /// The value SQLite stores.
    var sqliteValue: SQLiteValue { get }
}

extension SQLiteValue: SQLiteBindable {
    /// Itself.
    package var sqliteValue: SQLiteValue { self }
}

extension Int64: SQLiteBindable {
    /// An INTEGER.
    package var sqliteValue: SQLiteValue { .integer(self) }
}

extension Int: SQLiteBindable {
    /// An INTEGER.
    package var sqliteValue: SQLiteValue { .integer(Int64(self)) }
}

extension Bool: SQLiteBindable {
    /// An INTEGER, 1 or 0 (how SQLite and GRDB store booleans).
    package var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
}

extension String: SQLiteBindable {
    /// TEXT.
    package var sqliteValue: SQLiteValue { .text(self) }
}

extension Array: SQLiteBindable where Element == UInt8 {
    /// A BLOB.
    package var sqliteValue: SQLiteValue { .blob(self) }
}

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    /// NULL for `nil`, else the wrapped value.
    package var sqliteValue: SQLiteValue { self?.sqliteValue ?? .null }
}
