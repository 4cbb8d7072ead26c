/// A `Transfer-Encoding: chunked` request body being decoded (RFC 9112 §7.1): a value type fed the connection's
/// buffer, bounded in the decoded size (`maxBodyBytes`: 413 only when the decoded body would exceed it), in the
/// length of one chunk-size or trailer line, and in the framing bytes altogether (chunk-size lines, extensions and
/// trailer fields). Chunk extensions are ignored (§7.1.1: a recipient MUST ignore unrecognized ones); trailer fields
/// are checked like header fields and discarded (§7.1.2 allows it).
struct HTTP1ChunkedBody: Sendable {
    /// One chunk-size line or trailer line at most, CRLF included.
    static let maxLineBytes = 1024

    private enum Phase: Sendable {
        /// Expecting a chunk-size line.
        case size
        /// Expecting `remaining` bytes of chunk data, then CRLF.
        case data(remaining: Int)
        /// Expecting trailer lines, then the empty line.
        case trailers(count: Int)
    }

    /// The body decoded so far.
    private(set) var body: [UInt8] = []
    private var phase = Phase.size
    /// Chunk-size lines, extensions and trailers read, CRLFs included.
    private var framingBytes = 0
    private let maxBodyBytes: Int
    private let maxFramingBytes: Int
    private let maxTrailers: Int

    /// A decoder for a body of at most `maxBodyBytes` decoded bytes, `maxFramingBytes` of framing, `maxTrailers`
    /// trailer fields.
    init(maxBodyBytes: Int, maxFramingBytes: Int, maxTrailers: Int) {
        self.maxBodyBytes = maxBodyBytes
        self.maxFramingBytes = maxFramingBytes
        self.maxTrailers = maxTrailers
    }

    /// What `decode` found.
    enum Outcome: Sendable, Equatable {
        /// The last chunk and the trailer section were read: the body is complete.
        case complete
        case needMore
        case failure(HTTP1ParseError)
    }

    /// Decodes from `buffer[start...]`, advancing `start` past what was consumed.
    mutating func decode(_ buffer: [UInt8], from start: inout Int) -> Outcome {
        while true {
            switch phase {
            case .data(let remaining):
                guard buffer.count - start >= remaining + 2 else {
                    // Take the data that arrived (the connection's buffer shrinks), keep waiting for the rest.
                    let available = min(remaining, buffer.count - start)
                    if available > 0 {
                        body.append(contentsOf: buffer[start..<(start + available)])
                        start += available
                        phase = .data(remaining: remaining - available)
                    }
                    return .needMore
                }
                body.append(contentsOf: buffer[start..<(start + remaining)])
                start += remaining
                guard buffer[start] == 13, buffer[start + 1] == 10 else {
                    return .failure(HTTP1ParseError(status: 400, "chunk data is not followed by CRLF"))
                }
                start += 2
                framingBytes += 2
                phase = .size
            case .size:
                let line: ArraySlice<UInt8>
                switch nextLine(buffer, &start) {
                case .line(let found): line = found
                case .needMore: return .needMore
                case .failure(let error): return .failure(error)
                }
                switch chunkSize(line) {
                case .failure(let error): return .failure(error)
                case .success(0): phase = .trailers(count: 0)
                case .success(let size): phase = .data(remaining: size)
                }
            case .trailers(let count):
                let line: ArraySlice<UInt8>
                switch nextLine(buffer, &start) {
                case .line(let found): line = found
                case .needMore: return .needMore
                case .failure(let error): return .failure(error)
                }
                if line.isEmpty { return .complete }
                guard count < maxTrailers else {
                    return .failure(HTTP1ParseError(status: 431, "more than \(maxTrailers) trailer fields"))
                }
                if let error = Self.trailerError(line) { return .failure(error) }
                phase = .trailers(count: count + 1)
            }
        }
    }

    private enum Line {
        case line(ArraySlice<UInt8>)
        case needMore
        case failure(HTTP1ParseError)
    }

    /// The next CRLF-terminated line (without the CRLF), counted in the framing bytes.
    private mutating func nextLine(_ buffer: [UInt8], _ start: inout Int) -> Line {
        var index = start
        let end = min(buffer.count, start + Self.maxLineBytes)
        while index < end {
            if buffer[index] == 10 {
                guard index > start, buffer[index - 1] == 13 else {
                    return .failure(HTTP1ParseError(status: 400, "a chunk-size or trailer line ends with a bare LF"))
                }
                let line = buffer[start..<(index - 1)]
                framingBytes += index + 1 - start
                guard framingBytes <= maxFramingBytes else {
                    return .failure(
                        HTTP1ParseError(
                            status: 400, "chunk-size lines and trailers exceed \(maxFramingBytes) bytes in one body"))
                }
                start = index + 1
                return .line(line)
            }
            if buffer[index] == 0 { return .failure(HTTP1ParseError(status: 400, "NUL byte in a chunk-size line")) }
            index += 1
        }
        if buffer.count - start >= Self.maxLineBytes {
            return .failure(
                HTTP1ParseError(status: 400, "a chunk-size or trailer line exceeds \(Self.maxLineBytes) bytes"))
        }
        return .needMore
    }

    /// `chunk-size [ chunk-ext ]`: 1*HEXDIG, then nothing or `BWS ";" …` (extensions of visible ASCII, ignored).
    private func chunkSize(_ line: ArraySlice<UInt8>) -> Result<Int, HTTP1ParseError> {
        var size = 0
        var index = line.startIndex
        while index < line.endIndex, let digit = Self.hexValue(line[index]) {
            // The limit is far below Int.max / 16: no overflow, however many digits.
            size = size * 16 + digit
            if size > maxBodyBytes - body.count {
                let digits = String(
                    decoding: line[line.startIndex..<min(line.endIndex, line.startIndex + 24)], as: UTF8.self)
                return .failure(
                    HTTP1ParseError(
                        status: 413, "chunked body exceeds \(maxBodyBytes) bytes (chunk size 0x\(digits))"))
            }
            index += 1
        }
        guard index > line.startIndex else {
            let shown = String(decoding: line.prefix(24), as: UTF8.self)
            return .failure(HTTP1ParseError(status: 400, "chunk size '\(shown)' is not hexadecimal"))
        }
        var rest = line[index...]
        while let first = rest.first, first == 32 || first == 9 { rest = rest.dropFirst() }
        guard rest.isEmpty || rest.first == UInt8(ascii: ";") else {
            return .failure(
                HTTP1ParseError(status: 400, "chunk size is followed by something other than ';' and an extension"))
        }
        guard rest.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 < 127) }) else {
            return .failure(HTTP1ParseError(status: 400, "chunk extension has a control byte"))
        }
        return .success(size)
    }

    /// A trailer field checked as a header field (token name, `:`, no control byte).
    private static func trailerError(_ line: ArraySlice<UInt8>) -> HTTP1ParseError? {
        if let first = line.first, first == 32 || first == 9 {
            return HTTP1ParseError(status: 400, "obsolete line folding in the trailers is not accepted")
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
            return HTTP1ParseError(status: 400, "trailer line without ':'")
        }
        let name = line[line.startIndex..<colon]
        guard !name.isEmpty, name.allSatisfy(HTTP1RequestParser.isTokenByte) else {
            return HTTP1ParseError(status: 400, "trailer name is not an HTTP token")
        }
        guard line[(colon + 1)...].allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else {
            return HTTP1ParseError(status: 400, "trailer '\(String(decoding: name, as: UTF8.self))' has a control byte")
        }
        return nil
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }
}
