import Foundation
import Glibc
import RouseTestSupport
import Testing

/// Test fixtures for the curl client tests: the repository's certs/, free ports, a never-accepting
/// listener and an `nghttpd` child process.
enum CurlTestSupport {
    static let certsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("certs")

    static func certPath(_ name: String) -> String {
        certsDirectory.appendingPathComponent(name).path
    }

    /// A loopback TCP socket bound to an ephemeral port. With `listen`, it accepts handshakes into its
    /// backlog but never calls accept(): a local blackhole.
    final class LoopbackSocket {
        let fd: Int32
        let port: Int

        init(listen: Bool) throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw SupportError("socket: errno \(errno)") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            guard bound == 0, !listen || Glibc.listen(fd, 1) == 0 else {
                close(fd)
                throw SupportError("bind/listen: errno \(errno)")
            }
            let named = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            guard named == 0 else {
                close(fd)
                throw SupportError("getsockname: errno \(errno)")
            }
            self.fd = fd
            self.port = Int(UInt16(bigEndian: address.sin_port))
        }

        deinit {
            close(fd)
        }
    }

    struct SupportError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// True once a TCP connect to 127.0.0.1:`port` succeeds.
    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}

/// `nghttpd` (Debian package nghttp2-server) on 127.0.0.1 with a temporary document root.
final class NghttpdServer {
    static let binary = "/usr/sbin/nghttpd"

    let port: Int
    let docroot: URL
    private let process: RunningChild
    private let logFile: URL

    /// Starts nghttpd with `files` in its docroot and waits (connect attempts, deadline 10 s) until it
    /// listens. TLS uses certs/server.pem unless `tls` is false (h2c prior knowledge only).
    init(files: [String: Data], tls: Bool = true, extraArguments: [String] = []) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw CurlTestSupport.SupportError("\(Self.binary) missing: install the Debian package nghttp2-server")
        }
        docroot = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-nghttpd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: docroot, withIntermediateDirectories: true)
        for (name, data) in files {
            try data.write(to: docroot.appendingPathComponent(name))
        }
        logFile = docroot.appendingPathComponent(".nghttpd.log")

        // Reserve a free port, release it, hand it to nghttpd. Another test's connection can take that port as
        // its source port meanwhile: nghttpd then exits with "Address already in use", and a new port is tried.
        var attempt = 0
        while true {
            attempt += 1
            let candidatePort = try CurlTestSupport.LoopbackSocket(listen: false).port
            var arguments = ["--address=127.0.0.1", "--htdocs=\(docroot.path)"] + extraArguments
            if tls {
                arguments += [
                    String(candidatePort), CurlTestSupport.certPath("server.key"),
                    CurlTestSupport.certPath("server.pem"),
                ]
            } else {
                arguments += ["--no-tls", String(candidatePort)]
            }
            let candidate = try ChildProcess.start(Self.binary, arguments, stderr: .file(logFile.path))

            let deadline = ContinuousClock.now + .seconds(10)
            var failure: String?
            while !CurlTestSupport.canConnect(port: candidatePort) {
                guard candidate.isRunning else {
                    failure = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
                    break
                }
                guard ContinuousClock.now < deadline else {
                    candidate.kill()
                    try? FileManager.default.removeItem(at: docroot)
                    throw CurlTestSupport.SupportError("nghttpd did not listen on port \(candidatePort) within 10 s")
                }
                usleep(10_000)
            }
            guard let failure else {
                port = candidatePort
                process = candidate
                return
            }
            if failure.contains("Address already in use") && attempt < 5 { continue }
            try? FileManager.default.removeItem(at: docroot)
            throw CurlTestSupport.SupportError("nghttpd exited (status \(candidate.terminationStatus)): \(failure)")
        }
    }

    /// Kills nghttpd (SIGKILL: nothing of its state matters) and removes the docroot.
    func stop() {
        process.kill()
        try? FileManager.default.removeItem(at: docroot)
    }

    deinit {
        stop()
    }
}
