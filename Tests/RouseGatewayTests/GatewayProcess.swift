import Foundation
import RouseGateway
import RouseTestSupport
import Synchronization

/// The built `rouse-gateway` executable run as a child process (crash-safety tests kill it with SIGKILL). It is
/// killed when the fixture goes away, so a test that fails before its `terminate()` leaves no gateway behind.
final class GatewayProcess: Sendable {
    let process: RunningChild
    let providerPort: UInt16
    let devicePort: UInt16
    let adminPort: UInt16?
    private let stderrPath: String

    /// Finds the executable next to the test bundle (or in the package's build directories).
    static func executable(_ name: String = "rouse-gateway") throws -> String {
        var candidates: [String] = []
        for argument in CommandLine.arguments.prefix(3) where argument.contains("/") {
            var url = URL(fileURLWithPath: argument).deletingLastPathComponent()
            candidates.append(url.appendingPathComponent(name).path)
            // Inside a .xctest bundle directory.
            url = url.deletingLastPathComponent()
            candidates.append(url.appendingPathComponent(name).path)
        }
        for argument in CommandLine.arguments where argument.hasSuffix(".xctest") {
            candidates.append(
                URL(fileURLWithPath: argument).deletingLastPathComponent().appendingPathComponent(name).path)
        }
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent(name).path)
        for scratch in [".build-gateway", ".build"] {
            candidates.append("\(Repository.root)/\(scratch)/debug/\(name)")
        }
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        throw FixtureError(
            "\(name) is not built (looked in \(candidates.joined(separator: ", "))): run "
                + "`swift build --build-tests` first, which builds every product")
    }

    /// Writes a configuration for `database` into `directory` and starts the gateway; returns once it printed
    /// its ready line (ports), or throws after `timeout`. `limits` go into the configuration's `limits` (heartbeats
    /// are off unless set there).
    static func start(
        directory: TemporaryDirectory, database: String, limits: [String: Int] = [:], node: String? = nil,
        timeout: Duration = .seconds(30)
    ) async throws -> GatewayProcess {
        let certs = Repository.root + "/certs"
        let limitsJSON = ["heartbeatSeconds": 0, "authenticationTimeoutSeconds": 600].merging(limits) { $1 }.sorted {
            $0.key < $1.key
        }
        .map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ")
        let config = """
            {"environment": "production",
             "provider": {"listen": "127.0.0.1:0", "certificate": "\(certs)/server.pem",
                          "privateKey": "\(certs)/server.key", "clientCA": "\(certs)/ca.pem",
                          "certificateTopics": ["com.example.rouse"]},
             "device": {"listen": "127.0.0.1:0", "certificate": "\(certs)/server.pem",
                        "privateKey": "\(certs)/server.key", "clientCA": "\(certs)/ca.pem"},
             "admin": {"listen": "127.0.0.1:0"},
             "database": "\(database)",
             "keys": [{"keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1", "publicKey": "\(certs)/apns-key.pub.pem",
                       "topics": ["com.example.rouse", "com.example.rouse.voip"]}],
             \(node.map { "\"node\": \"\($0)\"," } ?? "")
             "limits": {\(limitsJSON)}}
            """
        let configPath = directory.path + "/gateway.json"
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        let stderrPath = directory.path + "/gateway-\(UUID().uuidString).stderr"
        let process = try ChildProcess.start(
            try executable(), ["--config", configPath, "--log-level", "warning"], stdout: .lines,
            stderr: .file(stderrPath))
        let ready = await process.lines.first(timeout: timeout) { $0.hasPrefix("rouse-gateway ready") }
        guard let ready else {
            process.kill()
            let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            throw FixtureError("rouse-gateway did not get ready within \(timeout); stderr: \(log)")
        }
        func port(_ name: String) -> UInt16? {
            guard let field = ready.split(separator: " ").first(where: { $0.hasPrefix(name + "=") }),
                let colon = field.lastIndex(of: ":")
            else { return nil }
            return UInt16(field[field.index(after: colon)...])
        }
        guard let provider = port("provider"), let device = port("device") else {
            process.kill()
            throw FixtureError("unreadable ready line: \(ready)")
        }
        return GatewayProcess(
            process: process, providerPort: provider, devicePort: device, adminPort: port("admin"),
            stderrPath: stderrPath)
    }

    private init(
        process: RunningChild, providerPort: UInt16, devicePort: UInt16, adminPort: UInt16?, stderrPath: String
    ) {
        self.process = process
        self.providerPort = providerPort
        self.devicePort = devicePort
        self.adminPort = adminPort
        self.stderrPath = stderrPath
    }

    /// SIGKILL, then waits for the process to be gone.
    func kill() { process.kill() }

    /// SIGTERM (graceful drain), then waits; returns the exit status.
    func terminate() -> Int32 {
        process.terminate()
        process.waitUntilExit()
        return process.terminationStatus
    }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// The gateway's process id.
    var pid: pid_t { process.processIdentifier }
}
