import CSQLite

/// What SQLite refused: its extended result code and its own message, with the statement that failed.
///
/// Result codes are SQLite's, not ours, so the code stays an open number (`SQLITE_CONSTRAINT_UNIQUE`,
/// `SQLITE_BUSY`, …; `primaryCode` groups the extended ones) and the message is `sqlite3_errmsg`'s text.
package struct SQLiteError: Error, Sendable, CustomStringConvertible {
    /// SQLite's extended result code.
    package let code: Int32
    /// SQLite's message for it.
    package let message: String
    /// The first line of the statement that failed (empty when the failure is not a statement's).
    package let statement: String

    /// An error with SQLite's code and message.
    package init(code: Int32, message: String, statement: String = "") {
        self.code = code
        self.message = message
        self.statement = statement.split(separator: "\n").first.map { String($0.prefix(100)) } ?? ""
    }

    /// The primary result code (`SQLITE_CONSTRAINT` for every constraint violation, `SQLITE_BUSY`, …).
    package var primaryCode: Int32 { code & 0xff }

    /// True when another connection held the lock for longer than the busy timeout.
    package var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    /// "SQLite error 2067: UNIQUE constraint failed: devices.id (in: INSERT INTO devices…)".
    package var description: String {
        "SQLite error \(code): \(message)" + (statement.isEmpty ? "" : " (in: \(statement))")
    }

    /// The error of the last call on `connection`, which returned `code`.
    static func last(_ connection: OpaquePointer?, code: Int32, statement: String = "") -> SQLiteError {
        let text: UnsafePointer<CChar>?
        let extended: Int32
        if let connection {
            text = sqlite3_errmsg(connection)
            extended = sqlite3_extended_errcode(connection)
        } else {
            text = sqlite3_errstr(code)
            extended = code
        }
        return SQLiteError(
            code: extended, message: text.map { String(cString: $0) } ?? "unknown error", statement: statement)
    }

    /// An error found by the wrapper itself (a column that is not there, a NULL where a value was expected).
    static func misuse(_ message: String, statement: String) -> SQLiteError {
        SQLiteError(code: SQLITE_MISUSE, message: message, statement: statement)
    }
}
