import RouseNetlink
import Testing

/// Builds raw netlink bytes (host order, as the kernel sends them) for parser tests.
struct Bytes {
    var data: [UInt8] = []

    mutating func u8(_ value: UInt8) { data.append(value) }
    mutating func u16(_ value: UInt16) { withUnsafeBytes(of: value) { data += $0 } }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value) { data += $0 } }
    mutating func i32(_ value: Int32) { withUnsafeBytes(of: value) { data += $0 } }
    mutating func pad() { while data.count % 4 != 0 { data.append(0) } }

    mutating func attribute(_ type: UInt16, _ payload: [UInt8]) {
        u16(UInt16(4 + payload.count))
        u16(type)
        data += payload
        pad()
    }

    static func message(type: UInt16, flags: UInt16 = 0, sequence: UInt32 = 0, payload: [UInt8]) -> [UInt8] {
        var bytes = Bytes()
        bytes.u32(UInt32(16 + payload.count))
        bytes.u16(type)
        bytes.u16(flags)
        bytes.u32(sequence)
        bytes.u32(0)
        bytes.data += payload
        bytes.pad()
        return bytes.data
    }

    static func le32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value) { Array($0) } }
    static func cString(_ text: String) -> [UInt8] { Array(text.utf8) + [0] }
}

// Values from <linux/rtnetlink.h>, <linux/if_link.h>, <linux/if_addr.h> (UAPI, stable).
let rtmNewLink: UInt16 = 16
let rtmNewAddr: UInt16 = 20
let rtmNewRoute: UInt16 = 24
let nlmsgError: UInt16 = 2
let nlmsgDone: UInt16 = 3

/// A recorded-style RTM_NEWLINK for veth0 (index 3, ether, UP|LOWER_UP, operstate UP, kind veth).
func vethLinkMessage() -> [UInt8] {
    var payload = Bytes()
    payload.u8(0)
    payload.u8(0)
    payload.u16(1)  // ARPHRD_ETHER
    payload.i32(3)
    payload.u32(0x1 | 0x10000 | 0x40)  // IFF_UP | IFF_LOWER_UP | IFF_RUNNING
    payload.u32(0)
    payload.attribute(3, Bytes.cString("veth0"))  // IFLA_IFNAME
    payload.attribute(16, [6])  // IFLA_OPERSTATE = IF_OPER_UP
    var info = Bytes()
    info.attribute(1, Bytes.cString("veth"))  // IFLA_INFO_KIND
    payload.attribute(18 | 0x8000, info.data)  // IFLA_LINKINFO | NLA_F_NESTED
    return Bytes.message(type: rtmNewLink, payload: payload.data)
}

@Suite("rtnetlink parsing")
struct NetlinkParserTests {
    @Test("A link message decodes name, flags, operstate and nested IFLA_INFO_KIND")
    func linkMessage() throws {
        let messages = try NetlinkMessage.split(ArraySlice(vethLinkMessage()))
        #expect(messages.count == 1)
        guard case .newLink(let link) = try RouteNetlinkEvent.decode(messages[0]) else {
            Issue.record("not a link")
            return
        }
        #expect(link.index == 3)
        #expect(link.name == "veth0")
        #expect(link.kind == "veth")
        #expect(link.operState == 6)
        #expect(link.isUp)
        #expect(link.hasCarrier)
    }

    @Test("Two messages in one datagram, then NLMSG_DONE and NLMSG_ERROR")
    func multipleMessages() throws {
        var datagram = vethLinkMessage() + vethLinkMessage()
        datagram += Bytes.message(type: nlmsgDone, sequence: 7, payload: [0, 0, 0, 0])
        var error = Bytes()
        error.i32(-101)  // -ENETUNREACH
        error.data += [UInt8](repeating: 0, count: 16)
        datagram += Bytes.message(type: nlmsgError, sequence: 8, payload: error.data)
        let events = try NetlinkMessage.split(ArraySlice(datagram)).map { try RouteNetlinkEvent.decode($0) }
        #expect(events.count == 4)
        #expect(events[2] == .done(sequence: 7))
        #expect(events[3] == .error(errno: 101, sequence: 8))
    }

