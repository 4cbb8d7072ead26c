import CRouseSys
import Glibc
import RouseClock
import RouseSystem
import Synchronization

/// Something the event loop calls when its file descriptor is ready. Called on the loop's thread only.
package protocol EventLoopFDHandler: AnyObject {
    func handleEvents(_ events: UInt32)
}

/// One epoll loop on one thread: file-descriptor readiness, timers, and work handed over from other threads.
///
/// Everything registered with a loop is touched only on its thread; `execute` is the way in from elsewhere. Its
/// timers run on the ``RouseClock`` it was made with: with a `ManualClock` they fire when a test advances the clock
/// (the loop is woken to look again), never by themselves. A loop with no timer sleeps in `epoll_wait` for ever.
///
/// The contract, checked: every loop-confined method (`register`, `modify`, `unregister`, `forget`, `schedule`,
/// `cancelTimer`) asserts in debug builds that it runs on the loop's thread (or before the thread started, or after it
/// ended), as swift-nio's `assertInEventLoop`; code confined to a loop calls ``assertInLoop(file:line:)`` the same way.
/// With `ROUSE_LOOP_STALL_LIMIT_MS` set (the test command sets it), a callback that holds the loop's thread longer than
/// that, not counting time spent waiting for a CPU, ends the process with the loop's name (``StallDetector``): a
/// callback that blocks a daemon's only loop fails the test that caused it.
public final class EventLoop: @unchecked Sendable {  // `pending` is under its Mutex; the rest is loop-thread only.
    private let epfd: Int32
    private let wakeFD: Int32
    private var handlers: [Int32: any EventLoopFDHandler] = [:]
    private var timers = TimerHeap()
    private let pending = Mutex<[@Sendable () -> Void]>([])
    private let stopped = Atomic<Bool>(false)
    /// How many times the loop's thread woke from `epoll_wait` (events, timers, or work from other threads): what an
    /// idle daemon should keep near zero.
    package let wakeUps = Atomic<UInt64>(0)
    /// Timer entries held, live and cancelled, as of the loop's last pass (read from any thread, for metrics).
    package let timerEntryGauge = Atomic<Int>(0)
    private var thread: LoopThread?
    /// The loop thread's `pthread_t` (0 until started).
    private let threadID = Atomic<UInt>(0)
    private let stalls: StallDetector?
    /// The loop's name, for logs and thread names.
    public let name: String
    /// The clock its timers run on; what the connections on this loop read as "now".
    public let clock: any RouseClock

    /// A loop named `name` (its thread's name too), its timers on `clock`. Not running until ``start()``. A loop that
    /// exists to run blocking work on its thread, so that no other loop has to (a store's writer, a database client
    /// that reconnects, a netlink exchange that waits for the kernel), says `mayBlock: true`: the stall detector leaves
    /// it alone. Every other loop is watched when the detector is on.
    public init(name: String, clock: any RouseClock = SystemClock(), mayBlock: Bool = false) throws {
        self.name = name
        self.clock = clock
        stalls = mayBlock ? nil : StallDetector.fromEnvironment(loop: name)
        epfd = try Sys.epollCreate()
        wakeFD = try Sys.eventFD()
        try Sys.epollControl(epfd, EPOLL_CTL_ADD, wakeFD, events: EPOLLIN.rawValue, data: UInt64(wakeFD))
        // A manual clock moved by a test: the next timer may be due now, not when epoll_wait's timeout ends.
        clock.whenAdvanced { [weak self] in self?.wake() }
    }

    deinit {
        Sys.close(wakeFD)
        Sys.close(epfd)
    }

    /// Starts the loop's thread.
    public func start() {
        thread = LoopThread(name: name) { [self] in
            threadID.store(Sys.currentThread, ordering: .releasing)
            run()
            threadID.store(0, ordering: .releasing)
        }
    }

    /// Whether the caller runs on this loop's thread.
    public var inLoop: Bool {
        threadID.load(ordering: .acquiring) == Sys.currentThread
    }

