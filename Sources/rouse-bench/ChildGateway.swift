import Foundation

/// `rouse-gateway` as a child process of the benchmark.
final class ChildGateway: Sendable {
    let process: Process
    let providerPort: UInt16
    let devicePort: UInt16
    let adminPort: UInt16

    private init(process: Process, providerPort: UInt16, devicePort: UInt16, adminPort: UInt16) {
        self.process = process
        self.providerPort = providerPort
        self.devicePort = devicePort
        self.adminPort = adminPort
    }

    static func start(executable: String, directory: String, database: String, certs: String) async throws
        -> ChildGateway
    {
        let config = """
            {"provider": {"listen": "127.0.0.1:0", "certificate": "\(certs)/server.pem", "privateKey": "\(certs)/server.key"},
             "device": {"listen": "127.0.0.1:0", "certificate": "\(certs)/server.pem", "privateKey": "\(certs)/server.key"},
             "admin": {"listen": "127.0.0.1:0"},
             "database": "\(database)",
             "keys": [{"keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1", "publicKey": "\(certs)/apns-key.pub.pem",
                       "topics": ["com.example.rouse"]}],
             "limits": {"heartbeatSeconds": 0, "oneStreamUntilToken": false,
                        "maxPendingPushesPerToken": 1000000000, "maxPendingBytesPerToken": 1000000000000,
                        "maxPendingPushesPerDevice": 1000000000, "maxPendingBytesPerDevice": 1000000000000}}
            """
        let path = directory + "/gateway.json"
        try Data(config.utf8).write(to: URL(fileURLWithPath: path))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["--config", path, "--log-level", "warning"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        // The ready line comes first on stdout.
        var text = ""
        let handle = pipe.fileHandleForReading
        while !text.contains("\n") {
            let data = handle.availableData
            if data.isEmpty { break }
            text += String(decoding: data, as: UTF8.self)
        }
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
            process.terminate()
            throw GatewayBench.BenchError(description: "rouse-gateway did not start: \(text)")
        }
        return ChildGateway(process: process, providerPort: provider, devicePort: device, adminPort: admin)
    }

    /// Resident set size in KiB (`VmRSS`).
    func rssKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}
