import Glibc
import RouseSystem

/// An IPv4 or IPv6 address as raw network-order bytes (4 or 16 of them).
public struct IPAddress: Hashable, Sendable, CustomStringConvertible, Comparable {
    /// The address family.
    public enum Family: Hashable, Sendable {
        case v4
        case v6

        /// The kernel's `AF_INET` / `AF_INET6`.
        public var addressFamily: UInt8 { self == .v4 ? UInt8(AF_INET) : UInt8(AF_INET6) }
        /// Bytes in an address of this family.
        public var byteCount: Int { self == .v4 ? 4 : 16 }
        /// Bits in an address of this family.
        public var bitCount: UInt8 { self == .v4 ? 32 : 128 }
    }

    /// Network-order bytes: 4 for IPv4, 16 for IPv6.
    public let bytes: [UInt8]

    /// The family, from the byte count.
    public var family: Family { bytes.count == 4 ? .v4 : .v6 }

    /// Creates an address from 4 or 16 network-order bytes; nil for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = Array(bytes)
    }

    /// Parses dotted-quad IPv4 or RFC 4291 IPv6 text (no zone, no brackets); nil if invalid.
    public init?(_ text: String) {
        guard let bytes = Sys.parseAddress(text) else { return nil }
        self.bytes = bytes
    }

    /// The all-zero address of a family (`0.0.0.0` or `::`).
    public static func unspecified(_ family: Family) -> IPAddress {
        IPAddress(uncheckedBytes: [UInt8](repeating: 0, count: family.byteCount))
    }

    private init(uncheckedBytes: [UInt8]) { self.bytes = uncheckedBytes }

    /// True for `0.0.0.0` and `::`.
    public var isUnspecified: Bool { bytes.allSatisfy { $0 == 0 } }

    /// True for `169.254.0.0/16` and `fe80::/10`.
    public var isLinkLocal: Bool {
        switch family {
        case .v4: return bytes[0] == 169 && bytes[1] == 254
        case .v6: return bytes[0] == 0xfe && (bytes[1] & 0xc0) == 0x80
        }
    }

    /// True for `127.0.0.0/8` and `::1`.
    public var isLoopback: Bool {
        switch family {
        case .v4: return bytes[0] == 127
        case .v6: return bytes == [UInt8](repeating: 0, count: 15) + [1]
        }
    }

    /// True when the first `prefixLength` bits equal those of `prefix` (same family only).
    public func isIn(prefix: IPAddress, length prefixLength: UInt8) -> Bool {
        guard prefix.family == family, prefixLength <= family.bitCount else { return false }
        var remaining = Int(prefixLength)
        var index = 0
        while remaining > 0 {
            let mask: UInt8 = remaining >= 8 ? 0xff : UInt8(truncatingIfNeeded: 0xff << (8 - remaining))
            if bytes[index] & mask != prefix.bytes[index] & mask { return false }
            remaining -= 8
            index += 1
        }
        return true
    }

    public var description: String {
        Sys.formatAddress(bytes) ?? bytes.map { String($0) }.joined(separator: ".")
    }

    public static func < (lhs: IPAddress, rhs: IPAddress) -> Bool {
        if lhs.bytes.count != rhs.bytes.count { return lhs.bytes.count < rhs.bytes.count }
        return lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
