import FoundationEssentials
import RouseText

/// One HTTP/1.1 request as the push API reads it: method, target, the headers it needs, the body.
package struct HTTP1Request: Sendable, Equatable {
    /// `GET`, `POST`, …
    package var method: String
    /// The request target (origin form: `/v1/push`, with any query).
    package var target: String
    /// `HTTP/1.1` or `HTTP/1.0`.
    package var version: String
    /// Header fields in order, names lower-cased.
    package var headers: [(name: String, value: String)]
    /// The body (`Content-Length` bytes, or the decoded chunks).
    package var body: [UInt8]

    /// The first value of header `name` (lower case).
    package func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// Whether the connection stays open after the answer (HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with
    /// `Connection: keep-alive`).
    package var keepAlive: Bool {
        let tokens = (header("connection") ?? "").lowercased().split(separator: ",").map {
            $0.trimmingBlanks()
        }
        return version == "HTTP/1.1" ? !tokens.contains("close") : tokens.contains("keep-alive")
    }

    /// A request.
    package init(
        method: String, target: String, version: String, headers: [(name: String, value: String)], body: [UInt8]
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = body
    }

    package static func == (a: HTTP1Request, b: HTTP1Request) -> Bool {
        a.method == b.method && a.target == b.target && a.version == b.version && a.body == b.body
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }
}

/// Why a request was refused before it reached a route: the status to answer and a precise message. The connection
/// is closed after the answer (the parser cannot know where the next request would start).
package struct HTTP1ParseError: Error, Sendable, Equatable {
    /// 400, 413, 414, 431, 501 or 505.
    package var status: Int
    /// What exactly was wrong, for the response body and the log.
    package var message: String

    /// An error.
    package init(status: Int, _ message: String) {
        self.status = status
        self.message = message
    }
}

