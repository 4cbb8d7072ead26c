import Foundation

/// Runs blocking work (a `RawH2Client` read with a deadline, a loop of them) on a thread of its own, so it does not
/// hold one of the few threads of Swift's cooperative pool (two on a 2-core machine) that every other test of the
/// run needs meanwhile.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        Thread.detachNewThread {
            do {
                continuation.resume(returning: try body())
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}
