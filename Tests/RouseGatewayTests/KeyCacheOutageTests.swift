import Foundation
import RouseClock
import RouseGateway
import RouseTestSupport
import Synchronization
import Testing

/// A store whose reads and writes, once `down`, take `stall` and then fail as an unreachable PostgreSQL does (libpq's
/// connect blocks for up to its timeout): what a database outage does to the provider loop.
final class StallingStore: GatewayStore {
    let base: SQLiteGatewayStore
    let stall: Duration
    private let state = Mutex<(down: Bool, reads: Int, threads: [String])>((false, 0, []))

    init(path: String, stall: Duration) throws {
        base = try SQLiteGatewayStore(path: path)
        self.stall = stall
    }

    var migration: GatewaySchema.Migration { base.migration }
    func setDown(_ down: Bool) { state.withLock { $0.down = down } }
    /// Reads tried while down.
    var stalledReads: Int { state.withLock { $0.reads } }
    /// The names of the threads those reads ran on (a provider loop is `rouse-h2-N`).
    var stalledThreads: [String] { state.withLock { $0.threads } }

    func write<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        if state.withLock({ $0.down }) { throw GatewayError.unavailable("postgres: down (test)") }
        return try base.write(body)
    }

    func read<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        let thread = ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "?")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        if state.withLock({ state in
            if state.down {
                state.reads += 1
                state.threads.append(thread)
            }
            return state.down
        }) {
            Thread.sleep(forTimeInterval: Double(stall.components.seconds))
            throw GatewayError.unavailable("postgres: down (test)")
        }
        return try base.read(body)
    }
}

@Suite("Gateway provider loop during a database outage", .timeLimit(.minutes(2)))
struct KeyCacheOutageTests {
    @Test("the provider key cache reads off the provider loop once the store stopped answering: fast 503s")
    func keyReadsOffTheLoop() async throws {
        let clock = ManualClock.fromNow()
        let stalling = Mutex<StallingStore?>(nil)
        let h = try await Harness.start(
            clock: clock,
            store: { directory in
                let store = try StallingStore(path: directory.path + "/gateway.sqlite", stall: .seconds(3))
                stalling.withLock { $0 = store }
                return store
            })
        let store = try #require(stalling.withLock { $0 })
        await h.push(1)
        store.setDown(true)
        // The cached keys are a second old: the next request reads them again, and finds the store away.
        clock.advance(by: .seconds(2))
        let started = ContinuousClock.now
        var statuses: [Int] = []
        for n in 0..<5 {
            if n > 0 { clock.advance(by: .seconds(2)) }
            statuses.append(await h.provider.push(token: h.token, payload: #"{"n":\#(n)}"#).status)
        }
        let elapsed = ContinuousClock.now - started
        #expect(statuses == [503, 503, 503, 503, 503], "\(statuses)")
        // Before: every request read the keys on the provider loop (a provider loop thread is `rouse-h2-N`), 3 s
        // each, and then the first one still did; now every read during the outage runs on a thread of its own and
        // the loop waits for the first at most 100 ms. The thread names decide, not a time bound (five pushes take
        // 0.3 s alone, 5 s beside the sender's fault matrix on two cores); the time bound only says no push waited
        // for a whole stalled read on each request (15 s before).
        #expect(store.stalledReads >= 1)
        #expect(
            store.stalledThreads.allSatisfy { !$0.hasPrefix("rouse-h2-") },
            "reads on a provider loop: \(store.stalledThreads)")
        #expect(elapsed < .seconds(12), "\(elapsed) for 5 pushes")
        store.setDown(false)
        // Back: the keys are read again and pushes are stored.
        var back = 0
        let deadline = ContinuousClock.now + .seconds(10)
        while back != 200, ContinuousClock.now < deadline {
            clock.advance(by: .seconds(2))
            back = await h.provider.push(token: h.token, payload: #"{"n":9}"#).status
            if back != 200 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(back == 200)
        await h.stop()
    }
}
