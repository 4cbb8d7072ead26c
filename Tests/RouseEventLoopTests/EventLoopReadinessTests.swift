import Dispatch
import RouseEventLoop
import RouseSystem
import Synchronization
import Testing

/// Records the readiness callbacks of one descriptor (loop thread only; the lock lets the test thread read them).
private final class ReadinessRecorder: EventLoopFDHandler, Sendable {
    let fd: Int32
    private let seen = Mutex<[UInt32]>([])
    private let offLoop = Atomic<Int>(0)
    let loop: EventLoop
    /// Called after each recorded callback, on the loop's thread.
    private let then: Mutex<(@Sendable (UInt32) -> Void)?>

    init(fd: Int32, loop: EventLoop, then: (@Sendable (UInt32) -> Void)? = nil) {
        self.fd = fd
        self.loop = loop
        self.then = Mutex(then)
    }

    func handleEvents(_ events: UInt32) {
        if !loop.inLoop { offLoop.add(1, ordering: .relaxed) }
        seen.withLock { $0.append(events) }
        then.withLock { $0 }?(events)
    }

    var events: [UInt32] { seen.withLock { $0 } }
    var callsOffTheLoop: Int { offLoop.load(ordering: .relaxed) }
}

/// The loop's descriptor side: readiness reaches the handler registered for it, on the loop's thread, with the events
/// the kernel reported; `modify` and `unregister` take effect for the next pass.
@Suite("EventLoop descriptor readiness", .timeLimit(.minutes(1)))
struct EventLoopReadinessTests {
    /// A byte written to the peer of a registered socket calls its handler with `EPOLLIN`, on the loop's thread;
    /// the handler reads it (level-triggered: it would be called again while the byte is there).
    @Test func aReadableDescriptorCallsItsHandlerOnTheLoop() async throws {
        let loop = try EventLoop(name: "test-readable")
        loop.start()
        defer { loop.stopAndWait() }
        let (mine, peer) = try Sys.socketPair()
        defer {
            Sys.close(mine)
            Sys.close(peer)
        }
        let called = DispatchSemaphore(value: 0)
        let recorder = ReadinessRecorder(fd: mine, loop: loop) { _ in
            var byte: UInt8 = 0
            _ = try? withUnsafeMutableBytes(of: &byte) { try Sys.read(mine, into: $0) }
            called.signal()
        }
        try await onLoop(loop) { try loop.register(mine, events: EventLoop.readable, handler: recorder) }
        #expect(recorder.events.isEmpty, "nothing to read yet: no callback")
        try send(peer)
        #expect(called.wait(timeout: .now() + 10) == .success, "the handler was not called")
        try await onLoop(loop) { loop.unregister(mine) }
        #expect(recorder.events.count == 1)
        #expect(recorder.events.first.map { $0 & EventLoop.readable != 0 } == true)
        #expect(recorder.callsOffTheLoop == 0)
    }

    /// `modify` to no events silences a readable descriptor, `modify` back to `EPOLLIN` reports it again, and after
    /// `unregister` nothing is reported although the byte is still there.
    @Test func modifyAndUnregisterTakeEffect() async throws {
        let loop = try EventLoop(name: "test-modify")
        loop.start()
        defer { loop.stopAndWait() }
        let (mine, peer) = try Sys.socketPair()
        defer {
            Sys.close(mine)
            Sys.close(peer)
        }
        let called = DispatchSemaphore(value: 0)
        // Level-triggered and never read: the handler turns its own interest off, or it would be called every pass.
        let recorder = ReadinessRecorder(fd: mine, loop: loop) { _ in
            loop.modify(mine, events: 0)
            called.signal()
        }
        try await onLoop(loop) {
            try loop.register(mine, events: 0, handler: recorder)
        }
        try send(peer)
        // A pass of the loop after the write: a handler with interest would have been called by then (the write
        // happened before the pass's `epoll_wait`, which reports the descriptor with the loop's wake-up).
        try await onLoop(loop) {}
        #expect(recorder.events.isEmpty, "registered without interest: no callback")
        try await onLoop(loop) { loop.modify(mine, events: EventLoop.readable) }
        #expect(called.wait(timeout: .now() + 10) == .success, "modify to EPOLLIN did not report the waiting byte")
        try await onLoop(loop) { loop.unregister(mine) }
        try await onLoop(loop) { loop.modify(mine, events: EventLoop.readable) }  // not registered: ignored
        try await onLoop(loop) {}
        #expect(recorder.events.count == 1)
    }

