/// `apns-id` values: canonical lowercase UUIDs (version 4), generated without Foundation.
public enum APNsID {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A random version-4 UUID in canonical lowercase 8-4-4-4-12 form.
    public static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    /// A random version-4 UUID drawn from `generator` (deterministic in tests).
    public static func random(using generator: inout some RandomNumberGenerator) -> String {
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<8 {
            bytes[index] = UInt8(truncatingIfNeeded: high >> UInt64(56 - 8 * index))
            bytes[8 + index] = UInt8(truncatingIfNeeded: low >> UInt64(56 - 8 * index))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return format(bytes)
    }

    /// Formats 16 bytes as a canonical lowercase UUID.
    static func format(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { output.append(UInt8(ascii: "-")) }
            output.append(hexDigits[Int(byte >> 4)])
            output.append(hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }
}
