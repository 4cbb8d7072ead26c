import Foundation
import RouseAPNs
import RousePush
import RousePushCore
import RouseTestSupport
import Testing

/// rouse-pushd in front of a `rouse-gateway` (the APNs-compatible endpoint of Linux devices) next to the mock in one
/// configuration: a push to a device's token is stored by the gateway (`delivered`, with the gateway's apns-id), a
/// revoked token is rejected `Unregistered` with its revocation time, and both outcomes equal those of `rouse send`
/// sent straight to the gateway.
@Suite("rouse-pushd with a rouse-gateway endpoint", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(5)))
struct PushServiceGatewayTests {
    @Test("a mock and a rouse-gateway in one process: outcomes equal rouse send's straight to the gateway")
    func gatewayEndpoint() async throws {
        let rouse = try Products.path("rouse")
        var template = Array("/tmp/rouse-pushd-gateway-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw ChildProcess.Failure(description: "mkdtemp failed") }
        let directory = String(cString: made)
        TestScope.current?.onEnd { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/gateway.json"
        let initialized = try await ChildProcess.run(
            rouse,
            [
                "gateway", "init", "--hostname", "127.0.0.1", "--self-signed", "--config", config, "--database",
                directory + "/db/gateway.sqlite", "--tls-dir", directory + "/tls", "--provider-listen", "127.0.0.1:0",
                "--device-listen", "127.0.0.1:0", "--admin", "unix:" + directory + "/admin.sock",
            ])
        try #require(initialized.status == 0, "\(initialized.stderr)")
        let topic = PushdFixture.bundle
        let added = try await ChildProcess.run(
            rouse,
            [
                "gateway", "keys", "add", "--config", config, "--key-id", "ROUSEKEY01", "--team-id", "ROUSETEAM1",
                "--public-key", Repository.cert("apns-key.pub.pem"), "--topic", topic,
            ])
        try #require(added.status == 0, "\(added.stderr)")
        let gateway = try ChildProcess.start(
            try Products.path("rouse-gateway"), ["--config", config, "--log-level", "warning"], stdout: .lines,
            stderr: .file(directory + "/gateway.log"))
        defer { gateway.kill() }
        let ready = try #require(await gateway.lines.first(timeout: .seconds(30)) { $0.contains("ready") })
        let provider = try #require(Self.port(of: "provider", in: ready), "\(ready)")
        let device = try #require(Self.port(of: "device", in: ready), "\(ready)")
        let ca = directory + "/tls/server.pem"

        // A device enrolled with a one-time secret, and two tokens of it (one to be revoked), through the device API.
        let secret = try await ChildProcess.run(rouse, ["gateway", "devices", "enroll-secret", "--config", config])
        try #require(secret.status == 0, "\(secret.stderr)")
        let base = "https://127.0.0.1:\(device)/device/v1"
        let enrolled = try await Self.curl(
            ca, "POST", base + "/enroll",
            body: #"{"secret":"\#(secret.stdout.trimmingCharacters(in: .whitespacesAndNewlines))"}"#)
        let credential = try #require(enrolled["credential"] as? String, "\(enrolled)")
        let live = try #require(
            try await Self.curl(ca, "POST", base + "/tokens", body: #"{"topic":"\#(topic).voip"}"#, credential)["token"]
                as? String)
        let gone = try #require(
            try await Self.curl(ca, "POST", base + "/tokens", body: #"{"topic":"\#(topic)"}"#, credential)["token"]
                as? String)
        let revoked = try await Self.curl(ca, "DELETE", base + "/tokens/" + gone, body: nil, credential)
        let revokedAt = try #require(revoked["revokedAt"] as? Int, "\(revoked)")

        let fixture = try await PushdFixture { config in
            var apps = config["apps"] as? [String: Any] ?? [:]
            var linux = PushdFixture.tokenApp(
                port: provider, key: "apns-key.p8", keyID: "ROUSEKEY01", team: "ROUSETEAM1", topic: topic, prune: nil)
            linux["caFile"] = ca
            apps["linux"] = linux
            config["apps"] = apps
        }
        let direct = [
            "--env", "https://127.0.0.1:\(provider)", "--ca-file", ca, "--auth-key", Repository.cert("apns-key.p8"),
            "--key-id", "ROUSEKEY01", "--team-id", "ROUSETEAM1",
        ]
        for (name, push) in [
            ("stored for the device", ["voip", "--token", live]), ("revoked", ["background", "--token", gone]),
        ] {
            let common = push + ["--topic", topic, "--json", "--quiet"]
            let straight = try await PushServiceOutcomeTests.run(["send"] + common + direct)
            let via = try await PushServiceOutcomeTests.run(
                ["send"] + common + ["--via", fixture.socket, "--app", "linux"])
            let expected = try PushServiceOutcomeTests.essence(straight.line)
            #expect(
                expected == (try PushServiceOutcomeTests.essence(via.line)), "\(name): \(straight.line) vs \(via.line)")
            #expect(straight.status == via.status, "\(name): exit status")
        }
        // What the gateway answered, as the service reports it: stored with the gateway's id; revoked since then.
        let outcomes = try fixture.client().send([
            PushAPIRequest(app: "linux", token: live, type: .voip),
            PushAPIRequest(app: "linux", token: gone, type: .background),
            PushAPIRequest(app: "rouse", token: PushdFixture.token(1), type: .voip),
        ]).get()
        #expect(outcomes.map(\.kind) == [.delivered, .rejected, .delivered], "\(outcomes.map(\.json))")
        #expect(outcomes[1].reason == "Unregistered", "\(outcomes[1].json)")
        #expect(outcomes[1].json.contains("\(revokedAt)"), "\(outcomes[1].json)")
        // Three pushes for the live token (rouse send, --via, the batch) wait at the gateway for the device.
        let pending = try await Self.curl(ca, "GET", base + "/tokens", body: nil, credential)
        #expect((pending["tokens"] as? [Any])?.count == 1, "\(pending)")
        let metrics = try fixture.client().request("GET", "/metrics").text
        #expect(
            metrics.contains(#"rouse_pushd_pushes_total{app="linux",type="voip",outcome="delivered"} 2"#), "\(metrics)")
        #expect(try await fixture.stop() == 0)
    }

    /// The port in `name=host:port` of the gateway's ready line.
    static func port(of name: String, in line: String) -> String? {
        line.split(separator: " ").first { $0.hasPrefix(name + "=") }?.split(separator: ":").last.map(String.init)
    }

    /// One request to the gateway's device API with curl; its JSON answer.
    static func curl(_ ca: String, _ method: String, _ url: String, body: String?, _ credential: String? = nil)
        async throws -> [String: Any]
    {
        var arguments = ["-s", "--cacert", ca, "-X", method, url]
        if let credential { arguments += ["-H", "authorization: Bearer \(credential)"] }
        if let body { arguments += ["-H", "content-type: application/json", "--data-binary", body] }
        let out = try await ChildProcess.run("/usr/bin/curl", arguments, timeout: .seconds(30))
        let object = try? JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        return try #require(object, "\(method) \(url): \(out.stdout) \(out.stderr)")
    }
}
