/// JSON string literals written by hand, for the hot paths that do not go through a Foundation encoder (the
/// device channel's writer, APNs error bodies, tokens). One implementation: `RouseAPNs.JSONText` forwards here.
package enum JSONString {
    /// Escapes `value` for use inside a JSON string literal (quotes not included): `"`, `\` and the control
    /// characters; everything else, non-ASCII included, is written as is.
    package static func escape(_ value: String) -> String {
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
    package static func quoted(_ value: String) -> String { "\"" + escape(value) + "\"" }
}
