import Foundation
import RouseSystem

/// Raw bytes to a Unix socket and the first complete HTTP/1.1 answer back: for requests no client would send.
enum RawSocket {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Sends `bytes` on a new connection and returns the first answer (head and `content-length` body), or what came
    /// before the service closed. Fails after 10 s without a complete answer.
    static func exchange(path: String, _ bytes: [UInt8]) throws -> String {
        let fd = try Sys.connect(unixPath: path)
        defer { Sys.close(fd) }
        try Sys.setReceiveTimeout(fd, seconds: 10)
        try Sys.sendAll(fd, bytes)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            if let answer = complete(received) { return answer }
            let n: Int
            do {
                n = try chunk.withUnsafeMutableBytes { try Sys.read(fd, into: $0) }
            } catch {
                throw Failure(
                    description: "no complete answer within 10 s: \(String(decoding: received, as: UTF8.self))")
            }
            if n == 0 { return String(decoding: received, as: UTF8.self) }
            received += chunk[0..<n]
        }
    }

    /// The first answer in `bytes` if complete (a `100 Continue` interim answer is skipped).
    static func complete(_ bytes: [UInt8]) -> String? {
        var text = String(decoding: bytes, as: UTF8.self)
        if text.hasPrefix("HTTP/1.1 100 Continue\r\n\r\n") { text.removeFirst("HTTP/1.1 100 Continue\r\n\r\n".count) }
        guard let end = text.range(of: "\r\n\r\n") else { return nil }
        let head = text[..<end.lowerBound].lowercased()
        let length =
            head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        let body = text[end.upperBound...]
        return body.utf8.count >= length ? text : nil
    }

    /// The status code of an answer.
    static func status(_ answer: String) -> Int? {
        let parts = answer.split(separator: " ", maxSplits: 2)
        return parts.count >= 2 ? Int(parts[1]) : nil
    }
}
