import Foundation
import RouseChildProcess
import RouseClock
import RouseSystem

/// Process and measurement helpers shared by the benchmarks.
enum Bench {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The directory of this executable (sibling products such as `rouse` live there).
    static var binDirectory: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().path
    }

    /// A sibling product, or a clear error telling how to build it.
    static func product(_ name: String) throws -> String {
        let path = "\(binDirectory)/\(name)"
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure(description: "\(path) not found: build it first (swift build -c release)")
        }
        return path
    }

    static func tool(_ path: String) throws -> String {
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw Failure(description: "\(path) not found: run deploy/install-deps.sh")
        }
        return path
    }

    /// CPU time (user+system) of a process so far.
    static func cpuSeconds(pid: Int32) -> Double {
        Double(ProcessProbe.cpuTicks(pid) ?? 0) / Double(ProcessProbe.ticksPerSecond)
    }

    /// A `VmHWM`/`VmRSS` figure of a process in KiB.
    static func memoryKiB(pid: Int32, field: String) -> Int { ProcessProbe.statusKiB(pid, field) ?? 0 }

    /// Runs a program to completion and returns its stdout.
    static func run(_ path: String, _ args: [String]) throws -> String {
        try ChildProcess.runSync(path, args).stdout
    }

    /// Starts a server process; waits until `port` accepts connections (deadline 10 s: it has no other readiness
    /// signal).
    static func startServer(_ path: String, _ args: [String], port: UInt16) throws -> RunningChild {
        let server = try ChildProcess.start(path, args)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if canConnect(port: port) { return server }
            usleep(20_000)
        }
        server.kill()
        throw Failure(description: "\(path) did not listen on port \(port) within 10 s")
    }

    static func stop(_ server: RunningChild) { server.kill() }

    static func canConnect(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// A port that was free a moment ago.
    static func freePort() -> UInt16 {
        (try? Sys.freeLoopbackPort()) ?? 0
    }

    /// The next argument as a `T` that satisfies `valid`, or a clear error naming the option.
    static func value<T: LosslessStringConvertible>(
        after option: String, from iterator: inout IndexingIterator<[String]>, _ requirement: String,
        where valid: (T) -> Bool = { _ in true }
    ) throws -> T {
        guard let value = iterator.next().flatMap(T.init), valid(value) else {
            throw Failure(description: "\(option) needs \(requirement)")
        }
        return value
    }

    /// The value after `--name` in `arguments`, if any.
    static func option(_ arguments: [String], _ name: String) -> String? {
        guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
        return arguments[i + 1]
    }
}

extension Duration {
    /// The duration in seconds, for figures.
    var seconds: Double { inSeconds }
}
