import RouseNetlink
import Testing

// Values from <linux/rtnetlink.h>, <linux/nexthop.h>, <linux/netconf.h> (UAPI, stable).
let rtmNewNexthop: UInt16 = 104
let rtmDelNexthop: UInt16 = 105
let rtmNewNetconf: UInt16 = 80

/// `ip nexthop add id 7 via 10.1.0.1 dev #3`, as announced.
func nexthopMessage(deleted: Bool = false) -> [UInt8] {
    var payload = Bytes()
    payload.data += [2, 0, 4, 0]  // AF_INET, scope universe, proto static
    payload.u32(0x10)  // RTNH_F_LINKDOWN
    payload.attribute(1, Bytes.le32(7))  // NHA_ID
    payload.attribute(5, Bytes.le32(3))  // NHA_OIF
    payload.attribute(6, [10, 1, 0, 1])  // NHA_GATEWAY
    return Bytes.message(type: deleted ? rtmDelNexthop : rtmNewNexthop, payload: payload.data)
}

/// `ip nexthop add id 10 group 1/2`.
func nexthopGroupMessage() -> [UInt8] {
    var payload = Bytes()
    payload.data += [0, 0, 4, 0]
    payload.u32(0)
    payload.attribute(1, Bytes.le32(10))
    var group = Bytes()
    for id: UInt32 in [1, 2] {
        group.u32(id)
        group.data += [0, 0, 0, 0]  // weight − 1, reserved
    }
    payload.attribute(2, group.data)  // NHA_GROUP
    return Bytes.message(type: rtmNewNexthop, payload: payload.data)
}

/// `sysctl net.ipv4.conf.all.ignore_routes_with_linkdown=1`, as announced.
func netconfMessage() -> [UInt8] {
    var payload = Bytes()
    payload.data += [2, 0, 0, 0]  // AF_INET, padded to NLMSG_ALIGN
    payload.attribute(1, withUnsafeBytes(of: Int32(-1)) { Array($0) })  // NETCONFA_IFINDEX_ALL
    payload.attribute(6, Bytes.le32(1))  // NETCONFA_IGNORE_ROUTES_WITH_LINKDOWN
    return Bytes.message(type: rtmNewNetconf, payload: payload.data)
}

@Suite("Netlink parsing: nexthop objects, netconf, route ids and expiry")
struct NexthopParserTests {
    @Test("Nexthop objects and groups decode, deletions too")
    func nexthops() throws {
        let single = try NetlinkMessage.split(ArraySlice(nexthopMessage(deleted: true)))
        guard case .nexthop(let nexthop, deleted: true) = try RouteNetlinkEvent.decode(single[0]) else {
            Issue.record("not a deleted nexthop")
            return
        }
        #expect(
            nexthop == NexthopMessage(family: 2, flags: 0x10, id: 7, outputInterface: 3, gateway: IPAddress("10.1.0.1"))
        )
        let group = try NetlinkMessage.split(ArraySlice(nexthopGroupMessage()))
        guard case .nexthop(let decoded, deleted: false) = try RouteNetlinkEvent.decode(group[0]) else {
            Issue.record("not a nexthop group")
            return
        }
        #expect(decoded.id == 10)
        #expect(decoded.group == [1, 2])
    }

    @Test("A netconf message carries the device and ignore_routes_with_linkdown")
    func netconf() throws {
        let messages = try NetlinkMessage.split(ArraySlice(netconfMessage()))
        #expect(
            try RouteNetlinkEvent.decode(messages[0])
                == .netconf(NetconfMessage(family: 2, interfaceIndex: -1, ignoreRoutesWithLinkdown: true)))
    }

    @Test("A route's RTA_NH_ID and RTA_CACHEINFO expiry")
    func routeNexthopAndExpiry() throws {
        var payload = Bytes()
        payload.data += [10, 48, 0, 0, 254, 4, 0, 1]  // AF_INET6 /48, main, static, universe, unicast
        payload.u32(0)
        payload.attribute(30, Bytes.le32(10))  // RTA_NH_ID
        var cache = Bytes()
        for value: Int32 in [0, 0, 199, 0, 0, 0, 0, 0] { cache.i32(value) }  // rta_expires = 199 ticks
        payload.attribute(12, cache.data)  // RTA_CACHEINFO
        let messages = try NetlinkMessage.split(ArraySlice(Bytes.message(type: rtmNewRoute, payload: payload.data)))
        guard case .newRoute(let route) = try RouteNetlinkEvent.decode(messages[0]) else {
            Issue.record("not a route")
            return
        }
        #expect(route.nexthopID == 10)
        #expect(route.expiresTicks == 199)
    }

    @Test(
        "Malformed nexthop and netconf messages give precise errors",
        arguments: [
            (Bytes.message(type: rtmNewNexthop, payload: [2, 0, 0, 0]), "nhmsg"),
            (Bytes.message(type: rtmNewNexthop, payload: [2, 0, 0, 0, 0, 0, 0, 0]), "NHA_ID"),
            (
                Bytes.message(type: rtmNewNexthop, payload: [2, 0, 0, 0, 0, 0, 0, 0, 8, 0, 1, 0, 1, 0]),
                "nha: attribute 1"
            ),
            (
                Bytes.message(
                    type: rtmNewNexthop, payload: [0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 1, 0, 1, 0, 0, 0, 7, 0, 2, 0, 1, 2, 3]),
                "NHA_GROUP"
            ),
            (Bytes.message(type: rtmNewNetconf, payload: [2, 0, 0, 0, 6, 0, 1, 0, 1, 0]), "NETCONFA_IFINDEX"),
        ])
    func malformed(_ bytes: [UInt8], _ context: String) {
        do {
            let events = try NetlinkMessage.split(ArraySlice(bytes)).map { try RouteNetlinkEvent.decode($0) }
            Issue.record("decoded \(events)")
        } catch let error as NetlinkError {
            #expect(error.context.contains(context), "\(error)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("Every truncation of valid nexthop and netconf messages throws or decodes; never crashes")
    func everyTruncation() {
        for valid in [nexthopMessage(), nexthopGroupMessage(), netconfMessage()] {
            for length in 0..<valid.count {
                var shortened = Array(valid[0..<length])
                if length >= 4 {
                    withUnsafeBytes(of: UInt32(length)) { raw in for index in 0..<4 { shortened[index] = raw[index] } }
                }
                _ = try? NetlinkMessage.split(ArraySlice(shortened)).map { try RouteNetlinkEvent.decode($0) }
            }
        }
    }
}
