/// What libpq or the server refused: a connection that could not be made or broke, a server that does not serve now,
/// or a statement it refused, with libpq's or the server's message and the SQLSTATE it answered with.
///
/// SQLSTATEs are PostgreSQL's, not ours, so the state stays the server's text (`23505`, `55P03`, …).
package struct PostgresError: Error, Sendable, CustomStringConvertible {
    private enum Code: Sendable {
        case connect
        case noMemory
        case lost
        case unavailable
        case refused
        case library
    }

    private let code: Code
    /// libpq's or the server's message, on one line.
    package let message: String
    /// The SQLSTATE the server answered with (nil when none came: a connection that failed or broke).
    package let sqlState: String?
    /// The first line of the statement that failed, at most 80 characters (empty when the failure is no statement's).
    package let statement: String

    private init(_ code: Code, _ message: String, sqlState: String? = nil, statement: String = "") {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.statement = statement
    }

    /// Connecting failed: `message` is libpq's, naming the cause (a refused connection, a password, a database…).
    static func connect(_ message: String) -> PostgresError { PostgresError(.connect, message) }
    /// libpq itself could not be loaded (`dlopen`): an installation problem, not the server's.
    static func library(_ message: String) -> PostgresError { PostgresError(.library, message) }
    /// libpq could not allocate a connection.
    static var noMemory: PostgresError { PostgresError(.noMemory, "libpq could not allocate a connection") }
    /// The connection broke (the server went away): it is not used again.
    static func lost(_ message: String) -> PostgresError { PostgresError(.lost, message) }
    /// The server shuts down or takes no connections now (SQLSTATE 57P01–57P03), or a connection exception (08xxx).
    static func unavailable(_ state: String, _ message: String) -> PostgresError {
        PostgresError(.unavailable, message, sqlState: state)
    }
    /// The server refused the statement `sql` (only its first line is kept).
    static func refused(_ state: String, _ message: String, sql: String) -> PostgresError {
        let statement = sql.split(separator: "\n").first.map { String($0.prefix(80)) } ?? ""
        return PostgresError(.refused, message, sqlState: state, statement: statement)
    }

    /// True when the server could not be reached or does not serve now (connecting failed, the connection broke,
    /// SQLSTATE 57P01–57P03 or 08xxx): nothing was done, or the outcome of a COMMIT is unknown. False when the
    /// server refused the statement.
    package var isUnavailable: Bool { code != .refused && code != .library }

    /// True when libpq could not be loaded: no server was asked, and asking again will not help until libpq5 is
    /// installed.
    package var isLibraryMissing: Bool { code == .library }

    /// True when connecting failed (``message`` is libpq's, naming the cause).
    package var isConnectFailure: Bool { code == .connect }

    /// "postgres: SQLSTATE 23505: duplicate key value … (in: INSERT INTO devices…)", "postgres: connection lost: …".
    package var description: String {
        switch code {
        case .connect: "postgres: cannot connect: \(message)"
        case .noMemory: "postgres: \(message)"
        case .library: "postgres: libpq5 is not installed or not usable: \(message)"
        case .lost: "postgres: connection lost: \(message)"
        case .unavailable: "postgres: SQLSTATE \(sqlState ?? "?????"): \(message)"
        case .refused: "postgres: SQLSTATE \(sqlState ?? "?????"): \(message) (in: \(statement))"
        }
    }
}
