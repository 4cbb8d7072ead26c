import Synchronization

/// `apns-id` values: canonical lowercase UUIDs (version 4), generated without Foundation.
public enum APNsID {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// SplitMix64 state, seeded once from the system generator. An `apns-id` must be unique, not secret: a
    /// lock-free sequence avoids a `getrandom` system call per id (the mock hands out two per push).
    private static let sequence: Atomic<UInt64> = {
        var system = SystemRandomNumberGenerator()
        return Atomic(system.next())
    }()

    /// The next SplitMix64 output (thread-safe, lock-free).
    private static func nextFast() -> UInt64 {
        var z = sequence.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private struct FastGenerator: RandomNumberGenerator {
        mutating func next() -> UInt64 { APNsID.nextFast() }
    }

    /// A random version-4 UUID in canonical lowercase 8-4-4-4-12 form.
    public static func random() -> String {
        var generator = FastGenerator()
        return random(using: &generator)
    }

    /// A random version-4 UUID drawn from `generator` (deterministic in tests).
    public static func random(using generator: inout some RandomNumberGenerator) -> String {
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        // Version 4 (byte 6 high nibble) and RFC 4122 variant (byte 8 top bits).
        let h = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let l = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: 36) { out in
            var i = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    out[i] = UInt8(ascii: "-")
                    i += 1
                }
                let word = index < 8 ? h : l
                let byte = UInt8(truncatingIfNeeded: word >> UInt64(56 - 8 * (index & 7)))
                // Digits by arithmetic: the table's lazy global and bounds checks cost more than the rest.
                out[i] = lowercaseHexDigit(byte >> 4)
                out[i + 1] = lowercaseHexDigit(byte & 0x0F)
                i += 2
            }
            return i
        }
    }

    @inline(__always)
    private static func lowercaseHexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") &+ nibble : UInt8(ascii: "a") &+ (nibble &- 10)
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
