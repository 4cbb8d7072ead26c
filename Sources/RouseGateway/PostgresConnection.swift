import CLibPQ
import FoundationEssentials
import Glibc
import RouseSystem
import RouseText

/// One PostgreSQL connection through libpq: the only file that calls libpq.
///
/// Synchronous calls, made by one thread at a time (its owner, the store, holds a lock around each use). Statements
/// are prepared once per connection and then run by name (`PQexecPrepared`): the server parses and plans each
/// SQL text once. Errors: a connection that broke (`PQstatus` is `CONNECTION_BAD` after a call) is
/// `GatewayError.unavailable`; anything the server refused is `GatewayError.storage` with its SQLSTATE.
final class PostgresConnection {
    private let handle: OpaquePointer
    private var prepared: [String: String] = [:]

    /// Connects with libpq keyword/value pairs; a failure says which setting it blames.
    init(settings: PostgresSettings) throws(GatewayError) {
        let pairs = try settings.connectionParameters()
        let keywords = pairs.map { strdup($0.0) } + [nil]
        let values = pairs.map { strdup($0.1) } + [nil]
        defer {
            for pointer in keywords { Sys.free(pointer) }
            for pointer in values { Sys.free(pointer) }
        }
        let connection = keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keywordBuffer in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valueBuffer in
                PQconnectdbParams(keywordBuffer.baseAddress, valueBuffer.baseAddress, 1)
            }
        }
        guard let connection else { throw .unavailable("postgres: libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.message(PQerrorMessage(connection))
            PQfinish(connection)
            throw .unavailable("\(settings.blame(message)): cannot connect to \(settings.displayName): \(message)")
        }
        handle = connection
    }

    deinit { PQfinish(handle) }

    /// False once the connection broke (the server went away); such a connection is replaced, not reused.
    var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    /// The server's version number (150018 for 15.18).

    /// Runs a statement without parameters (`BEGIN`, DDL, several statements separated by `;`).
    func execute(_ sql: String) throws(GatewayError) {
        let result = PostgresResult(PQexec(handle, sql))
        try check(result, sql)
    }

    /// Runs a prepared statement (prepared on first use) with `parameters`; returns its rows.
    @discardableResult
    func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(GatewayError) -> PostgresResult {
        let name: String
        if let known = prepared[sql] {
            name = known
        } else {
            name = "s\(prepared.count + 1)"
            let result = PostgresResult(PQprepare(handle, name, sql, Int32(parameters.count), nil))
            try check(result, sql)
            prepared[sql] = name
        }
        var lengths: [Int32] = []
        var formats: [Int32] = []
        var buffers: [UnsafeMutablePointer<CChar>?] = []
        defer { for buffer in buffers { Sys.free(buffer) } }
        for parameter in parameters {
            switch parameter {
            case .null:
                buffers.append(nil)
                lengths.append(0)
                formats.append(0)
            case .text(let text):
                buffers.append(strdup(text))
                lengths.append(0)
                formats.append(0)
            case .bytes(let bytes):
                let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(bytes.count, 1))
                bytes.withUnsafeBytes { raw in
                    if let base = raw.baseAddress {
                        UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: raw.count)
                    }
                }
                buffers.append(buffer)
                lengths.append(Int32(bytes.count))
                formats.append(1)
            }
        }
        let values = buffers.map { UnsafePointer($0) }
        let result = PostgresResult(
            PQexecPrepared(handle, name, Int32(parameters.count), values, lengths, formats, 0))
        try check(result, sql)
        return result
    }

    /// The connection's socket, to wait on for notifications (`LISTEN`).
    var socket: Int32 { PQsocket(handle) }

    /// Reads what the server sent and returns the payloads of the notifications received; a broken connection is
    /// `GatewayError.unavailable`.
    func notifications() throws(GatewayError) -> [String] {
        guard PQconsumeInput(handle) == 1, isHealthy else {
            throw .unavailable("postgres: connection lost: \(Self.message(PQerrorMessage(handle)))")
        }
        var payloads: [String] = []
        while let notification = PQnotifies(handle) {
            payloads.append(String(cString: notification.pointee.extra))
            PQfreemem(notification)
        }
        return payloads
    }

    private func check(_ result: PostgresResult, _ sql: String) throws(GatewayError) {
        let status = result.status
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return }
        let message = result.errorMessage ?? Self.message(PQerrorMessage(handle))
        if !isHealthy {
            // A lost connection is never used again (the store replaces it): its prepared statements go with it.
            throw .unavailable("postgres: connection lost: \(message)")
        }
        let state = result.sqlState ?? "?????"
        // 57P01..57P03: the server shuts down or cannot take connections now; 08xxx: connection exceptions.
        if state.hasPrefix("57P") || state.hasPrefix("08") {
            throw .unavailable("postgres: SQLSTATE \(state): \(message)")
        }
        let statement = sql.split(separator: "\n").first.map { String($0.prefix(80)) } ?? ""
        throw .storage("postgres: SQLSTATE \(state): \(message) (in: \(statement))")
    }

    static func message(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "unknown error" }
        return String(cString: pointer).trimmingWhitespace()
            .replacingAll("\n", with: "; ")
    }
}
