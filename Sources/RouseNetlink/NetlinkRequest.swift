import CRouseSys

/// Encodes rtnetlink requests: dumps, `RTM_GETROUTE` lookups, and the few changes the benchmark
/// and tests make (link up/down, route add/delete). Pure bytes; sending is `NetlinkSocket`'s job.
public struct NetlinkRequest: Sendable, Equatable {
    /// The encoded message, `nlmsg_len` filled in.
    public private(set) var bytes: [UInt8]
    /// The sequence number written in the header.
    public let sequence: UInt32

    private init(type: UInt16, flags: UInt16, sequence: UInt32, fixedHeader: [UInt8]) {
        self.sequence = sequence
        bytes = []
        append(UInt32(0))
        append(type)
        append(flags)
        append(sequence)
        append(UInt32(0))
        bytes += fixedHeader
        pad()
        setLength()
    }

    private mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value) { bytes += $0 }
    }

    private mutating func pad() {
        while bytes.count % 4 != 0 { bytes.append(0) }
    }

    private mutating func setLength() {
        let length = UInt32(bytes.count)
        withUnsafeBytes(of: length) { raw in
            for index in 0..<4 { bytes[index] = raw[index] }
        }
    }

    private mutating func attribute(_ type: UInt16, _ payload: [UInt8]) {
        let headerSize = MemoryLayout<rtattr>.size
        append(UInt16(headerSize + payload.count))
        append(type)
        bytes += payload
        pad()
        setLength()
    }

    private static func integerBytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value) { Array($0) }
    }

    /// A dump request (`NLM_F_REQUEST|NLM_F_DUMP`) for links, addresses, routes or rules.
    public static func dump(_ kind: DumpKind, family: UInt8 = 0, sequence: UInt32) -> NetlinkRequest {
        let type: UInt16
        let headerSize: Int
        switch kind {
        case .links: (type, headerSize) = (RTNL.getLink, MemoryLayout<ifinfomsg>.size)
        case .addresses: (type, headerSize) = (RTNL.getAddress, MemoryLayout<ifaddrmsg>.size)
        case .routes: (type, headerSize) = (RTNL.getRoute, MemoryLayout<rtmsg>.size)
        case .rules: (type, headerSize) = (RTNL.getRule, MemoryLayout<fib_rule_hdr>.size)
        }
        var header = [UInt8](repeating: 0, count: headerSize)
        header[0] = family
        return NetlinkRequest(
            type: type, flags: RTNL.request | RTNL.dump, sequence: sequence, fixedHeader: header)
    }

    /// What a dump lists.
    public enum DumpKind: Sendable, CaseIterable {
        case links
        case addresses
        case routes
        case rules
    }

    /// An `RTM_GETROUTE` FIB lookup toward `destination`, optionally from `source` (an address pair):
    /// what `ip route get DST [from SRC]` sends. Honours policy rules. With `fibMatch` the kernel
    /// answers with the matched FIB entry (its prefix and table) instead of the resolved path
    /// (`ip route get fibmatch`).
    public static func routeLookup(
        to destination: IPAddress, from source: IPAddress? = nil, fibMatch: Bool = false, sequence: UInt32
    ) -> NetlinkRequest {
        var header = [UInt8](repeating: 0, count: MemoryLayout<rtmsg>.size)
        header[0] = destination.family.addressFamily
        header[1] = destination.family.bitCount
        if source != nil { header[2] = destination.family.bitCount }
        if fibMatch { withUnsafeBytes(of: RTNL.rtmFFibMatch) { for index in 0..<4 { header[8 + index] = $0[index] } } }
        var request = NetlinkRequest(type: RTNL.getRoute, flags: RTNL.request, sequence: sequence, fixedHeader: header)
        request.attribute(RTNL.rtaDst, destination.bytes)
        if let source { request.attribute(RTNL.rtaSrc, source.bytes) }
        return request
    }

    /// `RTM_NEWLINK` setting or clearing `IFF_UP` on a link (`ip link set DEV up|down`), with an ack.
    public static func setLink(index: Int32, up: Bool, sequence: UInt32) -> NetlinkRequest {
        var header: [UInt8] = [0, 0, 0, 0]
        header += integerBytes(index)
        header += integerBytes(up ? RTNL.iffUp : 0)
        header += integerBytes(RTNL.iffUp)
        return NetlinkRequest(
            type: RTNL.newLink, flags: RTNL.request | RTNL.ack, sequence: sequence, fixedHeader: header)
    }

    /// `RTM_NEWROUTE`/`RTM_DELROUTE` for a static unicast route in the main table, with an ack.
    public static func route(
        add: Bool, destination: IPAddress, prefixLength: UInt8, gateway: IPAddress?, interfaceIndex: Int32,
        sequence: UInt32
    ) -> NetlinkRequest {
        var header = [UInt8](repeating: 0, count: MemoryLayout<rtmsg>.size)
        header[0] = destination.family.addressFamily
        header[1] = prefixLength
        header[4] = RTNL.rtTableMain
        header[5] = RTNL.rtProtStatic
        header[6] = gateway == nil ? RTNL.rtScopeLink : RTNL.rtScopeUniverse
        header[7] = RTNL.rtnUnicast
        let flags = add ? RTNL.request | RTNL.ack | RTNL.create | RTNL.excl : RTNL.request | RTNL.ack
        var request = NetlinkRequest(
            type: add ? RTNL.newRoute : RTNL.delRoute, flags: flags, sequence: sequence, fixedHeader: header)
        if prefixLength > 0 { request.attribute(RTNL.rtaDst, destination.bytes) }
        if let gateway { request.attribute(RTNL.rtaGateway, gateway.bytes) }
        request.attribute(RTNL.rtaOif, integerBytes(interfaceIndex))
        return request
    }
}
