import CRousePQ

/// The rows of one statement (text format), freed with the value.
package final class PostgresResult {
    private let handle: OpaquePointer?

    init(_ handle: OpaquePointer?) { self.handle = handle }
    deinit { rouse_pq_clear(handle) }

    var status: ExecStatusType { handle.map { rouse_pq_result_status($0) } ?? PGRES_FATAL_ERROR }
    var errorMessage: String? {
        guard let handle, let text = rouse_pq_result_error_message(handle), text.pointee != 0 else { return nil }
        return PostgresConnection.message(text)
    }
    var sqlState: String? {
        guard let handle, let text = rouse_pq_result_error_field(handle, Int32(UInt8(ascii: "C"))) else { return nil }
        return String(cString: text)
    }

    /// Rows returned.
    package var count: Int { handle.map { Int(rouse_pq_ntuples($0)) } ?? 0 }
    /// Rows a command touched (`DELETE`, `UPDATE`).
    package var affected: Int {
        guard let handle, let text = rouse_pq_cmd_tuples(handle) else { return 0 }
        return Int(String(cString: text)) ?? 0
    }

    /// Whether the value at `row`, `column` is NULL (true when there is no result).
    package func isNull(_ row: Int, _ column: Int) -> Bool {
        guard let handle else { return true }
        return rouse_pq_getisnull(handle, Int32(row), Int32(column)) != 0
    }

    /// The value at `row`, `column` as text (nil for NULL).
    package func string(_ row: Int, _ column: Int) -> String? {
        guard let handle, !isNull(row, column), let text = rouse_pq_getvalue(handle, Int32(row), Int32(column)) else {
            return nil
        }
        return String(cString: text)
    }

    /// The value at `row`, `column` as an integer (nil for NULL or not a number).
    package func int64(_ row: Int, _ column: Int) -> Int64? { string(row, column).flatMap { Int64($0) } }
    /// As ``int64(_:_:)``.
    package func int(_ row: Int, _ column: Int) -> Int? { string(row, column).flatMap { Int($0) } }
    /// A `boolean` column: true for `t`.
    package func bool(_ row: Int, _ column: Int) -> Bool { string(row, column) == "t" }

    /// A `bytea` column (text format: `\x` and hex digits).
    package func bytes(_ row: Int, _ column: Int) -> [UInt8]? {
        guard let handle, !isNull(row, column), let text = rouse_pq_getvalue(handle, Int32(row), Int32(column)) else {
            return nil
        }
        let length = Int(rouse_pq_getlength(handle, Int32(row), Int32(column)))
        return Self.decodeHex(
            UnsafeBufferPointer(start: UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self), count: length))
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
