import CLibPQ
import Foundation

/// A value bound to a statement parameter: text, or bytes (sent in binary, as `bytea`).
enum PostgresValue {
    case text(String)
    case bytes([UInt8])
    case null

    init(_ value: String?) { self = value.map { .text($0) } ?? .null }
    init(_ value: Int64?) { self = value.map { .text(String($0)) } ?? .null }
    init(_ value: Int?) { self = value.map { .text(String($0)) } ?? .null }
    init(_ value: Bool) { self = .text(value ? "t" : "f") }
    init(_ value: [UInt8]?) { self = value.map { .bytes($0) } ?? .null }
    /// A `bigint[]` literal.
    init(array: [Int64]) { self = .text("{" + array.map(String.init).joined(separator: ",") + "}") }
}

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
            for pointer in keywords { free(pointer) }
            for pointer in values { free(pointer) }
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
    var serverVersion: Int { Int(PQserverVersion(handle)) }

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
        defer { for buffer in buffers { free(buffer) } }
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

    private func check(_ result: PostgresResult, _ sql: String) throws(GatewayError) {
        let status = result.status
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return }
        let message = result.errorMessage ?? Self.message(PQerrorMessage(handle))
        if !isHealthy {
            prepared = [:]
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
        return String(cString: pointer).trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "\n", with: "; ")
    }
}

/// The rows of one statement (text format), freed with the value.
final class PostgresResult {
    private let handle: OpaquePointer?

    init(_ handle: OpaquePointer?) { self.handle = handle }
    deinit { PQclear(handle) }

    var status: ExecStatusType { handle.map { PQresultStatus($0) } ?? PGRES_FATAL_ERROR }
    var errorMessage: String? {
        guard let handle, let text = PQresultErrorMessage(handle), text.pointee != 0 else { return nil }
        return PostgresConnection.message(text)
    }
    var sqlState: String? {
        guard let handle, let text = PQresultErrorField(handle, Int32(UInt8(ascii: "C"))) else { return nil }
        return String(cString: text)
    }

    /// Rows returned.
    var count: Int { handle.map { Int(PQntuples($0)) } ?? 0 }
    /// Rows a command touched (`DELETE`, `UPDATE`).
    var affected: Int {
        guard let handle, let text = PQcmdTuples(handle) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    func isNull(_ row: Int, _ column: Int) -> Bool {
        guard let handle else { return true }
        return PQgetisnull(handle, Int32(row), Int32(column)) != 0
    }

    func string(_ row: Int, _ column: Int) -> String? {
        guard let handle, !isNull(row, column), let text = PQgetvalue(handle, Int32(row), Int32(column)) else {
            return nil
        }
        return String(cString: text)
    }

    func int64(_ row: Int, _ column: Int) -> Int64? { string(row, column).flatMap { Int64($0) } }
    func int(_ row: Int, _ column: Int) -> Int? { string(row, column).flatMap { Int($0) } }
    func bool(_ row: Int, _ column: Int) -> Bool { string(row, column) == "t" }

    /// A `bytea` column (text format: `\x` and hex digits).
    func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        guard let handle, !isNull(row, column), let text = PQgetvalue(handle, Int32(row), Int32(column)) else {
            return nil
        }
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return UnsafeBufferPointer(start: UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self), count: length)
            .withMemoryRebound(to: UInt8.self) { Self.decodeHex($0) }
    }

    private static func decodeHex(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        guard text.count >= 2, text[0] == UInt8(ascii: "\\"), text[1] == UInt8(ascii: "x") else { return [] }
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
            default: 0
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((text.count - 2) / 2)
        var index = 2
        while index + 1 < text.count {
            bytes.append(nibble(text[index]) << 4 | nibble(text[index + 1]))
            index += 2
        }
        return bytes
    }
}
