import Foundation
import Synchronization

/// Writes whole lines to stdout, unbuffered, from any thread (one line is never interleaved with another).
final class LinePrinter: Sendable {
    private let lock = Mutex(())

    func print(_ line: String) {
        lock.withLock { _ in
            FileHandle.standardOutput.write(Data((line + "\n").utf8))
        }
    }
}
