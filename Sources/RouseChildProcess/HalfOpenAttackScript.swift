import Foundation

/// `Tests/Interop/h2_attack.py` (Python `h2`, an HTTP/2 client nobody here wrote) holding half-open streams against
/// one port: each connection's streams sent in its first flight, body bytes as far as the server's windows allow,
/// held until ``stop(timeout:)``. The attack tests and `rouse-bench gateway --attack` both drive it.
package final class HalfOpenAttackScript: Sendable {
    /// One of the script's JSON phase lines (`holding`: everything sent and a PING answered after it; `settled`:
    /// every stream reset or closed by the server; `done`): what it sent and what the server answered so far.
    package struct Report: Sendable, CustomStringConvertible {
        package let phase: String
        package let connections: Int
        package let failed: Int
        package let streams: Int
        package let bodyBytes: Int
        /// RST_STREAM frames received, by error code name (`REFUSED_STREAM`, `CANCEL`, …).
        package let resets: [String: Int]
        /// GOAWAY frames received, by error code name.
        package let goAways: [String: Int]
        package let closedByPeer: Int
        /// Streams neither reset nor closed by the server.
        package let openStreams: Int
        package let line: String

        package var description: String { line }

        /// `REFUSED_STREAM 99000, CANCEL 1000`.
        package var resetSummary: String {
            resets.isEmpty
                ? "none" : resets.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        }

        init(line: String) throws {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let phase = object["phase"] as? String
            else { throw ChildProcess.Failure(description: "h2_attack.py: not a phase line: \(line)") }
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
    private let stderrPath: String?

    private init(child: RunningChild, stderrPath: String?) {
        self.child = child
        self.stderrPath = stderrPath
    }

    /// Starts the script with `python` (which has `h2`): `connections` TLS connections to `port`, each with `streams`
    /// requests to `path` whose HEADERS do not end the stream, and up to `bodyBytes` of body on each. The script's
    /// stderr goes to `stderrPath` (shown when a phase does not come) or, without one, to ours.
    package static func start(
        python: String, script: String, port: UInt16, path: String, connections: Int, streams: Int, bodyBytes: Int,
        stderrPath: String? = nil
    ) throws -> HalfOpenAttackScript {
        let child = try ChildProcess.start(
            python,
            [
                script, "--port", String(port), "--path", path, "--connections", String(connections), "--streams",
                String(streams), "--body-bytes", String(bodyBytes),
            ], stdout: .lines, stderr: stderrPath.map { .file($0) } ?? .inherit)
        return HalfOpenAttackScript(child: child, stderrPath: stderrPath)
    }

    /// Waits for the phase line `name`, or fails after `timeout` (with the script's stderr when it has a file).
    package func phase(_ name: String, timeout: Duration) async throws -> Report {
        guard let line = await child.lines.first(timeout: timeout, where: { $0.contains("\"phase\": \"\(name)\"") })
        else {
            let log = stderrPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
            throw ChildProcess.Failure(
                description: "h2_attack.py: no '\(name)' line within \(timeout)"
                    + (log.isEmpty ? "" : "; stderr: \(log.suffix(2000))"))
        }
        return try Report(line: line)
    }

    /// Ends the attack (SIGTERM): the script reports, closes its connections and exits.
    package func stop(timeout: Duration = .seconds(60)) async throws -> Report {
        child.terminate()
        let report = try await phase("done", timeout: timeout)
        _ = try await child.wait(timeout: timeout)
        return report
    }
}
