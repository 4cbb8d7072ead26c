import Foundation

/// A deliberately dumb HTTP/2 peer over plain TCP (h2c, prior knowledge) for tests that need exact frames:
/// malformed input, PING, idle timeouts. Blocking socket with a receive deadline.
public final class RawH2Client: @unchecked Sendable {  // used by one thread at a time
    public let fd: Int32
    private var buffer: [UInt8] = []

    /// One frame as read from the wire.
    public struct Frame: Sendable, Equatable {
        public let type: UInt8
        public let flags: UInt8
        public let streamID: UInt32
        public let payload: [UInt8]
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// Connects to 127.0.0.1:`port`.
    public init(port: UInt16, receiveTimeout: Duration = .seconds(10)) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        let (seconds, attoseconds) = receiveTimeout.components
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard r == 0 else {
            Glibc.close(fd)
            throw Failure(description: "connect to 127.0.0.1:\(port): errno \(errno)")
        }
    }

    deinit { Glibc.close(fd) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += n
        }
    }

    /// A frame's bytes.
    public static func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, payload: [UInt8] = []) -> [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff), type, flags]
            + [UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)]
            + payload
    }

    /// Sends the connection preface and an empty SETTINGS frame.
    public func sendPreface() throws {
        try send(RawH2Client.preface + RawH2Client.frame(type: 4))
    }

    /// The next frame, or `nil` when the server closed the connection. Throws on the receive deadline.
    public func readFrame() throws -> Frame? {
        while true {
            if buffer.count >= 9 {
                let length = Int(buffer[0]) << 16 | Int(buffer[1]) << 8 | Int(buffer[2])
                if buffer.count >= 9 + length {
                    let stream =
                        UInt32(buffer[5] & 0x7f) << 24 | UInt32(buffer[6]) << 16 | UInt32(buffer[7]) << 8
                        | UInt32(buffer[8])
                    let frame = Frame(
                        type: buffer[3], flags: buffer[4], streamID: stream, payload: Array(buffer[9..<9 + length]))
                    buffer.removeFirst(9 + length)
                    return frame
                }
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return nil }
            if n < 0 {
                if errno == ECONNRESET { return nil }
                throw Failure(description: "recv: errno \(errno) (deadline passed?)")
            }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// Every frame that arrives until the receive deadline passes or the server closes the connection.
    public func framesUntilQuiet() -> [Frame] {
        var frames: [Frame] = []
        while let frame = try? readFrame() { frames.append(frame) }
        return frames
    }

    /// Closes our side (the server sees the connection end).
    public func close() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    /// Reads frames until one satisfies `match` (returned) or the connection closes (`nil`).
    public func readUntil(_ match: (Frame) -> Bool) throws -> Frame? {
        while let f = try readFrame() {
            if match(f) { return f }
        }
        return nil
    }
}
