import CCurl
import Glibc
import Logging
import RouseSystem
import Synchronization

/// The thread that runs libcurl's multi interface for one ``CurlHTTPClient``: attaches submitted transfers,
/// drives them with `curl_multi_perform`, sleeps in `curl_multi_poll`, and completes finished ones.
///
/// `@unchecked Sendable`: `shared` is a `Mutex` and holds everything other threads touch; `multi` is used
/// only on the loop thread, except `curl_multi_wakeup`, which is called under `shared`'s lock and only
/// while `closed` is false (so never on a freed handle); `active` and `awaitingHead` are touched only on the
/// loop thread.
///
/// Poll interval: libcurl 7.88 can leave transfers queued behind `CURLMOPT_MAX_HOST_CONNECTIONS` with no
/// timer and no socket to wake `curl_multi_poll` (measured here: 500 concurrent requests on one connection
/// to nghttpd stalled for a whole poll timeout in about one run of four). So while any attached transfer still
/// waits for its response head, the loop wakes at least every 50 ms. When only established streams remain
/// (nothing is queued, so the stall cannot happen) it sleeps until libcurl's own next timer (deadlines
/// included), a socket event or a wake-up from another thread, and nothing else: an idle device channel costs
/// no wake-up.
///
/// One more pass before sleeping (libcurl before 8.4.0, Debian 12's 7.88.1 among them). When a transfer's earliest
/// timer is already due as `curl_multi_perform` begins and the call sets it a new "run again now" timer, the call
/// ends by dropping the due timer and, comparing in whole milliseconds, the new one too when it lies less than 1 ms
/// after the call began (curl issue #11937, fixed in 8.4.0 by commit 579f093). HTTP/2 sets that timer for a stream
/// that must run once more to see its end: when its own read returns its last bytes with the stream already closed,
/// and when a sibling's read takes in its frames. Such a transfer then waited for the next byte on the connection,
/// which on a quiet device channel may be minutes away (traced: a stream returned its last record with the stream
/// closed, and `curl_multi_timeout` then named a 10 s timer instead of 0; the gateway's test "a newer channel
/// replaces the older one" hung in 3–6 % of its runs, with Debian's libcurl as with upstream 7.88.1). So with such
/// a libcurl the loop sleeps only after a pass that did nothing: after a wake-up from a sleep (socket events, a
/// timer, another thread), and after a pass with a callback, a completion, or a transfer added or removed, it runs
/// another pass at once (`poll` with timeout 0); the transfer libcurl marked to run again (its drain flag survives
/// the lost timer) runs there. An idle client
/// still sleeps until a real event: a wake-up costs one more `curl_multi_perform`, not another wake-up. What is
/// left: bytes that arrive during a pass that began without a sleep before it, are read by a sibling with no
/// callback, and leave a transfer whose timer is lost; a window of microseconds, against the millisecond of before.
final class CurlMultiLoop: @unchecked Sendable {
    private struct Shared {
        var adds: [CurlTransfer] = []
        var removals: [CurlTransfer] = []
        var stopping = false
        var closed = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let multi: CurlMulti
    private let shared = Mutex(Shared())
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Attached transfers whose response head has not arrived yet (loop thread only).
    private var awaitingHead: Set<ObjectIdentifier> = []
    private let logger: Logger
    /// Callbacks of this loop's transfers so far (loop thread only).
    private let activity = CurlLoopActivity()
    /// libcurl drops sub-millisecond timers (before 8.4.0): settle with one more pass after any work.
    private let settlesAfterWork: Bool

    init(configuration: CurlHTTPClient.Configuration, logger: Logger) throws {
        self.logger = logger
        settlesAfterWork = curlVersionNumber < Self.timerFixVersion
        multi = try CurlMulti()
        try multi.set(CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX), name: "CURLMOPT_PIPELINING")
        try multi.set(
            CURLMOPT_MAX_CONCURRENT_STREAMS,
            configuration.maxConcurrentStreams,
            name: "CURLMOPT_MAX_CONCURRENT_STREAMS"
        )
        try multi.set(
            CURLMOPT_MAX_HOST_CONNECTIONS,
            configuration.maxHostConnections,
            name: "CURLMOPT_MAX_HOST_CONNECTIONS"
        )
        try multi.set(
            CURLMOPT_MAX_TOTAL_CONNECTIONS,
            configuration.maxTotalConnections,
            name: "CURLMOPT_MAX_TOTAL_CONNECTIONS"
        )
    }

    /// Starts the loop thread; it keeps the loop alive until it stops.
    func start() throws {
        do {
            try Sys.startThread(name: "rouse-curl") { [self] in run() }
        } catch {
            throw CurlError.threadStart(error.errno)
        }
    }

    /// Hands a transfer to the loop; fails it at once if the loop is stopping.
    func submit(_ transfer: CurlTransfer) {
        let accepted = shared.withLock { shared in
            guard !shared.stopping, !shared.closed else { return false }
            shared.adds.append(transfer)
            multi.wakeup()
            return true
        }
        if !accepted { transfer.failShutdown() }
    }

