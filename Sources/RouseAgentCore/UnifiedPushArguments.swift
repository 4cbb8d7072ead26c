/// The UnifiedPush D-Bus specification's rules on arguments (docs/unifiedpush.md): what a distributor accepts in
/// `Register` and `Unregister`. A call that breaks one is ignored, as the specification says.
package enum UnifiedPushArguments {
    /// A connection token: 1 to 100 bytes of UTF-8.
    package static let maximumTokenBytes = 100
    /// A description: at most 100 bytes.
    package static let maximumDescriptionBytes = 100

    /// Why an argument was refused (logged; the call is then ignored).
    package struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong.
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// A valid token, or why not.
    package static func checkToken(_ token: String) -> Problem? {
        if token.isEmpty { return Problem("empty token") }
        if token.utf8.count > maximumTokenBytes { return Problem("token over \(maximumTokenBytes) bytes") }
        return nil
    }

    /// A valid description, or why not.
    package static func checkDescription(_ description: String) -> Problem? {
        description.utf8.count > maximumDescriptionBytes
            ? Problem("description over \(maximumDescriptionBytes) bytes") : nil
    }

    /// A D-Bus well-known bus name an app can be activated as (`org.kde.tokodon`): 2 or more dot-separated elements
    /// of `[A-Za-z0-9_-]`, none starting with a digit, at most 255 bytes, no leading `:` (a unique name is no app).
    package static func checkService(_ name: String) -> Problem? {
        guard !name.isEmpty, name.utf8.count <= 255 else { return Problem("service name empty or over 255 bytes") }
        let elements = name.split(separator: ".", omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return Problem("service name has fewer than two elements") }
        for element in elements {
            guard let first = element.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
                return Problem("service name element empty or starting with a digit")
            }
            for byte in element.utf8 where !isNameByte(byte) {
                return Problem("service name holds a byte outside [A-Za-z0-9_-]")
            }
        }
        return nil
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: "-")
    }

    /// A VAPID public key: a P-256 uncompressed point (65 bytes, first 0x04) in unpadded base64url, 87 characters.
    package static func checkVAPID(_ key: String) -> Problem? {
        guard key.utf8.count == 87 else { return Problem("VAPID key not 87 characters") }
        guard let bytes = base64URLDecode(key) else { return Problem("VAPID key not base64url") }
        guard bytes.count == 65, bytes.first == 0x04 else {
            return Problem("VAPID key not an uncompressed P-256 point")
        }
        return nil
    }

    /// Unpadded base64url (RFC 4648 §5) decoded; nil for any other character, a bad length, or non-zero trailing
    /// bits.
    package static func base64URLDecode(_ text: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text.utf8 {
            let value: UInt32
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(character - UInt8(ascii: "A"))
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(character - UInt8(ascii: "a")) + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(character - UInt8(ascii: "0")) + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            accumulator = (accumulator << 6) | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8((accumulator >> UInt32(bits)) & 0xFF))
            }
        }
        // A lone 6-bit group cannot end a text; the bits left over must be zero.
        guard bits != 6, accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return bytes
    }
}