    @Test("A route with RTA_MULTIPATH: nexthops, gateways and RTNH_F_LINKDOWN / RTNH_F_DEAD")
    func multipathRoute() throws {
        var payload = Bytes()
        payload.data += [2, 0, 0, 0, 254, 4, 0, 1]  // AF_INET /0, table main, static, universe, unicast
        payload.u32(0)
        var hops = Bytes()
        hops.u16(16)
        hops.u8(0x10)  // RTNH_F_LINKDOWN
        hops.u8(0)
        hops.i32(3)
        hops.attribute(5, [10, 1, 0, 1])  // RTA_GATEWAY
        hops.u16(16)
        hops.u8(0x01)  // RTNH_F_DEAD
        hops.u8(1)
        hops.i32(4)
        hops.attribute(5, [10, 2, 0, 1])
        payload.attribute(9, hops.data)  // RTA_MULTIPATH
        payload.attribute(6, Bytes.le32(100))  // RTA_PRIORITY
        let messages = try NetlinkMessage.split(ArraySlice(Bytes.message(type: rtmNewRoute, payload: payload.data)))
        guard case .newRoute(let route) = try RouteNetlinkEvent.decode(messages[0]) else {
            Issue.record("not a route")
            return
        }
        #expect(route.isDefault)
        #expect(route.kind == .unicast)
        #expect(route.priority == 100)
        #expect(route.multipath.count == 2)
        #expect(route.multipath[0].isLinkDown)
        #expect(!route.multipath[0].isAlive)
        #expect(route.multipath[1].isDead)
        #expect(route.multipath[1].hops == 1)
        #expect(route.multipath[0].gateway == IPAddress("10.1.0.1"))
        #expect(route.multipath[1].interfaceIndex == 4)
    }

    @Test("An IPv6 address with the 32-bit IFA_FLAGS")
    func ipv6Address() throws {
        var payload = Bytes()
        payload.data += [10, 64, 0, 0]  // AF_INET6 /64
        payload.u32(3)
        let address = try #require(IPAddress("2001:db8::2"))
        payload.attribute(1, address.bytes)  // IFA_ADDRESS
        payload.attribute(8, Bytes.le32(0x40 | 0x80))  // IFA_FLAGS: TENTATIVE | PERMANENT
        let messages = try NetlinkMessage.split(ArraySlice(Bytes.message(type: rtmNewAddr, payload: payload.data)))
        guard case .newAddress(let decoded) = try RouteNetlinkEvent.decode(messages[0]) else {
            Issue.record("not an address")
            return
        }
        #expect(decoded.address == address)
        #expect(decoded.prefixLength == 64)
        #expect(decoded.flags == 0xc0)
        #expect(!decoded.isUsable)
    }

    @Test("Malformed input gives precise errors", arguments: malformedCases)
    func malformed(_ testCase: MalformedCase) {
        do {
            let events = try NetlinkMessage.split(ArraySlice(testCase.bytes)).map { try RouteNetlinkEvent.decode($0) }
            Issue.record("decoded \(events) from \(testCase.name)")
        } catch let error as NetlinkError {
            #expect(error.code == testCase.code, "\(testCase.name): \(error)")
            #expect(error.context.contains(testCase.context), "\(testCase.name): \(error)")
        } catch {
            Issue.record("\(testCase.name): unexpected \(error)")
        }
    }

    @Test("Every truncation of valid messages throws or decodes; never crashes")
    func everyTruncation() {
        let valid = vethLinkMessage()
        for length in 0..<valid.count {
            var shortened = Array(valid[0..<length])
            if length >= 4 {  // also lie about the length to reach the payload decoders
                withUnsafeBytes(of: UInt32(length)) { raw in for index in 0..<4 { shortened[index] = raw[index] } }
            }
            _ = try? NetlinkMessage.split(ArraySlice(shortened)).map { try RouteNetlinkEvent.decode($0) }
        }
    }

    @Test("Requests encode what the kernel expects and decode back")
    func requests() throws {
        let destination = try #require(IPAddress("198.51.100.7"))
        let lookup = NetlinkRequest.routeLookup(to: destination, sequence: 42)
        let messages = try NetlinkMessage.split(ArraySlice(lookup.bytes))
        #expect(messages.count == 1)
        #expect(messages[0].type == 26)  // RTM_GETROUTE
        #expect(messages[0].sequence == 42)
        let route = try RouteMessage.decode(messages[0].payload)
        #expect(route.destination == destination)
        #expect(route.destinationLength == 32)

        let add = NetlinkRequest.route(
            add: true, destination: .unspecified(.v4), prefixLength: 0, gateway: IPAddress("10.1.0.1"),
            interfaceIndex: 3, sequence: 9)
        let decoded = try RouteMessage.decode(try NetlinkMessage.split(ArraySlice(add.bytes))[0].payload)
        #expect(decoded.isDefault)
        #expect(decoded.gateway == IPAddress("10.1.0.1"))
        #expect(decoded.outputInterface == 3)
        #expect(NetlinkRequest.dump(.links, sequence: 1).bytes.count == 32)
    }
}

