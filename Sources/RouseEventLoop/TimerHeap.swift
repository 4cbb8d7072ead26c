/// A min-heap of one-shot timers (deadlines in nanoseconds on the loop's clock) with lazy cancellation (cancelled ids
/// are skipped when they come up), compacted once cancelled entries are more than half of it: connection churn
/// (each connection arms an idle timer of an hour and cancels it when it closes) must not keep an entry per closed
/// connection for an hour. Timers with the same deadline fire in the order they were inserted.
struct TimerHeap {
    private struct Entry {
        var deadline: UInt64
        var id: UInt64
    }
    private var heap: [Entry] = []
    private var bodies: [UInt64: () -> Void] = [:]
    /// Timers taken out of the heap by ``takeDue(now:)`` that have not run yet: a callback of the same pass can still
    /// cancel them (a timer cancelled before it ran never runs, even when it came due in the same pass).
    private var due: [UInt64: () -> Void] = [:]
    private var nextID: UInt64 = 1
    /// Entries in `heap` whose timer was cancelled.
    private var cancelled = 0

    /// Entries held, live and cancelled (tests).
    var entryCount: Int { heap.count }

    mutating func insert(deadline: UInt64, _ body: @escaping () -> Void) -> UInt64 {
        let id = nextID
        nextID += 1
        bodies[id] = body
        heap.append(Entry(deadline: deadline, id: id))
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            if !Self.before(heap[i], heap[parent]) { break }
            heap.swapAt(parent, i)
            i = parent
        }
        return id
    }

    mutating func cancel(_ id: UInt64) {
        guard bodies.removeValue(forKey: id) != nil else {
            due[id] = nil
            return
        }
        cancelled += 1
        if cancelled > 64, cancelled * 2 > heap.count { compact() }
    }

    /// Drops the cancelled entries and restores the heap order: O(n), after at least n/2 cancellations.
    private mutating func compact() {
        heap.removeAll { bodies[$0.id] == nil }
        cancelled = 0
        var start = heap.count / 2 - 1
        while start >= 0 {
            siftDown(start)
            start -= 1
        }
    }

    /// Milliseconds until the earliest live timer (rounded up), or -1 (wait forever) when there is none.
    mutating func millisecondsUntilNext(now: UInt64) -> Int32 {
        while let top = heap.first, bodies[top.id] == nil {
            popMin()
            cancelled -= 1
        }
        guard let top = heap.first else { return -1 }
        if top.deadline <= now { return 0 }
        // Rounded up without overflowing for a deadline near the end of time (`schedule(after:)` with a huge delay).
        let remaining = top.deadline - now
        let ms = remaining / 1_000_000 + (remaining % 1_000_000 == 0 ? 0 : 1)
        return Int32(min(ms, UInt64(Int32.max)))
    }

    /// Takes every timer whose deadline has passed out of the heap and returns their ids in firing order; run each
    /// with ``start(_:)``, which returns nil for one cancelled meanwhile. Timers inserted while they run wait for the
    /// next pass, even when already due (a timer that re-arms itself with no delay cannot starve the loop).
    mutating func takeDue(now: UInt64) -> [UInt64] {
        var ids: [UInt64] = []
        while let top = heap.first, top.deadline <= now {
            popMin()
            if let body = bodies.removeValue(forKey: top.id) {
                due[top.id] = body
                ids.append(top.id)
            } else {
                cancelled -= 1
            }
        }
        return ids
    }

    /// The body of a timer returned by ``takeDue(now:)``, to run now; nil when it was cancelled since.
    mutating func start(_ id: UInt64) -> (() -> Void)? {
        due.removeValue(forKey: id)
    }

    /// Earlier deadline first; on a tie, the older timer (ids grow with each insert).
    private static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline ? a.deadline < b.deadline : a.id < b.id
    }

    /// Live and cancelled-but-not-yet-skipped timers: what the heap holds.
    var count: Int { heap.count }

    private mutating func popMin() {
        let last = heap.removeLast()
        if heap.isEmpty { return }
        heap[0] = last
        siftDown(0)
    }

    private mutating func siftDown(_ start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1
            let r = l + 1
            var smallest = i
            if l < heap.count && Self.before(heap[l], heap[smallest]) { smallest = l }
            if r < heap.count && Self.before(heap[r], heap[smallest]) { smallest = r }
            if smallest == i { return }
            heap.swapAt(i, smallest)
            i = smallest
        }
    }
}
