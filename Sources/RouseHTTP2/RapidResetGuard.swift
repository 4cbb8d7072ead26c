/// Rapid-reset (CVE-2023-44487) protection that tells a real attack from libcurl 7.88's habit.
///
/// nghttp2's own limiter charges every incoming RST_STREAM (burst 1000, 33/s) and so tears down a libcurl
/// 7.88 connection after about 1000 requests: that libcurl resets every stream after reading its complete
/// response. A reset of a stream whose response was already sent in full costs the server nothing, so the
/// kernel replaces nghttp2's limiter with this one: such a reset is free, once per stream; every other reset
/// (a stream cancelled while the server still works on it, or a stream reset twice) is charged against the
/// same token bucket nghttp2 uses by default.
struct RapidResetGuard {
    let burst: Double
    let ratePerSecond: Double
    private var tokens: Double
    private var lastRefill: UInt64 = 0
    /// Recently completed stream ids whose first reset is free (bounded ring).
    private var completed: Set<Int32> = []
    private var completedOrder: [Int32] = []
    private var completedHead = 0
    private let completedCapacity = 4096
    /// How many resets were charged (for tests and metrics).
    private(set) var charged = 0

    init(burst: UInt64, ratePerSecond: UInt64) {
        self.burst = Double(burst)
        self.ratePerSecond = Double(ratePerSecond)
        self.tokens = Double(burst)
    }

    /// Remembers that a stream closed after its response was sent in full.
    mutating func streamCompleted(_ id: Int32) {
        if completedOrder.count < completedCapacity {
            completedOrder.append(id)
        } else {
            completed.remove(completedOrder[completedHead])
            completedOrder[completedHead] = id
            completedHead = (completedHead + 1) % completedCapacity
        }
        completed.insert(id)
    }

    /// True (and forgets it) if `id` completed recently and was not reset yet.
    mutating func consumeCompleted(_ id: Int32) -> Bool {
        completed.remove(id) != nil
    }

    /// Charges one token; false when none is left.
    mutating func charge(now: UInt64) -> Bool {
        if lastRefill != 0 {
            let elapsed = Double(now &- lastRefill) / 1e9
            tokens = min(burst, tokens + elapsed * ratePerSecond)
        }
        lastRefill = now
        charged += 1
        if tokens >= 1 {
            tokens -= 1
            return true
        }
        return false
    }
}
