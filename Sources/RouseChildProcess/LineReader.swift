import Foundation
import RouseSystem

/// Lines of a child's output as it writes them (a reader thread feeds an AsyncStream).
package final class LineReader: @unchecked Sendable {  // `iterator` is used by one task at a time.
    private var iterator: AsyncStream<String>.AsyncIterator

    /// Reads `descriptor` (ours: closed at the end of the stream); nil gives a reader that has already ended.
    /// `onLine` sees each line on the reader thread, as soon as it was read.
    convenience init(descriptor: Int32?, onLine: (@Sendable (String) -> Void)?) {
        self.init(reading: descriptor, onLine: onLine) { descriptor.map(Sys.close) }
    }

    private init(
        reading descriptor: Int32?, onLine: (@Sendable (String) -> Void)?, finally: @escaping @Sendable () -> Void
    ) {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        iterator = stream.makeAsyncIterator()
        if let descriptor {
            Self.startReading(descriptor, into: continuation, onLine: onLine, finally: finally)
        } else {
            continuation.finish()
        }
    }

    private static func startReading(
        _ descriptor: Int32, into continuation: AsyncStream<String>.Continuation,
        onLine: (@Sendable (String) -> Void)?, finally: @escaping @Sendable () -> Void
    ) {
        Sys.detachedThread(name: "rouse-lines") {
            var line: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            func emit() {
                let text = String(decoding: line, as: UTF8.self)
                onLine?(text)
                continuation.yield(text)
                line.removeAll(keepingCapacity: true)
            }
            while true {
                let count = buffer.withUnsafeMutableBytes { Sys.readFromChild(descriptor, into: $0) }
                if count == 0 { break }
                for byte in buffer[..<count] {
                    if byte == UInt8(ascii: "\n") { emit() } else { line.append(byte) }
                }
            }
            if !line.isEmpty { emit() }
            continuation.finish()
            finally()
        }
    }

    /// The next line, or `nil` at the end of the output.
    package func next() async -> String? { await iterator.next() }

    /// The first line that satisfies `predicate` (a server's ready line), or nil when the output ended or `timeout`
    /// passed first.
    package func first(timeout: Duration, where predicate: @escaping @Sendable (String) -> Bool) async -> String? {
        await withTaskGroup(of: String?.self) { group in
            group.addTask {
                while let line = await self.next() {
                    if predicate(line) { return line }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