/// One malformed byte sequence and the error it must produce.
struct MalformedCase: Sendable, CustomTestStringConvertible {
    let name: String
    let bytes: [UInt8]
    let code: NetlinkError.Code
    let context: String
    var testDescription: String { name }
}

let malformedCases: [MalformedCase] = {
    var cases: [MalformedCase] = []
    cases.append(
        MalformedCase(
            name: "10-byte header", bytes: [UInt8](repeating: 0, count: 10), code: .truncated, context: "nlmsghdr"))
    var small = Bytes.message(type: rtmNewLink, payload: [])
    small[0] = 8
    cases.append(MalformedCase(name: "nlmsg_len 8", bytes: small, code: .badLength, context: "smaller than the header"))
    var long = vethLinkMessage()
    long[0] = 200
    cases.append(MalformedCase(name: "nlmsg_len past the end", bytes: long, code: .truncated, context: "runs past"))
    cases.append(
        MalformedCase(
            name: "short ifinfomsg", bytes: Bytes.message(type: rtmNewLink, payload: [0, 0, 1, 0]), code: .truncated,
            context: "ifinfomsg"))
    var badAttribute = Bytes()
    badAttribute.data += [UInt8](repeating: 0, count: 16)
    badAttribute.u16(2)
    badAttribute.u16(3)
    cases.append(
        MalformedCase(
            name: "rta_len 2", bytes: Bytes.message(type: rtmNewLink, payload: badAttribute.data), code: .badLength,
            context: "rta_len 2"))
    var overlong = Bytes()
    overlong.data += [UInt8](repeating: 0, count: 16)
    overlong.u16(40)
    overlong.u16(3)
    overlong.data += [0x61, 0x62, 0x63, 0]
    cases.append(
        MalformedCase(
            name: "attribute past the message", bytes: Bytes.message(type: rtmNewLink, payload: overlong.data),
            code: .truncated, context: "runs past"))
    var shortOif = Bytes()
    shortOif.data += [2, 32, 0, 0, 254, 0, 0, 1, 0, 0, 0, 0]
    shortOif.attribute(4, [1, 0])  // RTA_OIF with 2 bytes
    cases.append(
        MalformedCase(
            name: "RTA_OIF of 2 bytes", bytes: Bytes.message(type: rtmNewRoute, payload: shortOif.data),
            code: .badAttribute, context: "RTA_OIF"))
    var badGateway = Bytes()
    badGateway.data += [2, 32, 0, 0, 254, 0, 0, 1, 0, 0, 0, 0]
    badGateway.attribute(5, [10, 0, 0])  // RTA_GATEWAY of 3 bytes
    cases.append(
        MalformedCase(
            name: "RTA_GATEWAY of 3 bytes", bytes: Bytes.message(type: rtmNewRoute, payload: badGateway.data),
            code: .badAttribute, context: "RTA_GATEWAY"))
    var badHop = Bytes()
    badHop.data += [2, 0, 0, 0, 254, 0, 0, 1, 0, 0, 0, 0]
    var hop = Bytes()
    hop.u16(64)
    hop.u8(0)
    hop.u8(0)
    hop.i32(3)
    badHop.attribute(9, hop.data)
    cases.append(
        MalformedCase(
            name: "rtnh_len past RTA_MULTIPATH", bytes: Bytes.message(type: rtmNewRoute, payload: badHop.data),
            code: .badLength, context: "rtnh_len 64"))
    var noAddress = Bytes()
    noAddress.data += [2, 24, 0, 0]
    noAddress.u32(3)
    cases.append(
        MalformedCase(
            name: "ifaddrmsg without address", bytes: Bytes.message(type: rtmNewAddr, payload: noAddress.data),
            code: .badAttribute, context: "no IFA_ADDRESS"))
    var wrongFamily = Bytes()
    wrongFamily.data += [10, 24, 0, 0]
    wrongFamily.u32(3)
    wrongFamily.attribute(1, [10, 0, 0, 1])
    cases.append(
        MalformedCase(
            name: "AF_INET6 with a 4-byte address", bytes: Bytes.message(type: rtmNewAddr, payload: wrongFamily.data),
            code: .badAttribute, context: "family 10"))
    cases.append(
        MalformedCase(
            name: "short nlmsgerr", bytes: Bytes.message(type: nlmsgError, payload: [1, 2]), code: .truncated,
            context: "nlmsgerr"))
    return cases
}()
