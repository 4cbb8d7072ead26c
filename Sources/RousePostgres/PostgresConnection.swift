import CRousePQ
import FoundationEssentials
import Glibc
import RouseSystem
import RouseText

/// One PostgreSQL connection through libpq (with ``PostgresResult``, the only code that calls libpq).
///
/// Synchronous calls, made by one thread at a time (its owner holds a lock around each use). Statements are prepared
/// once per connection and then run by name (`PQexecPrepared`): the server parses and plans each SQL text once.
/// Errors are ``PostgresError``s: a connection that broke (`PQstatus` is `CONNECTION_BAD` after a call) or a server
/// that does not serve now is ``PostgresError/isUnavailable``; anything else the server refused carries its SQLSTATE.
package final class PostgresConnection {
    private let handle: OpaquePointer
    private var prepared: [String: String] = [:]

    /// Connects with libpq keyword/value pairs (`host`, `dbname`, `connect_timeout`…; a `dbname` holding a URL is
    /// expanded); a failure is ``PostgresError/isConnectFailure`` with libpq's message.
    package init(parameters pairs: [(String, String)]) throws(PostgresError) {
        if let why = rouse_pq_load() {
            throw .library(String(cString: why))
        }
        let keywords = pairs.map { strdup($0.0) } + [nil]
        let values = pairs.map { strdup($0.1) } + [nil]
        defer {
            for pointer in keywords { Sys.free(pointer) }
            for pointer in values { Sys.free(pointer) }
        }
        let connection = keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keywordBuffer in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valueBuffer in
                rouse_pq_connectdb_params(keywordBuffer.baseAddress, valueBuffer.baseAddress, 1)
            }
        }
        guard let connection else { throw .noMemory }
        guard rouse_pq_status(connection) == CONNECTION_OK else {
            let message = Self.message(rouse_pq_error_message(connection))
            rouse_pq_finish(connection)
            throw .connect(message)
        }
        handle = connection
    }

    deinit { rouse_pq_finish(handle) }

    /// False once the connection broke (the server went away); such a connection is replaced, not reused.
    package var isHealthy: Bool { rouse_pq_status(handle) == CONNECTION_OK }

    /// Runs a statement without parameters (`BEGIN`, DDL, several statements separated by `;`).
    package func execute(_ sql: String) throws(PostgresError) {
        let result = PostgresResult(rouse_pq_exec(handle, sql))
        try check(result, sql)
    }

    /// Runs a prepared statement (prepared on first use) with `parameters`; returns its rows.
    @discardableResult
    package func query(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        let name: String
        if let known = prepared[sql] {
            name = known
        } else {
            name = "s\(prepared.count + 1)"
            let result = PostgresResult(rouse_pq_prepare(handle, name, sql, Int32(parameters.count), nil))
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
            rouse_pq_exec_prepared(handle, name, Int32(parameters.count), values, lengths, formats, 0))
        try check(result, sql)
        return result
    }

    /// The connection's socket, to wait on for notifications (`LISTEN`).
    package var socket: Int32 { rouse_pq_socket(handle) }

    /// Reads what the server sent and returns the payloads of the notifications received; a broken connection is
    /// ``PostgresError/isUnavailable``.
    package func notifications() throws(PostgresError) -> [String] {
        guard rouse_pq_consume_input(handle) == 1, isHealthy else {
            throw .lost(Self.message(rouse_pq_error_message(handle)))
        }
        var payloads: [String] = []
        while let notification = rouse_pq_notifies(handle) {
            payloads.append(String(cString: notification.pointee.extra))
            rouse_pq_freemem(notification)
        }
        return payloads
    }

    private func check(_ result: PostgresResult, _ sql: String) throws(PostgresError) {
        let status = result.status
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return }
        let message = result.errorMessage ?? Self.message(rouse_pq_error_message(handle))
        if !isHealthy {
            // A lost connection is never used again (the store replaces it): its prepared statements go with it.
            throw .lost(message)
        }
        let state = result.sqlState ?? "?????"
        // 57P01..57P03: the server shuts down or cannot take connections now; 08xxx: connection exceptions.
        if state.hasPrefix("57P") || state.hasPrefix("08") {
            throw .unavailable(state, message)
        }
        throw .refused(state, message, sql: sql)
    }

    /// libpq's message text on one line ("unknown error" when there is none).
    static func message(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer else { return "unknown error" }
        return String(cString: pointer).trimmingWhitespace()
            .replacingAll("\n", with: "; ")
    }
}