    /// Traps (debug builds only) unless the caller runs on this loop's thread, or the loop's thread has not started yet
    /// or has ended (set-up and tear-down from the thread that owns the loop): what every loop-confined method checks
    /// first.
    @inline(__always)
    public func assertInLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(
            inLoop || threadID.load(ordering: .acquiring) == 0,
            "\(name): a loop-confined call from another thread (use execute)", file: file, line: line)
    }

    /// Runs `work` on the loop's thread, soon.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        let wasEmpty = pending.withLock { queue in
            queue.append(work)
            return queue.count == 1
        }
        // From the loop itself the queue is drained before it sleeps again: no need to wake it (a wake-up saved
        // for every job an executor on this loop enqueues).
        if wasEmpty && !inLoop { wake() }
    }

    /// Stops the loop after the current iteration and waits for its thread to end; from the loop itself, which cannot
    /// wait for its own end, the thread is detached instead.
    public func stopAndWait() {
        stopped.store(true, ordering: .releasing)
        wake()
        guard let thread else { return }
        if inLoop { thread.detach() } else { thread.join() }
    }

    private func wake() { Sys.eventFDSignal(wakeFD) }

    // MARK: loop-thread API

    /// Now on the loop's clock, in nanoseconds since its origin: what connections compare their deadlines with.
    package var now: UInt64 { clock.now.nanoseconds }

    /// `EPOLLIN`, for users that import no epoll header: the descriptor is readable (or hung up, or in error).
    package static var readable: UInt32 { EPOLLIN.rawValue }
    /// `EPOLLOUT`: the descriptor can be written to.
    package static var writable: UInt32 { EPOLLOUT.rawValue }
    /// `EPOLLHUP`: the peer hung up (reported without being asked for).
    package static var hungUp: UInt32 { EPOLLHUP.rawValue }

    package func register(_ fd: Int32, events: UInt32, handler: any EventLoopFDHandler) throws {
        assertInLoop()
        try Sys.epollControl(epfd, EPOLL_CTL_ADD, fd, events: events, data: UInt64(UInt32(bitPattern: fd)))
        handlers[fd] = handler
    }

    package func modify(_ fd: Int32, events: UInt32) {
        assertInLoop()
        try? Sys.epollControl(epfd, EPOLL_CTL_MOD, fd, events: events, data: UInt64(UInt32(bitPattern: fd)))
    }

    package func unregister(_ fd: Int32) {
        assertInLoop()
        try? Sys.epollControl(epfd, EPOLL_CTL_DEL, fd, events: 0, data: 0)
        handlers[fd] = nil
    }

    /// Drops the handler of a descriptor that was closed already (by a library that owns it, such as libpq on a
    /// lost connection): closing removed it from epoll, and `unregister` would name a descriptor no longer ours.
    package func forget(_ fd: Int32) {
        assertInLoop()
        handlers[fd] = nil
    }

    /// Calls `body` on the loop after `delay`; returns an id for `cancelTimer`.
    @discardableResult
    package func schedule(after delay: Duration, _ body: @escaping () -> Void) -> UInt64 {
        assertInLoop()
        return timers.insert(deadline: now &+ delay.wholeNanoseconds, body)
    }

    /// Timers the heap holds (cancelled ones until they come up): for tests that wait until something armed one.
    package var timerCount: Int {
        assertInLoop()
        return timers.count
    }

    package func cancelTimer(_ id: UInt64) {
        assertInLoop()
        timers.cancel(id)
    }

    /// Timer entries held, live and cancelled (tests: cancelled timers must not pile up).
    package var timerEntries: Int { timers.entryCount }

    private func run() {
        let capacity: Int32 = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Int(capacity))
        defer { events.deallocate() }
        while !stopped.load(ordering: .acquiring) {
            let timeout = timers.millisecondsUntilNext(now: now)
            let n: Int32
            do {
                n = try Sys.epollWait(epfd, events, capacity, timeoutMS: timeout)
            } catch {
                // Only a bug can make epoll_wait fail on our own descriptors (EINTR is absorbed).
                preconditionFailure("\(error)")
            }
            wakeUps.add(1, ordering: .relaxed)
            let pass = stalls?.begin()
            for i in 0..<Int(n) {
                let fd = Int32(truncatingIfNeeded: events[i].data.u64)
                let flags = events[i].events
                if fd == wakeFD {
                    Sys.eventFDDrain(wakeFD)
                    continue
                }
                guard let handler = handlers[fd] else { continue }
                call(pass) { handler.handleEvents(flags) }
            }
            runPending(pass)
            // Each body is taken just before it runs: one cancelled by an earlier callback of this pass never runs.
            for id in timers.takeDue(now: now) {
                if let body = timers.start(id) { call(pass, body) }
            }
            // What the timers queued (they run on the loop: `execute` did not wake it).
            runPending(pass)
            timerEntryGauge.store(timers.entryCount, ordering: .relaxed)
        }
    }

    /// Runs one callback, timed by the stall detector when it is on.
    @inline(__always)
    private func call(_ pass: StallDetector.Pass?, _ callback: () -> Void) {
        if let stalls, let pass { stalls.measure(pass, callback) } else { callback() }
    }

    private func runPending(_ pass: StallDetector.Pass?) {
        while true {
            let work = pending.withLock { queue -> [@Sendable () -> Void] in
                let taken = queue
                queue.removeAll(keepingCapacity: true)
                return taken
            }
            if work.isEmpty { return }
            for item in work { call(pass, item) }
        }
    }
}
