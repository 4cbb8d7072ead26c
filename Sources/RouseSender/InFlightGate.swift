import Synchronization

/// Bounds work in flight: `acquire` waits while `limit` permits are out; `release` hands one back.
/// Also lets a caller wait until every permit is back.
final class InFlightGate: Sendable {
    private struct State {
        var out = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var drained: [CheckedContinuation<Void, Never>] = []
    }

    private let limit: Int
    private let state = Mutex(State())

    init(limit: Int) { self.limit = max(1, limit) }

    func acquire() async {
        let acquired = state.withLock { s -> Bool in
            if s.out < limit {
                s.out += 1
                return true
            }
            return false
        }
        if acquired { return }
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLock { s -> Bool in
                if s.out < limit {
                    s.out += 1
                    return true
                }
                s.waiters.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    func release() {
        let (waiter, drained) = state.withLock {
            s -> (CheckedContinuation<Void, Never>?, [CheckedContinuation<Void, Never>]) in
            if !s.waiters.isEmpty { return (s.waiters.removeFirst(), []) }
            s.out -= 1
            if s.out == 0 {
                let d = s.drained
                s.drained = []
                return (nil, d)
            }
            return (nil, [])
        }
        waiter?.resume()
        for d in drained { d.resume() }
    }

    /// Returns once nothing is out.
    func waitUntilDrained() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.out == 0 { return true }
                s.drained.append(c)
                return false
            }
            if done { c.resume() }
        }
    }
}