    /// Cancels a transfer: its waiter gets `CancellationError` now, the loop detaches the handle next.
    func cancel(_ transfer: CurlTransfer) {
        guard transfer.cancel() else { return }
        shared.withLock { shared in
            guard !shared.closed else { return }
            shared.removals.append(transfer)
            multi.wakeup()
        }
    }

    /// Asks the loop to stop (failing every transfer with a shutdown error) without waiting.
    func requestStop() {
        shared.withLock { shared in
            guard !shared.closed else { return }
            shared.stopping = true
            multi.wakeup()
        }
    }

    /// Stops the loop and waits until it has finished every transfer.
    func stop() async {
        await withCheckedContinuation { continuation in
            let alreadyClosed = shared.withLock { shared in
                if shared.closed { return true }
                shared.stopping = true
                shared.stopWaiters.append(continuation)
                multi.wakeup()
                return false
            }
            if alreadyClosed { continuation.resume() }
        }
    }

    // MARK: loop thread

    /// The first libcurl that keeps sub-millisecond timers (8.4.0).
    static let timerFixVersion: UInt32 = 0x08_04_00

    private func run() {
        logger.debug("curl loop started")
        var socketEvents = 0
        var slept = false
        while true {
            let (adds, removals, stopping) = shared.withLock { shared in
                defer {
                    shared.adds = []
                    shared.removals = []
                }
                return (shared.adds, shared.removals, shared.stopping)
            }
            for transfer in adds { attach(transfer) }
            for transfer in removals { detach(transfer) }
            if stopping { break }
            do {
                let callbacksBefore = activity.count
                _ = try multi.perform()
                let completed = completeFinished()
                let didWork =
                    slept || socketEvents > 0 || completed > 0 || activity.count != callbacksBefore
                    || !adds.isEmpty || !removals.isEmpty
                let cap: Int32 = awaitingHead.isEmpty ? Int32.max : 50
                let timeout = settlesAfterWork && didWork ? 0 : multi.timeoutMilliseconds(atMost: cap)
                socketEvents = try multi.poll(timeoutMilliseconds: timeout)
                slept = timeout != 0
            } catch let error as CurlError {
                // Multi-level failures are not tied to one transfer (out of memory, a bad handle): fail all.
                logger.error("curl multi failure", metadata: ["error": "\(error)"])
                for (_, transfer) in active {
                    multi.remove(transfer.easy)
                    transfer.fail(error)
                }
                active = [:]
                awaitingHead = []
                Sys.pause(milliseconds: 10)  // do not spin if the multi handle keeps failing
            } catch {
                logger.error("unexpected curl loop error", metadata: ["error": "\(error)"])
                Sys.pause(milliseconds: 10)
            }
        }
        let (leftover, waiters) = shared.withLock { shared in
            shared.closed = true
            defer {
                shared.adds = []
                shared.stopWaiters = []
            }
            return (shared.adds, shared.stopWaiters)
        }
        for (_, transfer) in active {
            multi.remove(transfer.easy)
            transfer.failShutdown()
        }
        active = [:]
        for transfer in leftover { transfer.failShutdown() }
        logger.debug("curl loop stopped")
        for waiter in waiters { waiter.resume() }
    }

    private func attach(_ transfer: CurlTransfer) {
        guard !transfer.isDone else { return }
        do {
            try multi.add(transfer.easy)
            transfer.activity = activity
            active[transfer.easy.handle] = transfer
            let id = ObjectIdentifier(transfer)
            awaitingHead.insert(id)
            transfer.onHeadArrived = { [unowned self] in self.awaitingHead.remove(id) }
        } catch let error as CurlError {
            transfer.fail(error)
        } catch {
            transfer.fail(CurlError(code: .failedInit, operation: "curl_multi_add_handle", detail: "\(error)"))
        }
    }

    private func detach(_ transfer: CurlTransfer) {
        guard active.removeValue(forKey: transfer.easy.handle) != nil else { return }
        awaitingHead.remove(ObjectIdentifier(transfer))
        multi.remove(transfer.easy)
    }

    /// Completes every transfer libcurl reports finished; returns how many.
    private func completeFinished() -> Int {
        var completed = 0
        while let (easy, result) = multi.nextDone() {
            guard let transfer = active.removeValue(forKey: easy) else { continue }
            completed += 1
            awaitingHead.remove(ObjectIdentifier(transfer))
            multi.remove(transfer.easy)
            if result != .ok {
                logger.debug(
                    "curl transfer failed",
                    metadata: ["curl-code": "\(result.rawValue)", "curl-error": "\(transfer.easy.errorDetail)"]
                )
            }
            transfer.finish(result: result)
        }
        return completed
    }
}

/// How many libcurl callbacks (head, body, upload) a loop's transfers have had: the loop compares it across a
/// `curl_multi_perform` to tell a pass that did work. Loop thread only.
final class CurlLoopActivity {
    var count: UInt64 = 0
}
