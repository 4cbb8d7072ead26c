import CRouseSys

/// A decoded `RTM_NEWADDR`/`RTM_DELADDR`: `ifaddrmsg` plus its addresses.
public struct AddressMessage: Sendable, Equatable, Hashable {
    /// `ifa_index`.
    public var index: Int32
    /// `ifa_prefixlen`.
    public var prefixLength: UInt8
    /// `IFA_FLAGS` when present (32 bits), else `ifa_flags`.
    public var flags: UInt32
    /// `ifa_scope` (`RT_SCOPE_*`).
    public var scope: UInt8
    /// The interface's own address: `IFA_LOCAL` when present (point-to-point), else `IFA_ADDRESS`.
    public var address: IPAddress
    /// `IFA_LABEL`.
    public var label: String?

    /// Creates an address description (for tests and decoders).
    public init(
        index: Int32, prefixLength: UInt8, flags: UInt32 = 0, scope: UInt8 = 0, address: IPAddress,
        label: String? = nil
    ) {
        self.index = index
        self.prefixLength = prefixLength
        self.flags = flags
        self.scope = scope
        self.address = address
        self.label = label
    }

    /// True when the address can source traffic: not tentative, not DAD-failed.
    public var isUsable: Bool { flags & (RTNL.ifaFTentative | RTNL.ifaFDadFailed) == 0 }

    /// Decodes the payload of an address message.
    public static func decode(_ payload: ArraySlice<UInt8>) throws(NetlinkError) -> AddressMessage {
        let reader = ByteReader(payload)
        let size = MemoryLayout<ifaddrmsg>.size
        guard reader.count >= size else {
            throw NetlinkError(.truncated, "ifaddrmsg: \(reader.count) bytes, need \(size)")
        }
        let family = try reader.integer(UInt8.self, at: 0, "ifa_family")
        let prefixLength = try reader.integer(UInt8.self, at: 1, "ifa_prefixlen")
        var flags = UInt32(try reader.integer(UInt8.self, at: 2, "ifa_flags"))
        let scope = try reader.integer(UInt8.self, at: 3, "ifa_scope")
        let index = Int32(bitPattern: try reader.integer(UInt32.self, at: 4, "ifa_index"))
        var address: IPAddress?
        var local: IPAddress?
        var label: String?
        for attribute in try NetlinkAttribute.parse(
            try reader.slice(at: size, length: reader.count - size, "ifa"), "ifa")
        {
            switch attribute.type {
            case RTNL.ifaAddress: address = try attribute.address("IFA_ADDRESS")
            case RTNL.ifaLocal: local = try attribute.address("IFA_LOCAL")
            case RTNL.ifaLabel: label = attribute.string()
            case RTNL.ifaFlags: flags = try attribute.integer(UInt32.self, "IFA_FLAGS")
            default: break
            }
        }
        guard let own = local ?? address else {
            throw NetlinkError(.badAttribute, "ifaddrmsg family \(family) index \(index): no IFA_ADDRESS or IFA_LOCAL")
        }
        let expected: UInt8 = own.family == .v4 ? RTNL.afInet : RTNL.afInet6
        guard family == expected else {
            throw NetlinkError(.badAttribute, "ifaddrmsg: family \(family) with a \(own.bytes.count)-byte address")
        }
        guard prefixLength <= own.family.bitCount else {
            throw NetlinkError(.badAttribute, "ifaddrmsg: prefix length \(prefixLength) for \(own)")
        }
        return AddressMessage(
            index: index, prefixLength: prefixLength, flags: flags, scope: scope, address: own, label: label)
    }
}
