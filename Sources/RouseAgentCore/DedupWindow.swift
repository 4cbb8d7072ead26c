/// A bounded set of recently handled push keys (`apnsID`s), oldest evicted first, persisted so that a
/// push re-sent after a reconnect or an agent restart is not handed to a handler twice.
public struct DedupWindow: Sendable, Codable, Equatable {
    /// Most keys kept.
    public let capacity: Int
    /// The keys in insertion order from `head` on; those before `head` were evicted and are dropped in one move
    /// once there are `capacity` of them, so an insert costs O(1) amortized (removing the first of an array
    /// moved every other key on each push).
    private var keys: [String] = []
    private var head = 0
    private var members: Set<String> = []

    /// An empty window of `capacity` keys.
    public init(capacity: Int = 4096) { self.capacity = capacity }

    /// The kept keys, oldest first.
    public var order: ArraySlice<String> { keys[head...] }

    /// Whether `key` was seen.
    public func contains(_ key: String) -> Bool { members.contains(key) }

    /// Records `key`; returns false if it was already there.
    @discardableResult
    public mutating func insert(_ key: String) -> Bool {
        guard members.insert(key).inserted else { return false }
        keys.append(key)
        if keys.count - head > capacity {
            members.remove(keys[head])
            head += 1
            if head >= max(capacity, 1) {
                keys.removeFirst(head)
                head = 0
            }
        }
        return true
    }

    public static func == (lhs: DedupWindow, rhs: DedupWindow) -> Bool {
        lhs.capacity == rhs.capacity && lhs.order == rhs.order
    }

    enum CodingKeys: String, CodingKey { case capacity, order }
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        capacity = try container.decode(Int.self, forKey: .capacity)
        keys = try container.decode([String].self, forKey: .order)
        members = Set(keys)
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(capacity, forKey: .capacity)
        try container.encode(Array(order), forKey: .order)
    }
}
