import RouseHTTP2
import Synchronization
import Testing

@Suite("EventLoop timers", .timeLimit(.minutes(1)))
struct EventLoopTests {
    /// A deadline already past (a negative delay, -0.5 s is 0 s and -5e17 as) runs at once instead of trapping.
    @Test(arguments: [Duration.milliseconds(-500), .seconds(-2), .zero])
    func aDelayInThePastRunsAtOnce(_ delay: Duration) async throws {
        let loop = try EventLoop(name: "test-negative-delay")
        loop.start()
        defer { loop.stopAndWait() }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { loop.schedule(after: delay) { done.resume() } }
        }
    }
}
