import Foundation
import RouseChildProcess

/// `Tests/Interop/h2_attack.py` (Python h2) holding half-open streams against one port, and what the kernel shows
/// of the process under attack (sockets, wake-ups).
final class AttackClient: Sendable {
    /// One JSON phase line of the script: `holding`, `settled` or `done`, with its counts.
    struct Report: Sendable {
        let phase: String
        let connections: Int
        let streams: Int
        let bodyBytes: Int
        let resets: [String: Int]
        let goAways: [String: Int]
        let closedByPeer: Int
        let openStreams: Int

        init(line: String) throws {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let phase = object["phase"] as? String
            else { throw Bench.Failure(description: "h2_attack.py: not a phase line: \(line)") }
            func count(_ key: String) -> Int { (object[key] as? NSNumber)?.intValue ?? 0 }
            func counts(_ key: String) -> [String: Int] {
                ((object[key] as? [String: Any]) ?? [:]).compactMapValues { ($0 as? NSNumber)?.intValue }
            }
            self.phase = phase
            connections = count("connections")
            streams = count("streams")
            bodyBytes = count("body_bytes")
            resets = counts("rst")
            goAways = counts("goaway")
            closedByPeer = count("closed_by_peer")
            openStreams = count("open_streams")
        }

        /// `REFUSED_STREAM 99000, CANCEL 1000`.
        var resetSummary: String {
            resets.isEmpty
                ? "none" : resets.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }
    }

    private let child: RunningChild

    private init(child: RunningChild) { self.child = child }

    /// `connections` TLS connections to `port`, each with `streams` half-open requests to `path` and up to
    /// `bodyBytes` of body per stream.
    static func start(
        python: String, script: String, port: UInt16, path: String, connections: Int, streams: Int, bodyBytes: Int
    ) throws -> AttackClient {
        let child = try ChildProcess.start(
            python,
            [
                script, "--port", String(port), "--path", path, "--connections", String(connections), "--streams",
                String(streams), "--body-bytes", String(bodyBytes),
            ], stdout: .lines, stderr: .inherit)
        return AttackClient(child: child)
    }

    /// The phase line `name`, or a failure after `timeout`.
    func phase(_ name: String, timeout: Duration) async throws -> Report {
        guard let line = await child.lines.first(timeout: timeout, where: { $0.contains("\"phase\": \"\(name)\"") })
        else { throw Bench.Failure(description: "h2_attack.py: no '\(name)' within \(timeout)") }
        return try Report(line: line)
    }

    /// SIGTERM: the script reports, closes its connections and exits.
    func stop() async throws -> Report {
        child.terminate()
        let report = try await phase("done", timeout: .seconds(60))
        _ = try await child.wait(timeout: .seconds(60))
        return report
    }

    /// The interop venv's python (with h2), created by `deploy/interop-venv.sh` if it is not there yet.
    static func venvPython(repository: String) throws -> String {
        let output = try ChildProcess.runSync(
            "/bin/bash", [repository + "/deploy/interop-venv.sh", repository + "/.build/interop-venv"])
        guard output.status == 0, let python = output.stdout.split(separator: "\n").last.map(String.init) else {
            throw Bench.Failure(
                description: "deploy/interop-venv.sh failed (exit \(output.status)): \(output.stderr.suffix(1000)); "
                    + "or pass --python with a python that has h2")
        }
        return python
    }

    /// Open sockets of process `pid` (its listeners and connections).
    static func sockets(_ pid: Int32) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []
        return entries.count {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)"))?.hasPrefix("socket:")
                ?? false
        }
    }

    /// Waits (up to `timeout`) until process `pid` holds at most `count` sockets; the number it holds then.
    static func waitForSockets(_ pid: Int32, atMost count: Int, timeout: Duration) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        var now = sockets(pid)
        while now > count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            now = sockets(pid)
        }
        return now
    }

    /// Context switches (voluntary + involuntary) of each thread of `pid`, by thread id.
    private static func switchesByThread(_ pid: Int32) -> [String: Int] {
        var result: [String: Int] = [:]
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            // A thread may end between the listing and the read.
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            else { continue }
            result[task] = status.split(separator: "\n").filter { $0.contains("ctxt_switches:") }
                .compactMap { $0.split(separator: "\t").last.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } }
                .reduce(0, +)
        }
        return result
    }

    /// Wake-ups (context switches summed over threads) of `pid` over `window`, each thread sampled every 100 ms:
    /// a thread that ends takes its counts out of /proc with it.
    static func wakeUps(_ pid: Int32, over window: Duration) async throws -> Int {
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
