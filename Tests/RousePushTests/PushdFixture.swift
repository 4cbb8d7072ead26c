import Foundation
import RousePush
import RousePushCore
import RouseTestSupport
import Testing

/// `rouse mock-apns` and `rouse-pushd` as child processes (real TLS on loopback), a configuration with three
/// credentials (two token keys of two teams, one certificate), and a client of the service's Unix socket.
struct PushdFixture {
    static let bundle = "com.example.rouse"
    static let goneToken = "0a" + String(repeating: "11", count: 31)
    static let expiredToken = "0b" + String(repeating: "22", count: 31)
    static let voipOnlyToken = "0c" + String(repeating: "33", count: 31)
    static let goneSince: Int64 = 1_700_000_000_123

    /// The n-th distinct well-formed token, with a 2-hex-digit `tag` so fault rules can match it.
    static func token(_ n: Int, tag: String = "ab") -> String {
        String(format: "%08x", n) + String(repeating: tag, count: 28)
    }

    let directory: String
    let mock: RunningChild
    let mockPort: String
    let admin: String
    var pushd: RunningChild
    let socket: String
    let configPath: String
    let tcpAddress: String?
    let h2cAddress: String?
    let bearer = String(repeating: "b", count: 40)

    /// Starts the mock (with `faults` rules, if any) and the service; `edit` changes the configuration's JSON object.
    init(faults: String? = nil, edit: (inout [String: Any]) -> Void = { _ in }) async throws {
        var template = Array("/tmp/rouse-pushd-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ChildProcess.Failure(description: "mkdtemp failed") }
        directory = String(cString: made)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory)
        let dir = directory
        TestScope.current?.onEnd { try? FileManager.default.removeItem(atPath: dir) }
        let tokens = """
            {"tokens":[
              {"token":"\(Self.goneToken)","state":"unregistered","unregisteredAt":\(Self.goneSince)},
              {"token":"\(Self.expiredToken)","state":"expired"},
              {"token":"\(Self.voipOnlyToken)","topics":["\(Self.bundle).voip"]}
            ]}
            """
        try tokens.write(toFile: "\(directory)/tokens.json", atomically: true, encoding: .utf8)
        var arguments = [
            "mock-apns", "--listen", "127.0.0.1:0", "--cert", Repository.cert("server.pem"), "--key",
            Repository.cert("server.key"), "--client-ca", Repository.cert("ca.pem"), "--keys",
            Repository.cert("keys.json"), "--tokens", "\(directory)/tokens.json", "--admin", "127.0.0.1:0", "--json",
            "--log-level", "error",
        ]
        if let faults {
            try faults.write(toFile: "\(directory)/faults.json", atomically: true, encoding: .utf8)
            arguments += ["--faults", "\(directory)/faults.json"]
        }
        mock = try ChildProcess.start(try Products.path("rouse"), arguments, stdout: .lines)
        let startup = try #require(await mock.lines.first(timeout: .seconds(30)) { $0.contains("listening") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(startup.utf8)) as? [String: Any])
        let address = try #require(object["address"] as? String)
        mockPort = String(address.split(separator: ":").last ?? "")
        admin = try #require(object["admin"] as? String)
        try (bearer + "\n").write(toFile: "\(directory)/bearer", atomically: true, encoding: .utf8)
        var config: [String: Any] = [
            "unix": ["path": "\(directory)/api.sock", "mode": "0666"] as [String: Any],
            "tcp": ["address": "127.0.0.1:0", "bearerTokenFile": "\(directory)/bearer", "h2cAddress": "127.0.0.1:0"],
            "apps": [
                "rouse": Self.tokenApp(
                    port: mockPort, key: "apns-key.p8", keyID: "ROUSEKEY01", team: "ROUSETEAM1",
                    topic: Self.bundle, prune: "\(directory)/rouse.prune"),
                "other": Self.tokenApp(
                    port: mockPort, key: "apns-key-other-team.p8", keyID: "ROUSEKEY02",
                    team: "ROUSETEAM2", topic: "com.example.other", prune: nil),
                "cert": [
                    "topic": Self.bundle, "endpoint": "https://127.0.0.1:\(mockPort)",
                    "caFile": Repository.cert("ca.pem"),
                    "certFile": Repository.cert("provider.pem"), "certKeyFile": Repository.cert("provider.key"),
                ],
            ] as [String: Any],
        ]
        edit(&config)
        if var unix = config["unix"] as? [String: Any] {
            unix["path"] = "\(directory)/api.sock"
            config["unix"] = unix
        }
        configPath = "\(directory)/pushd.json"
        try Self.write(config, to: configPath)
        socket = "\(directory)/api.sock"
        pushd = try ChildProcess.start(
            try Products.path("rouse-pushd"), ["--config", configPath, "--log-level", "warning"], stdout: .lines,
            stderr: .file("\(directory)/pushd.log"))
        let ready = await pushd.lines.first(timeout: .seconds(30)) { $0.hasPrefix("rouse-pushd ready") }
        guard let ready else {
            let log = (try? String(contentsOfFile: "\(directory)/pushd.log", encoding: .utf8)) ?? ""
            throw ChildProcess.Failure(description: "rouse-pushd did not start: \(log)")
        }
        let tcp = ready.split(separator: " ").first { $0.hasPrefix("tcp=") }.map { String($0.dropFirst(4)) }
        tcpAddress = tcp == "none" ? nil : tcp
        let h2c = ready.split(separator: " ").first { $0.hasPrefix("h2c=") }.map { String($0.dropFirst(4)) }
        h2cAddress = h2c == "none" ? nil : h2c
    }

    static func tokenApp(port: String, key: String, keyID: String, team: String, topic: String, prune: String?)
        -> [String: Any]
    {
        var app: [String: Any] = [
            "topic": topic, "endpoint": "https://127.0.0.1:\(port)", "caFile": Repository.cert("ca.pem"),
            "keyFile": Repository.cert(key), "keyID": keyID, "teamID": team,
        ]
        if let prune { app["pruneFile"] = prune }
        return app
    }

    static func write(_ config: [String: Any], to path: String) throws {
        let data = try JSONSerialization.data(withJSONObject: config, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// A client of the service's socket.
    func client() -> PushServiceClient { PushServiceClient(socketPath: socket) }

    /// `rouse send` arguments that reach the mock directly with the `rouse` app's credential.
    var directArguments: [String] {
        [
            "--env", "https://127.0.0.1:\(mockPort)", "--ca-file", Repository.cert("ca.pem"), "--auth-key",
            Repository.cert("apns-key.p8"), "--key-id", "ROUSEKEY01", "--team-id", "ROUSETEAM1",
        ]
    }

    /// The mock's admin endpoint (h2c) answer for `path`.
    func adminGet(_ path: String) async throws -> String {
        try await ChildProcess.run("/usr/bin/curl", ["-s", "--http2-prior-knowledge", "http://\(admin)\(path)"]).stdout
    }

    /// Raw bytes to the socket, the raw answer back (until the service closes or `timeout`).
    func raw(_ bytes: [UInt8], readUntilClose: Bool = true) throws -> String {
        try RawSocket.exchange(path: socket, bytes)
    }

    /// Stops the service (SIGTERM) and the mock.
    func stop() async throws -> Int32 {
        pushd.terminate()
        let status = try await pushd.wait(timeout: .seconds(30))
        mock.terminate()
        _ = try? await mock.wait(timeout: .seconds(10))
        return status
    }
}
