import CRouseSys

/// Bounds-checked reads of host-order integers from a byte slice. Every read names what it reads
/// so a short buffer fails with a precise `NetlinkError`.
package struct ByteReader: Sendable {
    package let bytes: ArraySlice<UInt8>

    package init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    package var count: Int { bytes.count }

    /// Reads a fixed-width integer at `offset` (relative to the start of the slice).
    package func integer<T: FixedWidthInteger>(_: T.Type, at offset: Int, _ what: String) throws(NetlinkError) -> T {
        let size = MemoryLayout<T>.size
        guard offset >= 0, offset + size <= bytes.count else {
            throw NetlinkError(.truncated, "\(what): need \(offset + size) bytes, have \(bytes.count)")
        }
        let start = bytes.startIndex + offset
        var value: T = 0
        withUnsafeMutableBytes(of: &value) { out in
            for index in 0..<size { out[index] = bytes[start + index] }
        }
        return value
    }

    /// The sub-slice `[offset, offset + length)`.
    package func slice(at offset: Int, length: Int, _ what: String) throws(NetlinkError) -> ArraySlice<UInt8> {
        guard offset >= 0, length >= 0, offset + length <= bytes.count else {
            throw NetlinkError(.truncated, "\(what): need \(offset + length) bytes, have \(bytes.count)")
        }
        let start = bytes.startIndex + offset
        return bytes[start..<(start + length)]
    }
}

/// One routing attribute (`struct rtattr`): its type (flags masked off) and payload.
public struct NetlinkAttribute: Sendable, Equatable {
    /// `rta_type` without `NLA_F_NESTED` / `NLA_F_NET_BYTEORDER`.
    public let type: UInt16
    /// The payload bytes (header excluded, padding excluded).
    public let payload: ArraySlice<UInt8>

    /// Walks a run of attributes (`RTA_OK`/`RTA_NEXT`), failing on a bad length or truncation.
    public static func parse(_ bytes: ArraySlice<UInt8>, _ what: String) throws(NetlinkError) -> [NetlinkAttribute] {
        let reader = ByteReader(bytes)
        let headerSize = MemoryLayout<rtattr>.size
        var offset = 0
        var result: [NetlinkAttribute] = []
        while offset < reader.count {
            guard reader.count - offset >= headerSize else {
                throw NetlinkError(.truncated, "\(what): \(reader.count - offset) trailing bytes, less than an rtattr")
            }
            let length = Int(try reader.integer(UInt16.self, at: offset, "\(what) rta_len"))
            let rawType = try reader.integer(UInt16.self, at: offset + 2, "\(what) rta_type")
            guard length >= headerSize else {
                throw NetlinkError(.badLength, "\(what): rta_len \(length) smaller than the rtattr header")
            }
            guard offset + length <= reader.count else {
                throw NetlinkError(
                    .truncated, "\(what): attribute \(rawType) of \(length) bytes runs past \(reader.count - offset)")
            }
            let payload = try reader.slice(at: offset + headerSize, length: length - headerSize, what)
            result.append(NetlinkAttribute(type: rawType & rouse_nla_type_mask(), payload: payload))
            offset += Int(rouse_rta_align(UInt32(length)))
        }
        return result
    }

    /// The payload as an address of 4 or 16 bytes.
    public func address(_ what: String) throws(NetlinkError) -> IPAddress {
        guard let address = IPAddress(bytes: payload) else {
            throw NetlinkError(.badAttribute, "\(what): address of \(payload.count) bytes")
        }
        return address
    }

    /// The payload as an exact-size integer.
    public func integer<T: FixedWidthInteger>(_: T.Type, _ what: String) throws(NetlinkError) -> T {
        guard payload.count == MemoryLayout<T>.size else {
            throw NetlinkError(.badAttribute, "\(what): \(payload.count) bytes, expected \(MemoryLayout<T>.size)")
        }
        return try ByteReader(payload).integer(T.self, at: 0, what)
    }

    /// The payload as a NUL-terminated string (the terminator and anything after it dropped).
    public func string() -> String {
        String(decoding: payload.prefix { $0 != 0 }, as: UTF8.self)
    }
}
