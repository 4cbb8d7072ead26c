/// A bounded set of recently handled push keys (`apnsID`s), oldest evicted first, persisted so that a
/// push re-sent after a reconnect or an agent restart is not handed to a handler twice.
public struct DedupWindow: Sendable, Codable, Equatable {
    /// Most keys kept.
    public let capacity: Int
    private(set) var order: [String] = []
    private var members: Set<String> = []

    /// An empty window of `capacity` keys.
    public init(capacity: Int = 4096) { self.capacity = capacity }

    /// Whether `key` was seen.
    public func contains(_ key: String) -> Bool { members.contains(key) }

    /// Records `key`; returns false if it was already there.
    @discardableResult
    public mutating func insert(_ key: String) -> Bool {
        guard members.insert(key).inserted else { return false }
        order.append(key)
        if order.count > capacity {
            let evicted = order.removeFirst()
            members.remove(evicted)
        }
        return true
    }

    enum CodingKeys: String, CodingKey { case capacity, order }
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        capacity = try container.decode(Int.self, forKey: .capacity)
        order = try container.decode([String].self, forKey: .order)
        members = Set(order)
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(capacity, forKey: .capacity)
        try container.encode(order, forKey: .order)
    }
}
