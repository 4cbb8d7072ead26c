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

    init(configuration: CurlHTTPClient.Configuration, logger: Logger) throws {
        self.logger = logger
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

    private func run() {
        logger.debug("curl loop started")
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
                _ = try multi.perform()
                completeFinished()
                let cap: Int32 = awaitingHead.isEmpty ? Int32.max : 50
                try multi.poll(timeoutMilliseconds: multi.timeoutMilliseconds(atMost: cap))
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

    private func completeFinished() {
        while let (easy, result) = multi.nextDone() {
            guard let transfer = active.removeValue(forKey: easy) else { continue }
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
    }
}
