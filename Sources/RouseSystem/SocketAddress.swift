import Glibc

/// An IPv4 or IPv6 socket address with a port, parsed from `host:port` or `[v6]:port`, or a Unix-domain socket
/// path, parsed from `unix:/path`.
public struct SocketAddress: Sendable, CustomStringConvertible {
    public var storage: sockaddr_storage
    public var length: socklen_t

    public init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    /// Why an address string could not be parsed.
    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public let input: String
        public let problem: String
        public var description: String { "bad address '\(input)': \(problem)" }
    }

    /// Parses `127.0.0.1:2197`, `[::1]:2197`, `localhost:2197` (localhost means 127.0.0.1), `unix:/run/x.sock`.
    public init(parsing text: String) throws(ParseError) {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst("unix:".count))
            guard let address = SocketAddress(unixPath: path) else {
                throw ParseError(input: text, problem: "a Unix socket path is absolute and at most 107 bytes")
            }
            self = address
            return
        }
        var host: Substring
        var portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw ParseError(input: text, problem: "missing ']'") }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw ParseError(input: text, problem: "missing ':port'") }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw ParseError(input: text, problem: "missing ':port'") }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            if host.contains(":") { throw ParseError(input: text, problem: "IPv6 addresses need brackets") }
        }
        guard let port = UInt16(portText) else { throw ParseError(input: text, problem: "port must be 0-65535") }
        if host == "localhost" { host = "127.0.0.1" }
        guard let address = SocketAddress(ip: String(host), port: port) else {
            throw ParseError(input: text, problem: "'\(host)' is not an IP address")
        }
        self = address
    }

    /// An address from a numeric IPv4 or IPv6 string; `nil` if it is neither.
    public init?(ip: String, port: UInt16) {
        var storage = sockaddr_storage()
        if ip.contains(":") {
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, ip, &sin6.sin6_addr) == 1 else { return nil }
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: sin6) { raw.copyMemory(from: $0) }
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        } else {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            guard inet_pton(AF_INET, ip, &sin.sin_addr) == 1 else { return nil }
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: sin) { raw.copyMemory(from: $0) }
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }

    /// A Unix-domain socket address; `nil` unless `path` is absolute (or `relative` is true) and fits `sun_path`.
    public init?(unixPath path: String, relative: Bool = false) {
        var sun = sockaddr_un()
        let capacity = MemoryLayout.size(ofValue: sun.sun_path)
        let bytes = Array(path.utf8)
        guard relative || bytes.first == UInt8(ascii: "/"), bytes.count < capacity, !bytes.contains(0) else {
            return nil
        }
        sun.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &sun.sun_path) { raw in raw.copyBytes(from: bytes) }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { raw in
            withUnsafeBytes(of: sun) { raw.copyMemory(from: $0) }
        }
        self.init(storage: storage, length: socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1))
    }

    public var family: Int32 { Int32(storage.ss_family) }

    /// The path of a Unix-domain address (`nil` for IP addresses and unnamed Unix peers).
    public var unixPath: String? {
        guard family == AF_UNIX else { return nil }
        let offset = MemoryLayout<sa_family_t>.size
        let count = max(Int(length) - offset, 0)
        let bytes = withUnsafeBytes(of: storage) { raw in Array(raw[offset..<min(offset + count, raw.count)]) }
        let path = bytes.prefix { $0 != 0 }
        return path.isEmpty ? nil : String(decoding: path, as: UTF8.self)
    }

    /// Whether the address is on this machine only: 127.0.0.0/8, ::1, or a Unix socket.
    public var isLocal: Bool {
        switch family {
        case AF_UNIX: return true
        case AF_INET6: return host == "::1"
        default: return host.hasPrefix("127.")
        }
    }

    /// The port in host byte order.
    public var port: UInt16 {
        guard family != AF_UNIX else { return 0 }
        return withUnsafeBytes(of: storage) { raw in
            // sin_port and sin6_port sit at the same offset.
            UInt16(bigEndian: raw.load(fromByteOffset: 2, as: UInt16.self))
        }
    }

    /// The numeric host (without port); `unix` for a Unix-domain address.
    public var host: String {
        if family == AF_UNIX { return "unix" }
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        withUnsafeBytes(of: storage) { raw in
            // sin6_addr at byte 8 of sockaddr_in6, sin_addr at byte 4 of sockaddr_in.
            if family == AF_INET6 {
                _ = inet_ntop(
                    AF_INET6, UnsafeRawBufferPointer(rebasing: raw[8...]).baseAddress, &buffer, socklen_t(buffer.count))
            } else {
                _ = inet_ntop(
                    AF_INET, UnsafeRawBufferPointer(rebasing: raw[4...]).baseAddress, &buffer, socklen_t(buffer.count))
            }
        }
        let end = buffer.firstIndex(of: 0) ?? buffer.endIndex
        return String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public var description: String {
        switch family {
        case AF_UNIX: return "unix:\(unixPath ?? "")"
        case AF_INET6: return "[\(host)]:\(port)"
        default: return "\(host):\(port)"
        }
    }
}