    /// Writability is reported as `EPOLLOUT`, and a peer that closes as `EPOLLHUP`, which epoll reports without being
    /// asked for.
    @Test func writableAndHangUpAreReported() async throws {
        let loop = try EventLoop(name: "test-hangup")
        loop.start()
        defer { loop.stopAndWait() }
        let (mine, peer) = try Sys.socketPair()
        defer { Sys.close(mine) }
        let writable = DispatchSemaphore(value: 0)
        let writer = ReadinessRecorder(fd: mine, loop: loop) { events in
            if events & EventLoop.writable != 0 {
                loop.modify(mine, events: 0)
                writable.signal()
            }
        }
        try await onLoop(loop) { try loop.register(mine, events: EventLoop.writable, handler: writer) }
        #expect(writable.wait(timeout: .now() + 10) == .success, "an empty socket buffer was not reported writable")
        let hungUp = DispatchSemaphore(value: 0)
        let flags = Mutex<UInt32>(0)
        try await onLoop(loop) {
            loop.unregister(mine)
            let watcher = ReadinessRecorder(fd: mine, loop: loop) { events in
                flags.withLock { $0 = events }
                loop.unregister(mine)
                hungUp.signal()
            }
            try? loop.register(mine, events: 0, handler: watcher)
        }
        Sys.close(peer)
        #expect(hungUp.wait(timeout: .now() + 10) == .success, "the peer's close was not reported")
        #expect(flags.withLock { $0 } & EventLoop.hungUp != 0)
    }

    /// Two descriptors ready in the same pass: the first handler called unregisters the other, which is then not
    /// called (the loop looks the handler up when its turn comes, not when `epoll_wait` returned).
    @Test func aHandlerUnregisteredEarlierInThePassIsNotCalled() async throws {
        let loop = try EventLoop(name: "test-unreg-pass")
        loop.start()
        defer { loop.stopAndWait() }
        let (a, aPeer) = try Sys.socketPair()
        let (b, bPeer) = try Sys.socketPair()
        defer {
            for fd in [a, aPeer, b, bPeer] { Sys.close(fd) }
        }
        let calls = Atomic<Int>(0)
        let first = DispatchSemaphore(value: 0)
        let handlerA = ReadinessRecorder(fd: a, loop: loop) { _ in
            calls.add(1, ordering: .relaxed)
            loop.unregister(a)
            loop.unregister(b)
            first.signal()
        }
        let handlerB = ReadinessRecorder(fd: b, loop: loop) { _ in
            calls.add(1, ordering: .relaxed)
            loop.unregister(a)
            loop.unregister(b)
            first.signal()
        }
        // Both made readable inside one callback: the next `epoll_wait` reports both at once.
        try await onLoop(loop) {
            try loop.register(a, events: EventLoop.readable, handler: handlerA)
            try loop.register(b, events: EventLoop.readable, handler: handlerB)
            try send(aPeer)
            try send(bPeer)
        }
        #expect(first.wait(timeout: .now() + 10) == .success)
        try await onLoop(loop) {}
        #expect(calls.load(ordering: .relaxed) == 1)
        #expect(handlerA.events.count + handlerB.events.count == 1)
    }

    /// A loop with nothing to do sleeps in `epoll_wait` with no timeout; work handed over from a thread of the test's
    /// own wakes it (it would otherwise sleep for ever and the wait below time out).
    @Test func executeFromAnotherThreadWakesASleepingLoop() async throws {
        let loop = try EventLoop(name: "test-exec-wake")
        loop.start()
        defer { loop.stopAndWait() }
        try await onLoop(loop) {}  // the loop has run a pass and is going back to sleep with no timer
        let ran = DispatchSemaphore(value: 0)
        let wakeUpsBefore = loop.wakeUps.load(ordering: .relaxed)
        Sys.detachedThread(name: "test-executor") {
            loop.execute { ran.signal() }
        }
        #expect(ran.wait(timeout: .now() + 10) == .success, "work from another thread did not wake the loop")
        #expect(loop.wakeUps.load(ordering: .relaxed) > wakeUpsBefore)
    }

    private func send(_ fd: Int32) throws {
        var byte: UInt8 = 1
        try withUnsafeBytes(of: &byte) { try Sys.writeAll(fd, $0) }
    }

    private func onLoop(_ loop: EventLoop, _ body: @escaping @Sendable () throws -> Void) async throws {
        let outcome = await withCheckedContinuation { (done: CheckedContinuation<Result<Void, any Error>, Never>) in
            loop.execute { done.resume(returning: Result { try body() }) }
        }
        try outcome.get()
    }
}
