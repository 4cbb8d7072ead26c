import Dispatch
import Foundation
import RouseSystem
import Synchronization

/// Reads a pipe (ours: closed at its end) to its end on a thread of its own: all of a finished child's output.
final class PipeCollector: Sendable {
    private let data = Mutex<[UInt8]>([])
    private let done = DispatchSemaphore(value: 0)

    init(_ descriptor: Int32) {
        Sys.detachedThread(name: "rouse-pipe") { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { Sys.readFromChild(descriptor, into: $0) }
                if count == 0 { break }
                data.withLock { $0 += buffer[..<count] }
            }
            Sys.close(descriptor)
            done.signal()
        }
    }

    /// Waits on this thread (for synchronous callers).
    func blockingResult() -> [UInt8] {
        done.wait()
        done.signal()
        return data.withLock { $0 }
    }

    /// Waits without holding a thread of the cooperative pool.
    func result() async -> [UInt8] {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [self] in continuation.resume(returning: blockingResult()) }
        }
    }
}
