import CRouseSys

/// One netlink message: the `nlmsghdr` fields and the payload after the header.
public struct NetlinkMessage: Sendable, Equatable {
    /// `nlmsg_type` (e.g. `RTM_NEWLINK`, `NLMSG_DONE`, `NLMSG_ERROR`).
    public let type: UInt16
    /// `nlmsg_flags`.
    public let flags: UInt16
    /// `nlmsg_seq`: 0 for multicast events, the request's sequence for replies.
    public let sequence: UInt32
    /// `nlmsg_pid`.
    public let portID: UInt32
    /// The bytes after the header, up to `nlmsg_len`.
    public let payload: ArraySlice<UInt8>

    /// Creates a message (used by encoders and tests).
    public init(type: UInt16, flags: UInt16, sequence: UInt32, portID: UInt32, payload: ArraySlice<UInt8>) {
        self.type = type
        self.flags = flags
        self.sequence = sequence
        self.portID = portID
        self.payload = payload
    }

    /// Size of `struct nlmsghdr`.
    public static let headerSize = MemoryLayout<nlmsghdr>.size

    /// Splits a datagram into messages (`NLMSG_OK`/`NLMSG_NEXT`), failing on a bad `nlmsg_len`.
    public static func split(_ datagram: ArraySlice<UInt8>) throws(NetlinkError) -> [NetlinkMessage] {
        let reader = ByteReader(datagram)
        var offset = 0
        var messages: [NetlinkMessage] = []
        while offset < reader.count {
            guard reader.count - offset >= headerSize else {
                throw NetlinkError(.truncated, "nlmsghdr: \(reader.count - offset) trailing bytes, need \(headerSize)")
            }
            let length = Int(try reader.integer(UInt32.self, at: offset, "nlmsg_len"))
            guard length >= headerSize else {
                throw NetlinkError(.badLength, "nlmsghdr: nlmsg_len \(length) smaller than the header")
            }
            guard offset + length <= reader.count else {
                throw NetlinkError(.truncated, "nlmsghdr: nlmsg_len \(length) runs past \(reader.count - offset) bytes")
            }
            let type = try reader.integer(UInt16.self, at: offset + 4, "nlmsg_type")
            let flags = try reader.integer(UInt16.self, at: offset + 6, "nlmsg_flags")
            let sequence = try reader.integer(UInt32.self, at: offset + 8, "nlmsg_seq")
            let portID = try reader.integer(UInt32.self, at: offset + 12, "nlmsg_pid")
            let payload = try reader.slice(at: offset + headerSize, length: length - headerSize, "nlmsg payload")
            messages.append(
                NetlinkMessage(type: type, flags: flags, sequence: sequence, portID: portID, payload: payload))
            offset += Int(rouse_nlmsg_align(UInt32(length)))
        }
        return messages
    }

    /// For `NLMSG_ERROR`: the (positive) errno, or 0 for an acknowledgement.
    public func errorCode() throws(NetlinkError) -> Int32 {
        let value = try ByteReader(payload).integer(Int32.self, at: 0, "nlmsgerr.error")
        return value == Int32.min ? Int32.max : -value
    }
}
