import RouseWire

/// Hand-written JSON text helpers for the hot path (no Foundation encoders).
public enum JSONText {
    /// Escapes `value` for use inside a JSON string literal (quotes not included).
    public static func escape(_ value: String) -> String { JSONString.escape(value) }

    /// `"value"` with escaping.
    public static func quoted(_ value: String) -> String { JSONString.quoted(value) }

    /// The body of an APNs error response: `{"reason":"…"}`, plus `"timestamp":<ms>` for 410.
    public static func errorBody(reason: APNsReason, timestamp: Int64? = nil) -> [UInt8] {
        var text = "{\"reason\":" + quoted(reason.rawValue)
        if let timestamp { text += ",\"timestamp\":" + String(timestamp) }
        text += "}"
        return Array(text.utf8)
    }
}
