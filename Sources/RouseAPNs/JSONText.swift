/// Hand-written JSON text helpers for the hot path (no Foundation encoders).
public enum JSONText {
    /// Escapes `value` for use inside a JSON string literal (quotes not included).
    public static func escape(_ value: String) -> String {
        var needsEscaping = false
        for byte in value.utf8 where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
            needsEscaping = true
            break
        }
        if !needsEscaping { return value }
        var output = ""
        output.reserveCapacity(value.utf8.count + 8)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output
    }

    /// `"value"` with escaping.
    public static func quoted(_ value: String) -> String { "\"" + escape(value) + "\"" }

    /// The body of an APNs error response: `{"reason":"…"}`, plus `"timestamp":<ms>` for 410.
    public static func errorBody(reason: APNsReason, timestamp: Int64? = nil) -> [UInt8] {
        var text = "{\"reason\":" + quoted(reason.rawValue)
        if let timestamp { text += ",\"timestamp\":" + String(timestamp) }
        text += "}"
        return Array(text.utf8)
    }
}
