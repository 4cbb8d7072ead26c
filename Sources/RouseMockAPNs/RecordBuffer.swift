/// A bounded ring of push records: the newest `limit` are kept, so memory stays flat on long runs.
struct RecordBuffer: Sendable {
    private var storage: [PushRecord] = []
    private var head = 0
    let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    var count: Int { storage.count }

    mutating func append(_ record: PushRecord) {
        if storage.count < limit {
            storage.append(record)
        } else {
            storage[head] = record
            head = (head + 1) % limit
        }
    }

    mutating func removeAll() {
        storage.removeAll(keepingCapacity: false)
        head = 0
    }

    /// Oldest first.
    var snapshot: [PushRecord] {
        if head == 0 { return storage }
        return Array(storage[head...] + storage[..<head])
    }
}
