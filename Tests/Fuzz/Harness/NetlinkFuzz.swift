import RouseNetlink

/// An rtnetlink datagram as the reachability monitor reads it from the kernel: `NetlinkMessage.split`, then
/// `RouteNetlinkEvent.decode` of each message (links, addresses, routes, rules, next hops, netconf, done, error).
enum NetlinkFuzz {
    static let target = FuzzTarget(
        name: "netlink",
        summary: "NetlinkMessage.split and RouteNetlinkEvent.decode (rtnetlink datagrams)",
        run: run)

    static func run(_ bytes: [UInt8]) {
        guard let messages = try? NetlinkMessage.split(bytes[...]) else { return }
        for message in messages { _ = try? RouteNetlinkEvent.decode(message) }
    }
}
