import CRouseSys

/// A decoded `RTM_NEWRULE`/`RTM_DELRULE` (`struct fib_rule_hdr` plus attributes).
public struct RuleMessage: Sendable, Equatable {
    /// `family`.
    public var family: UInt8
    /// `dst_len`.
    public var destinationLength: UInt8
    /// `src_len`.
    public var sourceLength: UInt8
    /// `action` (`FR_ACT_*`).
    public var action: UInt8
    /// `FRA_TABLE` when present, else `table`.
    public var table: UInt32
    /// `FRA_PRIORITY`.
    public var priority: UInt32?
    /// `FRA_DST`.
    public var destination: IPAddress?
    /// `FRA_SRC`.
    public var source: IPAddress?

    /// Decodes the payload of a rule message.
    public static func decode(_ payload: ArraySlice<UInt8>) throws(NetlinkError) -> RuleMessage {
        let reader = ByteReader(payload)
        let size = MemoryLayout<fib_rule_hdr>.size
        guard reader.count >= size else {
            throw NetlinkError(.truncated, "fib_rule_hdr: \(reader.count) bytes, need \(size)")
        }
        var rule = RuleMessage(
            family: try reader.integer(UInt8.self, at: 0, "family"),
            destinationLength: try reader.integer(UInt8.self, at: 1, "dst_len"),
            sourceLength: try reader.integer(UInt8.self, at: 2, "src_len"),
            action: try reader.integer(UInt8.self, at: 7, "action"),
            table: UInt32(try reader.integer(UInt8.self, at: 4, "table"))
        )
        for attribute in try NetlinkAttribute.parse(
            try reader.slice(at: size, length: reader.count - size, "fra"), "fra")
        {
            switch attribute.type {
            case RTNL.fraTable: rule.table = try attribute.integer(UInt32.self, "FRA_TABLE")
            case RTNL.fraPriority: rule.priority = try attribute.integer(UInt32.self, "FRA_PRIORITY")
            case RTNL.fraDst: rule.destination = try attribute.address("FRA_DST")
            case RTNL.fraSrc: rule.source = try attribute.address("FRA_SRC")
            default: break
            }
        }
        return rule
    }
}
