extension JSONText {
    /// Reads one JSON string from `bytes` (`index` on its opening quote; after it on return): its escapes decoded,
    /// control characters and invalid UTF-8 refused, each error with what is wrong and the byte offset where (the
    /// offending byte; for invalid UTF-8, the closing quote; for an unterminated string, the end). One scanner for
    /// both JSON readers of the project: JSONText's and rouse-pushd's streaming `PushAPIJSONReader`.
    package static func scanString(
        _ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int
    ) throws(SyntaxError) -> String {
        func fail(_ reason: String) -> SyntaxError { SyntaxError(reason: reason, offset: index) }
        index += 1
        let start = index
        // The common case: no escape, the bytes are the string.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let text = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                else { throw fail("invalid UTF-8 in the string that ends") }
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("control character 0x\(String(byte, radix: 16, uppercase: true)) in a string") }
            index += 1
        }
        var decoded = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: decoded, as: UTF8.self) else {
                    throw fail("invalid UTF-8 in the string that ends")
                }
                index += 1
                return text
            case UInt8(ascii: "\\"):
                index += 1
                try escape(bytes, at: &index, into: &decoded)
            case 0..<0x20:
                throw fail("control character 0x\(String(byte, radix: 16, uppercase: true)) in a string")
            default:
                decoded.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    /// `'x'` for a visible ASCII byte, `byte 0xNN` for others; "unexpected end" past the end.
    package static func describe(_ byte: UInt8?) -> String {
        guard let byte else { return "unexpected end" }
        return "unexpected " + name(byte)
    }

    /// `'x'` for a visible ASCII byte, `byte 0xNN` for others.
    package static func name(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    /// One escape after its backslash.
    private static func escape(
        _ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int, into decoded: inout [UInt8]
    ) throws(SyntaxError) {
        func fail(_ reason: String) -> SyntaxError { SyntaxError(reason: reason, offset: index) }
        guard index < bytes.count else { throw fail("unterminated string") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(byte)
        case UInt8(ascii: "b"): decoded.append(0x08)
        case UInt8(ascii: "f"): decoded.append(0x0C)
        case UInt8(ascii: "n"): decoded.append(0x0A)
        case UInt8(ascii: "r"): decoded.append(0x0D)
        case UInt8(ascii: "t"): decoded.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try hex4(bytes, at: &index)
            if (0xD800..<0xDC00).contains(scalar) {
                guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { throw fail("a high surrogate escape without its low surrogate") }
                index += 2
                let low = try hex4(bytes, at: &index)
                guard (0xDC00..<0xE000).contains(low) else {
                    throw fail("a high surrogate escape without its low surrogate")
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00..<0xE000).contains(scalar) {
                throw fail("a low surrogate escape without its high surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw fail("an escape of no Unicode scalar") }
            decoded.append(contentsOf: String(Character(unicode)).utf8)
        default:
            index -= 1
            throw fail("invalid escape: a backslash before \(name(byte))")
        }
    }

    private static func hex4(_ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int) throws(SyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard index < bytes.count else { throw SyntaxError(reason: "unterminated \\u escape", offset: index) }
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw SyntaxError(reason: "\(describe(byte)) in a \\u escape", offset: index)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