/// A bounded HTTP/1.1 request parser (RFC 9112) for the push API: a value type fed bytes, returning a complete
/// request, a demand for more bytes, or a precise error.
///
/// Hand-written on purpose: the API needs a server-side parser on Rouse's own epoll loop, bounded in every
/// dimension, that rejects what it does not understand. Debian 12's candidates do not fit: libmicrohttpd and
/// libevhtp bring their own threads and loops; llhttp (Node's parser) is not packaged for C in bookworm
/// (only inside nodejs); picohttpparser is not packaged. The subset served is small: `Content-Length` bodies and
/// `Transfer-Encoding: chunked` ones (RFC 9112 §7.1; `HTTP1ChunkedBody`: `maxBodyBytes` applies to the decoded size,
/// chunk extensions ignored, trailers checked and discarded), no other transfer coding (501), no obsolete line
/// folding (400), CRLF line ends only (400), at most `maxHeaderBytes` of request line and headers (431), and as much
/// chunk framing again, `maxHeaders` fields (431), `maxTargetBytes` (414), `maxBodyBytes` (413). RFC 9112 §6.3:
/// `Transfer-Encoding` with `Content-Length`, `chunked` not last or twice, `Transfer-Encoding` in HTTP/1.0 → 400
/// (the connection is closed after any error).
package struct HTTP1RequestParser: Sendable {
    /// Limits.
    package struct Limits: Sendable, Equatable {
        /// Request line and header block, CRLFs included.
        package var maxHeaderBytes = 16 * 1024
        /// Header fields.
        package var maxHeaders = 64
        /// Request target.
        package var maxTargetBytes = 2048
        /// Body.
        package var maxBodyBytes = 1 << 20

        /// Defaults.
        package init() {}
    }

    /// What `next` found.
    package enum Step: Sendable, Equatable {
        /// Not enough bytes yet.
        case needMore
        /// The headers ask for `100 Continue` before the body (curl does for bodies over 1 KiB): answer it, then
        /// call `next` again.
        case expectContinue
        /// A complete request; its bytes are consumed.
        case request(HTTP1Request)
        /// The request is refused.
        case failure(HTTP1ParseError)
    }

    private struct Head {
        var method: String
        var target: String
        var version: String
        var headers: [(name: String, value: String)]
        /// `Content-Length`, or `nil` for a chunked body.
        var contentLength: Int?
    }

    /// Limits in force.
    package let limits: Limits
    private var buffer: [UInt8] = []
    private var head: Head?
    private var chunked: HTTP1ChunkedBody?
    private var continueAnswered = false
    /// Head bytes already searched for the end of the head and for garbage (a head sent byte by byte costs O(n)).
    private var scanned = 0

    /// A parser with `limits`.
    package init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Bytes buffered and not yet part of a returned request.
    package var bufferedCount: Int { buffer.count + (chunked?.body.count ?? 0) }

    /// Whether part of a request is buffered (for the connection's read deadline).
    package var inRequest: Bool { head != nil || !buffer.isEmpty }

    /// Adds bytes read from the connection.
    package mutating func append(_ bytes: some Collection<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next step: a request once its head and body are complete.
    package mutating func next() -> Step {
        if head == nil {
            guard let end = headEnd() else {
                defer { scanned = buffer.count }
                if buffer.count > limits.maxHeaderBytes {
                    return .failure(
                        HTTP1ParseError(status: 431, "request line and headers exceed \(limits.maxHeaderBytes) bytes"))
                }
                if let error = earlyLineError() { return .failure(error) }
                return .needMore
            }
            if end > limits.maxHeaderBytes {
                return .failure(
                    HTTP1ParseError(status: 431, "request line and headers exceed \(limits.maxHeaderBytes) bytes"))
            }
            let parsed: Head
            switch parseHead(buffer[0..<end]) {
            case .success(let value): parsed = value
            case .failure(let error): return .failure(error)
            }
            head = parsed
            buffer.removeFirst(end + 4)
            scanned = 0
            continueAnswered = false
            if parsed.contentLength == nil {
                chunked = HTTP1ChunkedBody(
                    maxBodyBytes: limits.maxBodyBytes, maxFramingBytes: limits.maxHeaderBytes,
                    maxTrailers: limits.maxHeaders)
            }
        }
        guard let head else { return .needMore }
        let body: [UInt8]
        if let contentLength = head.contentLength {
            if buffer.count < contentLength { return awaitBody(head) }
            body = Array(buffer[0..<contentLength])
            buffer.removeFirst(contentLength)
        } else {
            guard var decoder = chunked else { return .needMore }
            var consumed = 0
            let outcome = decoder.decode(buffer, from: &consumed)
            buffer.removeFirst(consumed)
            chunked = decoder
            switch outcome {
            case .needMore: return awaitBody(head)
            case .failure(let error): return .failure(error)
            case .complete: body = decoder.body
            }
            chunked = nil
        }
        self.head = nil
        return .request(
            HTTP1Request(
                method: head.method, target: head.target, version: head.version, headers: head.headers, body: body))
    }

    /// The body is incomplete: `100 Continue` once if the client asked for it (RFC 9110 §10.1.1; ignored in
    /// HTTP/1.0), else more bytes.
    private mutating func awaitBody(_ head: Head) -> Step {
        if !continueAnswered && head.version == "HTTP/1.1"
            && (head.headers.first { $0.name == "expect" }?.value.lowercased() == "100-continue")
        {
            continueAnswered = true
            return .expectContinue
        }
        return .needMore
    }

    /// The index of the CRLFCRLF that ends the head, if buffered.
    private func headEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        var i = max(0, scanned - 3)
        while i + 3 < buffer.count {
            if buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    /// Garbage found before the head is complete (a binary first line, a bare LF): refused now, not after 16 KiB.
    private func earlyLineError() -> HTTP1ParseError? {
        for index in scanned..<buffer.count {
            let byte = buffer[index]
            if byte == 10 && (index == 0 || buffer[index - 1] != 13) {
                return HTTP1ParseError(status: 400, "line \(lineNumber(at: index)) ends with a bare LF, not CRLF")
            }
            if byte == 0 { return HTTP1ParseError(status: 400, "NUL byte in the request head") }
        }
        return nil
    }

    private func lineNumber(at index: Int) -> Int { buffer[0..<index].reduce(1) { $0 + ($1 == 10 ? 1 : 0) } }

    private func parseHead(_ bytes: ArraySlice<UInt8>) -> Result<Head, HTTP1ParseError> {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex
        var i = bytes.startIndex
        while i < bytes.endIndex {
            if bytes[i] == 10 {
                guard i > start, bytes[i - 1] == 13 else {
                    return .failure(
                        HTTP1ParseError(status: 400, "line \(lines.count + 1) ends with a bare LF, not CRLF"))
                }
                lines.append(bytes[start..<(i - 1)])
                start = i + 1
            } else if bytes[i] == 0 {
                return .failure(HTTP1ParseError(status: 400, "NUL byte in the request head"))
            }
            i += 1
        }
        lines.append(bytes[start..<bytes.endIndex])
        guard let requestLine = lines.first else { return .failure(HTTP1ParseError(status: 400, "empty request")) }
        let parts = requestLine.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            return .failure(
                HTTP1ParseError(
                    status: 400, "request line must be 'METHOD SP target SP HTTP/1.1' (got \(parts.count) parts)"))
        }
        guard !parts[0].isEmpty, parts[0].allSatisfy(Self.isTokenByte) else {
            return .failure(HTTP1ParseError(status: 400, "method is not an HTTP token"))
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        guard parts[1].count <= limits.maxTargetBytes else {
            return .failure(HTTP1ParseError(status: 414, "request target exceeds \(limits.maxTargetBytes) bytes"))
        }
        guard parts[1].first == UInt8(ascii: "/"), parts[1].allSatisfy({ $0 > 32 && $0 < 127 }) else {
            return .failure(HTTP1ParseError(status: 400, "request target must be an origin-form path of visible ASCII"))
        }
        let target = String(decoding: parts[1], as: UTF8.self)
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            if version.hasPrefix("HTTP/") {
                return .failure(
                    HTTP1ParseError(status: 505, "HTTP version '\(version)' not supported (HTTP/1.1 or h2c)"))
            }
            return .failure(HTTP1ParseError(status: 400, "request line does not end with an HTTP version"))
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            if headers.count == limits.maxHeaders {
                return .failure(HTTP1ParseError(status: 431, "more than \(limits.maxHeaders) header fields"))
            }
            if let first = line.first, first == 32 || first == 9 {
                return .failure(HTTP1ParseError(status: 400, "obsolete line folding in the headers is not accepted"))
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                return .failure(HTTP1ParseError(status: 400, "header line without ':'"))
            }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(Self.isTokenByte) else {
                return .failure(HTTP1ParseError(status: 400, "header name is not an HTTP token"))
            }
            var value = line[(colon + 1)...]
            while let f = value.first, f == 32 || f == 9 { value = value.dropFirst() }
            while let l = value.last, l == 32 || l == 9 { value = value.dropLast() }
            guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else {
                return .failure(
                    HTTP1ParseError(status: 400, "header '\(String(decoding: name, as: UTF8.self))' has a control byte")
                )
            }
            headers.append((String(decoding: name, as: UTF8.self).lowercased(), String(decoding: value, as: UTF8.self)))
        }
        let lengths = headers.filter { $0.name == "content-length" }.map(\.value)
        let encodings = headers.filter { $0.name == "transfer-encoding" }.map(\.value)
        var contentLength: Int? = 0
        if !encodings.isEmpty {
            if let error = Self.transferEncodingError(encodings, version: version, contentLength: !lengths.isEmpty) {
                return .failure(error)
            }
            contentLength = nil
        } else if let first = lengths.first {
            guard lengths.allSatisfy({ $0 == first }) else {
                return .failure(HTTP1ParseError(status: 400, "conflicting Content-Length values"))
            }
            guard !first.isEmpty, first.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                return .failure(HTTP1ParseError(status: 400, "Content-Length '\(first)' is not a decimal number"))
            }
            // All digits: a number too long for Int is a body too large, not a malformed one.
            guard first.utf8.count <= 12, let n = Int(first), n <= limits.maxBodyBytes else {
                let shown = first.utf8.count <= 24 ? first : String(first.prefix(24)) + "…"
                return .failure(
                    HTTP1ParseError(status: 413, "body of \(shown) bytes exceeds \(limits.maxBodyBytes)"))
            }
            contentLength = n
        }
        if version == "HTTP/1.1" && !headers.contains(where: { $0.name == "host" }) {
            return .failure(HTTP1ParseError(status: 400, "HTTP/1.1 request without Host header"))
        }
        return .success(
            Head(method: method, target: target, version: version, headers: headers, contentLength: contentLength))
    }

    /// RFC 9112 §6.1, §6.3: the framing `Transfer-Encoding` allows, or why not.
    private static func transferEncodingError(_ values: [String], version: String, contentLength: Bool)
        -> HTTP1ParseError?
    {
        if version != "HTTP/1.1" {
            return HTTP1ParseError(status: 400, "Transfer-Encoding in an \(version) request (RFC 9112 §6.1)")
        }
        if contentLength {
            return HTTP1ParseError(
                status: 400, "both Transfer-Encoding and Content-Length: the framing is ambiguous (RFC 9112 §6.3)")
        }
        let codings = values.flatMap { $0.split(separator: ",") }.map {
            $0.trimmingBlanks().lowercased()
        }.filter { !$0.isEmpty }
        guard codings.last == "chunked" else {
            return HTTP1ParseError(
                status: 400,
                "Transfer-Encoding must end with chunked (RFC 9112 §6.3), got '\(codings.joined(separator: ", "))'")
        }
        guard codings.filter({ $0 == "chunked" }).count == 1 else {
            return HTTP1ParseError(status: 400, "chunked applied more than once (RFC 9112 §6.1)")
        }
        if let other = codings.first(where: { $0 != "chunked" }) {
            return HTTP1ParseError(
                status: 501, "transfer coding '\(other.prefix(40))' is not supported (only chunked)")
        }
        return nil
    }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(b)
        }
    }
}
