/// A bounded set of recently handled push keys (`topic apnsID`), persisted so that a push re-sent after a reconnect
/// or an agent restart is not handed to a handler twice.
///
/// The keys are partitioned by topic (the key up to its first space: one provider app each), and the window is
/// shared fairly: when it is full, the oldest key of the partition holding the most keys goes. One provider sending
/// thousands of pushes evicts its own old keys, not another topic's: before, the window was one queue of 4,096
/// keys, oldest first, that a single provider could flush.
package struct DedupWindow: Sendable, Codable, Equatable {
    /// Most keys kept, over all topics.
    package let capacity: Int

    /// One topic's keys, oldest first from `head` on; those before `head` were evicted and are dropped in one move
    /// once they are as many as the live ones, so an eviction costs O(1) amortized.
    private struct Partition: Sendable {
        var keys: [(sequence: UInt64, key: String)] = []
        var head = 0
        var count: Int { keys.count - head }

        mutating func removeOldest() -> String {
            let key = keys[head].key
            head += 1
            if head >= max(count, 16) {
                keys.removeFirst(head)
                head = 0
            }
            return key
        }
    }

    private var partitions: [Substring: Partition] = [:]
    private var members: Set<String> = []
    /// Insertion order over all partitions (for `order`, hence the persisted form).
    private var nextSequence: UInt64 = 0

    /// An empty window of `capacity` keys.
    package init(capacity: Int = 4096) { self.capacity = capacity }

    /// The kept keys, oldest first.
    package var order: [String] {
        partitions.values.flatMap { $0.keys[$0.head...] }.sorted { $0.sequence < $1.sequence }.map(\.key)
    }

    /// Keys kept for the topic of `key` (tests).
    package func count(partitionOf key: String) -> Int { partitions[Self.partition(key)]?.count ?? 0 }

    /// Whether `key` was seen.
    package func contains(_ key: String) -> Bool { members.contains(key) }

    /// Records `key`; returns false if it was already there.
    @discardableResult
    package mutating func insert(_ key: String) -> Bool {
        guard capacity > 0 else { return !members.contains(key) }
        guard members.insert(key).inserted else { return false }
        let name = Self.partition(key)
        partitions[name, default: Partition()].keys.append((nextSequence, key))
        nextSequence &+= 1
        if members.count > capacity {
            // The largest partition gives up its oldest key; among equals, the one whose oldest key is the oldest.
            var largest: (name: Substring, count: Int, oldest: UInt64)?
            for (other, partition) in partitions where partition.count > 0 {
                let oldest = partition.keys[partition.head].sequence
                if let current = largest,
                    partition.count < current.count || (partition.count == current.count && oldest > current.oldest)
                {
                    continue
                }
                largest = (other, partition.count, oldest)
            }
            if let name = largest?.name {
                if let evicted = partitions[name]?.removeOldest() { members.remove(evicted) }
                if partitions[name]?.count == 0 { partitions[name] = nil }
            }
        }
        return true
    }

    /// The topic part of a key.
    private static func partition(_ key: String) -> Substring {
        key.firstIndex(of: " ").map { key[..<$0] } ?? Substring(key)
    }

    package static func == (lhs: DedupWindow, rhs: DedupWindow) -> Bool {
        lhs.capacity == rhs.capacity && lhs.order == rhs.order
    }

    enum CodingKeys: String, CodingKey { case capacity, order }
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        capacity = try container.decode(Int.self, forKey: .capacity)
        // Inserted again, oldest first: a window persisted by an older agent (one queue) is shared fairly from here.
        for key in try container.decode([String].self, forKey: .order) { insert(key) }
    }
    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(capacity, forKey: .capacity)
        try container.encode(order, forKey: .order)
    }
}
