import Foundation
import Glibc
import Synchronization

/// A minimal HTTP CONNECT proxy on 127.0.0.1 for the curl client tests: one thread per tunnel, relaying
/// bytes with poll(2). It records every CONNECT target so tests can see traffic went through it.
final class ConnectProxy: Sendable {
    let port: Int
    private let listener: Int32
    private let targets = Mutex<[String]>([])

    /// CONNECT targets seen so far ("host:port").
    var connectTargets: [String] { targets.withLock { $0 } }

    init() throws {
        let socket = try CurlTestSupport.LoopbackSocket(listen: true)
        listener = dup(socket.fd)
        port = socket.port
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Stops accepting; tunnels in progress end when either side closes.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            Thread { [self] in serve(client) }.start()
        }
    }

    private func serve(_ client: Int32) {
        defer { close(client) }
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !request.ends(with: [13, 10, 13, 10]) && request.count < 16384 {
            let count = recv(client, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            request += buffer[0..<count]
        }
        let line = String(decoding: request.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        guard line.count >= 2, line[0] == "CONNECT", let colon = line[1].lastIndex(of: ":"),
            let targetPort = UInt16(line[1][line[1].index(after: colon)...])
        else {
            _ = send(client, "HTTP/1.1 400 Bad Request\r\n\r\n", 28, Int32(MSG_NOSIGNAL))
            return
        }
        targets.withLock { $0.append(String(line[1])) }
        // Tests only tunnel to loopback; whatever host name was asked for, connect to 127.0.0.1.
        let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard upstream >= 0 else { return }
        defer { close(upstream) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = targetPort.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            _ = send(client, "HTTP/1.1 502 Bad Gateway\r\n\r\n", 28, Int32(MSG_NOSIGNAL))
            return
        }
        let established = "HTTP/1.1 200 Connection established\r\n\r\n"
        _ = send(client, established, established.utf8.count, Int32(MSG_NOSIGNAL))
        relay(client, upstream)
    }

    private func relay(_ a: Int32, _ b: Int32) {
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            guard poll(&fds, 2, 30_000) > 0 else { return }
            for (index, entry) in fds.enumerated() where entry.revents != 0 {
                let from = entry.fd
                let to = index == 0 ? b : a
                let count = recv(from, &buffer, buffer.count, 0)
                guard count > 0 else { return }
                var sent = 0
                while sent < count {
                    let written = buffer[sent..<count].withUnsafeBytes {
                        send(to, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                    }
                    guard written > 0 else { return }
                    sent += written
                }
            }
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}

/// Accepts TCP connections on 127.0.0.1, reads what the client sends, then closes without answering: a
/// server that dies after receiving a request.
final class DropAfterReadServer: Sendable {
    let port: Int
    private let listener: Int32

    init() throws {
        let socket = try CurlTestSupport.LoopbackSocket(listen: true)
        listener = dup(socket.fd)
        port = socket.port
        Thread { [self] in run() }.start()
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit {
        close(listener)
    }

    private func run() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            // Read until the client falls silent for 200 ms (it has sent its request and waits), then close.
            var buffer = [UInt8](repeating: 0, count: 65536)
            var total = 0
            defer { _ = total }
            var fds = [pollfd(fd: client, events: Int16(POLLIN), revents: 0)]
            while poll(&fds, 1, 200) > 0 {
                let count = recv(client, &buffer, buffer.count, 0)
                if count <= 0 { break }
                total += count
            }
            close(client)
        }
    }
}
