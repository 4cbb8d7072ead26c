import Synchronization

/// Upload copies from descriptors handlers passed, off the executor: one ``BlockingWork`` of one thread per handler
/// (made at its first upload; an idle one holds no thread), so a handler whose descriptor never answers (a FUSE
/// file) stalls only its own uploads, never another handler's nor a close.
final class UploadCopies: Sendable {
    private let pools = Mutex<[String: BlockingWork]>([:])

    /// Threads per handler.
    static let threadsPerHandler = 1

    /// `handler`'s pool.
    func pool(for handler: String) -> BlockingWork {
        pools.withLock { pools in
            if let pool = pools[handler] { return pool }
            let pool = BlockingWork(threads: Self.threadsPerHandler)
            pools[handler] = pool
            return pool
        }
    }

    /// The counters of every handler's pool, added up.
    var counters: BlockingWork.Counters {
        pools.withLock { pools in
            pools.values.reduce(into: BlockingWork.Counters()) { sum, pool in
                let counters = pool.counters
                sum.queued += counters.queued
                sum.running += counters.running
                sum.closed += counters.closed
                sum.copies += counters.copies
            }
        }
    }
}
