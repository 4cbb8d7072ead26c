import Foundation
import RouseChildProcess

/// `rouse-gateway` as a child process of the benchmark (killed if the benchmark throws before `stop()`).
final class ChildGateway: Sendable {
    let process: RunningChild
    let providerPort: UInt16
    let devicePort: UInt16
    let adminPort: UInt16
    /// The WebPush listener's port, when the configuration has one (`webPush:` of `start`).
    let webPushPort: UInt16?

    private init(
        process: RunningChild, providerPort: UInt16, devicePort: UInt16, adminPort: UInt16, webPushPort: UInt16?
    ) {
        self.process = process
        self.providerPort = providerPort
        self.devicePort = devicePort
        self.adminPort = adminPort
        self.webPushPort = webPushPort
    }

    /// The benchmark's limits: no heartbeats, every push stored (quotas out of the way), many streams at once on
    /// a provider connection before its first token (h2load opens them all), and the per-address cap at the
    /// total (every channel of `--channels 10000` comes from 127.0.0.1; the default 1000 refused the rest).
    static let benchLimits = """
        {"heartbeatSeconds": 0, "oneStreamUntilToken": false, "maxConnectionsPerAddress": 20000,
         "maxPendingPushesPerToken": 1000000000, "maxPendingBytesPerToken": 1000000000000,
         "maxPendingPushesPerDevice": 1000000000, "maxPendingBytesPerDevice": 1000000000000}
        """

    /// Starts the gateway with `limits` (a JSON object: the configuration's `limits`) and `webPush` (the
    /// configuration's `webpush` object, if any) and waits for its ready line.
    static func start(
        executable: String, directory: String, database: String, certs: String, limits: String = benchLimits,
        name: String = "gateway", keyTopics: String = #"["com.example.rouse"]"#, node: String? = nil,
        webPush: String? = nil
    ) async throws -> ChildGateway {
        let config = """
            {"provider": {"listen": "127.0.0.1:0", "certificate": "\(certs)/server.pem", "privateKey": "\(certs)/server.key"},
             "device": {"listen": "127.0.0.1:0", "certificate": "\(certs)/server.pem", "privateKey": "\(certs)/server.key"},
             "admin": {"listen": "127.0.0.1:0"},
             "database": "\(database)",\(node.map { #" "node": "\#($0)","# } ?? "")\(webPush.map { #" "webpush": \#($0),"# } ?? "")
             "keys": [{"keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1", "publicKey": "\(certs)/apns-key.pub.pem",
                       "topics": \(keyTopics)}],
             "limits": \(limits)}
            """
        let path = directory + "/\(name).json"
        try Data(config.utf8).write(to: URL(fileURLWithPath: path))
        let process = try ChildProcess.start(
            executable, ["--config", path, "--log-level", "warning"], stdout: .lines, stderr: .inherit)
        // The ready line comes first on stdout.
        let text = await process.lines.first(timeout: .seconds(60)) { _ in true } ?? ""
        func port(_ name: String) -> UInt16? {
            guard
                let field = text.split(whereSeparator: { $0 == " " || $0 == "\n" }).first(where: {
                    $0.hasPrefix(name + "=")
                }),
                let colon = field.lastIndex(of: ":")
            else { return nil }
            return UInt16(field[field.index(after: colon)...])
        }
        guard let provider = port("provider"), let device = port("device"), let admin = port("admin") else {
            process.kill()
            throw GatewayBench.BenchError(description: "rouse-gateway did not start: \(text)")
        }
        return ChildGateway(
            process: process, providerPort: provider, devicePort: device, adminPort: admin,
            webPushPort: webPush == nil ? nil : port("webpush"))
    }

    /// Resident set size in KiB (`VmRSS`).
    func rssKiB() -> Int { ProcessProbe.statusKiB(process.processIdentifier, "VmRSS") ?? 0 }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}
