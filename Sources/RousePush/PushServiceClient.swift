import FoundationEssentials
import RousePushCore
import RouseSystem
import RouseText

/// A blocking HTTP/1.1 client of rouse-pushd's API over its Unix socket, one keep-alive connection: what `rouse send
/// --via`, rouse-bench and the tests use.
package final class PushServiceClient {
    /// An answer: status, lower-cased headers, body.
    package struct Response: Sendable {
        /// HTTP status.
        package var status: Int
        /// Headers, names lower-cased.
        package var headers: [String: String]
        /// Body.
        package var body: [UInt8]
        /// The body as text.
        package var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// What went wrong talking to the service.
    package struct ClientError: Error, Sendable, CustomStringConvertible {
        /// Why.
        package var description: String
    }

    private let path: String
    private var fd: Int32 = -1
    private var buffer: [UInt8] = []
    /// What each read lands in (one allocation per client, not one per answer).
    private var chunk = [UInt8](repeating: 0, count: 65536)

    /// A client of the service listening at `socketPath` (connects on first use).
    package init(socketPath: String) {
        path = socketPath
    }

    deinit {
        if fd >= 0 { Sys.close(fd) }
    }

    /// Sends one request and reads its answer; reconnects once if the kept-alive connection was closed meanwhile.
    package func request(
        _ method: String, _ target: String, body: [UInt8] = [], headers: [(String, String)] = []
    ) throws -> Response {
        var head = "\(method) \(target) HTTP/1.1\r\nhost: rouse-pushd\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if method == "POST" || !body.isEmpty { head += "content-length: \(body.count)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + body
        for attempt in 0..<2 {
            if fd < 0 {
                do {
                    fd = try Sys.connect(unixPath: path)
                } catch {
                    throw ClientError(description: "cannot connect to \(path): \(error)")
                }
                buffer = []
            }
            do {
                try Sys.sendAll(fd, bytes)
                return try readResponse()
            } catch {
                Sys.close(fd)
                fd = -1
                if attempt == 1 { throw ClientError(description: "\(path): \(error)") }
            }
        }
        throw ClientError(description: "\(path): no answer")
    }

    private func fill() throws {
        // Waits for the answer in poll(2), then reads. A read(2) blocked on a Unix stream socket sleeps on the queue
        // that the kernel also wakes when the peer consumes what this side wrote (write space): the service reading
        // each request would wake this thread for nothing, an extra wake-up per request paid by the service's thread
        // (docs/push-service.md, "Figures"). poll waits for input only; curl and other HTTP clients wait the same way.
        while try Sys.poll([fd], timeoutMilliseconds: -1).first != true {}
        let n = try chunk.withUnsafeMutableBytes { try Sys.read(fd, into: $0) }
        if n <= 0 { throw ClientError(description: "connection closed by the service") }
        buffer.append(contentsOf: chunk[0..<n])
    }

    private func readResponse() throws -> Response {
        while true {
            guard let end = Self.find(buffer, Array("\r\n\r\n".utf8)) else {
                try fill()
                continue
            }
            let head = String(decoding: buffer[0..<end], as: UTF8.self)
            var lines = head.components(separatedBy: "\r\n")
            let statusLine = lines.removeFirst().split(separator: " ")
            guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
                throw ClientError(description: "bad status line '\(statusLine.joined(separator: " "))'")
            }
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                    .trimmingBlanks()
            }
            buffer.removeFirst(end + 4)
            if status == 100 { continue }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            while buffer.count < length { try fill() }
            let body = Array(buffer[0..<length])
            buffer.removeFirst(length)
            if headers["connection"] == "close" {
                Sys.close(fd)
                fd = -1
            }
            return Response(status: status, headers: headers, body: body)
        }
    }

    private static func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }

    /// Sends `requests` as one batch; the outcomes in order, or the service's refusal.
    package func send(_ requests: [PushAPIRequest]) throws -> Result<[PushAPIOutcome], ClientError> {
        let body = "{\"pushes\":[" + requests.map(\.json).joined(separator: ",") + "]}"
        let response = try request("POST", "/v1/batch", body: Array(body.utf8))
        guard response.status == 200 else {
            let message = JSONValue(parsing: response.text)?["error"]?.string ?? response.text
            return .failure(ClientError(description: "\(response.status): \(message)"))
        }
        guard let results = (try? JSONValue.parse(response.body))?["results"]?.array else {
            throw ClientError(description: "the service's answer is not a batch result")
        }
        let outcomes = results.compactMap(PushAPIOutcome.parse)
        guard outcomes.count == requests.count else {
            throw ClientError(description: "\(outcomes.count) outcomes for \(requests.count) pushes")
        }
        return .success(outcomes)
    }
}
