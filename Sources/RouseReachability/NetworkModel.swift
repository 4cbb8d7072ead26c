import RouseNetlink

/// The mirror of the kernel's links and addresses that the decisions consult for the *chosen*
/// interface (up, carrier, type, addresses). Routes are never mirrored: every decision asks the kernel.
public struct NetworkModel: Sendable, Equatable {
    /// Links by index.
    public private(set) var links: [Int32: LinkMessage] = [:]
    /// Interface types by index, classified once when a link appears or is renamed.
    public private(set) var types: [Int32: InterfaceType] = [:]
    /// Addresses by interface index.
    public private(set) var addresses: [Int32: Set<AddressMessage>] = [:]

    /// An empty model.
    public init() {}

    /// Applies one decoded event; returns true when the model changed.
    @discardableResult
    public mutating func apply(_ event: RouteNetlinkEvent, classify: (LinkMessage) -> InterfaceType) -> Bool {
        switch event {
        case .newLink(var link):
            let old = links[link.index]
            if link.name == nil { link.name = old?.name }
            if link.kind == nil { link.kind = old?.kind }
            if link.operState == nil { link.operState = old?.operState }
            if old?.name != link.name || types[link.index] == nil { types[link.index] = classify(link) }
            links[link.index] = link
            return old.map { !Self.sameState($0, link) } ?? true
        case .deleteLink(let link):
            let existed = links.removeValue(forKey: link.index) != nil
            types[link.index] = nil
            addresses[link.index] = nil
            return existed
        case .newAddress(let address):
            var set = addresses[address.index, default: []]
            let old = set.first { $0.address == address.address }
            if let old { set.remove(old) }
            set.insert(address)
            addresses[address.index] = set
            return old != address
        case .deleteAddress(let address):
            guard var set = addresses[address.index], let old = set.first(where: { $0.address == address.address })
            else { return false }
            set.remove(old)
            addresses[address.index] = set.isEmpty ? nil : set
            return true
        default:
            return false
        }
    }

    private static func sameState(_ a: LinkMessage, _ b: LinkMessage) -> Bool {
        a.flags == b.flags && a.operState == b.operState && a.name == b.name && a.kind == b.kind
    }

    /// Forgets everything (before a re-dump).
    public mutating func reset() {
        links = [:]
        types = [:]
        addresses = [:]
    }

    /// The interface description for an index.
    public func interface(_ index: Int32) -> NetworkInterface {
        NetworkInterface(name: links[index]?.name ?? "if\(index)", index: index, type: types[index] ?? .other)
    }

    /// True when `address` is assigned to some interface.
    public func isLocal(_ address: IPAddress) -> Bool {
        addresses.values.contains { set in set.contains { $0.address == address } }
    }

    /// Usable non-link-local addresses of a family on an interface.
    public func usableAddresses(on index: Int32, family: IPAddress.Family) -> [AddressMessage] {
        (addresses[index] ?? []).filter {
            $0.address.family == family && $0.isUsable && !$0.address.isLinkLocal
        }
    }

    /// A digest of what matters for name resolution: which links are up with carrier and which usable
    /// global addresses exist. Host names are re-resolved when it changes.
    public var resolutionSignature: [String] {
        var items: [String] = []
        for (index, link) in links where link.isUp && link.hasCarrier { items.append("l\(index)") }
        for (index, set) in addresses {
            for address in set where address.isUsable && !address.address.isLinkLocal {
                items.append("a\(index)/\(address.address)")
            }
        }
        return items.sorted()
    }
}
