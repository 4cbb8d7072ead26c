import Foundation

/// Lines of a child's output as it writes them (a reader thread feeds an AsyncStream).
public final class LineReader: @unchecked Sendable {  // `iterator` is used by one test task at a time.
    private var iterator: AsyncStream<String>.AsyncIterator

    public init(_ handle: FileHandle) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        iterator = stream.makeAsyncIterator()
        let fd = handle.fileDescriptor
        Thread.detachNewThread {
            var line: [UInt8] = []
            var byte: UInt8 = 0
            while read(fd, &byte, 1) == 1 {
                if byte == UInt8(ascii: "\n") {
                    continuation.yield(String(decoding: line, as: UTF8.self))
                    line.removeAll()
                } else {
                    line.append(byte)
                }
            }
            if !line.isEmpty { continuation.yield(String(decoding: line, as: UTF8.self)) }
            continuation.finish()
        }
    }

    /// The next line, or `nil` at the end of the output.
    public func next() async -> String? { await iterator.next() }
}
