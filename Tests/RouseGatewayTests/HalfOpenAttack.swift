import Foundation
import RouseHTTP2
import RouseTestSupport

/// `Tests/Interop/h2_attack.py` holding half-open streams against one port of the gateway: an HTTP/2 client
/// nobody here wrote (Python `h2`), sending each connection's streams in its first flight and body bytes as far
/// as the server's windows allow. It runs until ``stop()`` (or the test ends: killed with its process group).
final class HalfOpenAttack: Sendable {
    /// One of the script's JSON phase lines: what it sent and what the server answered so far.
    struct Report: Sendable, CustomStringConvertible {
        let phase: String
        let connections: Int
        let failed: Int
        let streams: Int
        let bodyBytes: Int
        /// RST_STREAM frames received, by error code name (`REFUSED_STREAM`, `CANCEL`, …).
        let resets: [String: Int]
        /// GOAWAY frames received, by error code name.
        let goAways: [String: Int]
        let closedByPeer: Int
        /// Streams neither reset nor closed by the server.
        let openStreams: Int
        let line: String

        var description: String { line }

        init(line: String) throws {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let phase = object["phase"] as? String
            else { throw FixtureError("h2_attack.py: not a phase line: \(line)") }
            func count(_ key: String) -> Int { (object[key] as? NSNumber)?.intValue ?? 0 }
            func counts(_ key: String) -> [String: Int] {
                ((object[key] as? [String: Any]) ?? [:]).compactMapValues { ($0 as? NSNumber)?.intValue }
            }
            self.phase = phase
            connections = count("connections")
            failed = count("failed")
            streams = count("streams")
            bodyBytes = count("body_bytes")
            resets = counts("rst")
            goAways = counts("goaway")
            closedByPeer = count("closed_by_peer")
            openStreams = count("open_streams")
            self.line = line
        }
    }

    private let child: RunningChild
    private let stderrPath: String

    private init(child: RunningChild, stderrPath: String) {
        self.child = child
        self.stderrPath = stderrPath
    }

    /// Starts the attack on `port`: `connections` TLS connections, each with `streams` requests to `path` whose
    /// HEADERS do not end the stream, and up to `bodyBytes` of body on each.
    static func start(
        port: UInt16, path: String, connections: Int, streams: Int, bodyBytes: Int = 65536,
        directory: TemporaryDirectory
    ) async throws -> HalfOpenAttack {
        let python = try await APNsClientLibraries.python()
        let stderrPath = directory.path + "/h2-attack-\(UUID().uuidString).stderr"
        let child = try ChildProcess.start(
            python,
            [
                Repository.root + "/Tests/Interop/h2_attack.py", "--port", String(port), "--path", path,
                "--connections", String(connections), "--streams", String(streams), "--body-bytes", String(bodyBytes),
            ], stdout: .lines, stderr: .file(stderrPath))
        return HalfOpenAttack(child: child, stderrPath: stderrPath)
    }

    /// Waits for the phase line `name` (`holding`: everything sent and a PING answered after it; `settled`: every
    /// stream reset or closed by the server).
    func phase(_ name: String, timeout: Duration) async throws -> Report {
        let line = await child.lines.first(timeout: timeout) { $0.contains("\"phase\": \"\(name)\"") }
        guard let line else {
            let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            throw FixtureError("h2_attack.py: no '\(name)' line within \(timeout); stderr: \(log.suffix(2000))")
        }
        return try Report(line: line)
    }

    /// Ends the attack (SIGTERM): the script reports and closes its connections.
    func stop() async throws -> Report {
        child.terminate()
        let report = try await phase("done", timeout: .seconds(20))
        _ = try await child.wait(timeout: .seconds(20))
        return report
    }
}

/// What the kernel shows of a running process (the gateway): memory, descriptors, wake-ups.
enum ProcessProbe {
    /// A `kB` field of /proc/PID/status (`VmRSS`, `VmHWM`), in KiB.
    static func statusKiB(_ pid: pid_t, _ field: String) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field + ":") }),
            let value = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { throw FixtureError("no \(field) in /proc/\(pid)/status") }
        return value
    }

    /// Open sockets of the process (listeners and connections; files such as SQLite's are opened lazily).
    static func sockets(_ pid: pid_t) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?.hasPrefix("socket:")
                ?? false
        }
    }

    /// Context switches (voluntary + involuntary) of each thread, by thread id: each is one wake-up of a thread
    /// that slept, or a preemption.
    private static func switchesByThread(_ pid: pid_t) -> [String: Int] {
        var result: [String: Int] = [:]
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            // A thread may end between the listing and the read.
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            else { continue }
            result[task] = status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
                .compactMap { $0.split(separator: "\t").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
                .reduce(0, +)
        }
        return result
    }

    /// Wake-ups of all the process's threads over `window`. Threads come and go (the dispatch pool), and an ended
    /// thread's counts leave /proc with it, so each thread's count is sampled every 100 ms and its growth summed.
    static func wakeUps(_ pid: pid_t, over window: Duration) async throws -> Int {
        let first = switchesByThread(pid)
        var last = first
        let end = ContinuousClock.now + window
        while ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(100))
            last.merge(switchesByThread(pid)) { $1 }
        }
        return last.reduce(0) { $0 + $1.value - (first[$1.key] ?? 0) }
    }
}
