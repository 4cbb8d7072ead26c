import Logging
import RouseEventLoop
import RouseNetlink
import RouseReachability
import Synchronization
import Testing

@Suite("Reachability on the caller's event loop", .timeLimit(.minutes(1)))
struct CallerLoopTests {
    @Test("a monitor given a loop runs on it (no thread of its own), started and stopped from outside or from the loop")
    func onTheCallersLoop() async throws {
        let loop = try EventLoop(name: "test-reach-loop")
        loop.start()
        defer { loop.stopAndWait() }
        let target = ReachabilityTarget.address(address("127.0.0.1"))
        let monitor = ReachabilityMonitor(logger: Logger(label: "rouse.test"), loop: loop)
        let handlerOnLoop = Mutex<[Bool]>([])
        monitor.addSynchronousHandler { _ in handlerOnLoop.withLock { $0.append(loop.inLoop) } }
        monitor.watch(target)
        try monitor.start()
        #expect(monitor.sync())
        #expect(monitor.flags(for: target)?.contains(.reachable) == true)
        let calls = handlerOnLoop.withLock { $0 }
        #expect(!calls.isEmpty && calls.allSatisfy { $0 }, "the handler ran on the given loop's thread: \(calls)")
        monitor.stop()

        // Started, synced and stopped on the loop's own thread, as an actor on a daemon's executor loop would.
        let second = ReachabilityMonitor(logger: Logger(label: "rouse.test"), loop: loop)
        second.watch(target)
        let outcome = await withCheckedContinuation { (done: CheckedContinuation<String, Never>) in
            loop.execute {
                do {
                    try second.start()
                } catch {
                    done.resume(returning: "start failed: \(error)")
                    return
                }
                let synced = second.sync(timeout: 5)
                let known = second.flags(for: target) != nil
                second.stop()
                done.resume(returning: synced && known ? "ok" : "synced \(synced), result known \(known)")
            }
        }
        #expect(outcome == "ok")
    }
}
