import Foundation
import RouseGateway
import RouseTestSupport
import RouseWire
import Testing

private typealias Libraries = APNsClientLibraries

private let tokenAuth = Libraries.Auth.token(
    keyFile: Repository.cert("apns-key.p8"), keyID: "ROUSEKEY01", teamID: "ROUSETEAM1")

private let streamLimits = NghttpOutput.streamLimits

/// rouse-gateway's provider API driven by APNs client libraries nobody here wrote, with the push seen on a device
/// channel; and the connection rules an APNs client meets from the first byte.
@Suite(
    "Gateway with real APNs client libraries (aioapns, kalyke-apns, pyapns-client, apns2-up)", .timeLimit(.minutes(5)))
struct ClientLibraryTests {
    @Test("a token-auth VoIP push reaches the device channel", arguments: Libraries.Library.allCases)
    func tokenVoIP(library: APNsClientLibraries.Library) async throws {
        let h = try await Harness.start()
        let voipToken = try await h.device.token(topic: GatewayFixture.voipTopic)
        let channel = try await h.channel()
        let outcome = try await Libraries.push(
            library: library, port: h.gateway.providerPort, auth: tokenAuth, topic: GatewayFixture.voipTopic,
            deviceToken: voipToken, payload: #"{"aps":{},"caller":"Alice"}"#)
        #expect(outcome.accepted(status: 200), "\(outcome)")
        let push = try await channel.nextPush()
        #expect(push.token == voipToken)
        #expect(push.pushType == "voip")
        if library.surfacesAPNsID { #expect(push.apnsID.lowercased() == outcome.apnsID?.lowercased()) }
        let payload = try #require(Data(base64Encoded: push.payload))
        let object = try JSONSerialization.jsonObject(with: payload) as? [String: Any]
        #expect(object?["caller"] as? String == "Alice")
        channel.close()
        await h.stop()
    }

    @Test(
        "a certificate-auth VoIP push reaches the device channel",
        arguments: APNsClientLibraries.Library.allCases.filter { $0.supportsCertificate })
    func certificateVoIP(library: APNsClientLibraries.Library) async throws {
        let h = try await Harness.start()
        let voipToken = try await h.device.token(topic: GatewayFixture.voipTopic)
        let channel = try await h.channel()
        let outcome = try await Libraries.push(
            library: library, port: h.gateway.providerPort,
            auth: .certificate(
                certificateFile: Repository.cert("provider.pem"), keyFile: Repository.cert("provider.key")),
            topic: GatewayFixture.voipTopic, deviceToken: voipToken)
        #expect(outcome.unsupported == nil, "\(library) supports certificate auth: \(outcome)")
        #expect(outcome.accepted(status: 200), "\(outcome)")
        let push = try await channel.nextPush()
        #expect(push.token == voipToken)
        channel.close()
        await h.stop()
    }

    @Test(
        "a push sent with a lifetime of 0 (aioapns: apns-expiration = this second) reaches the open channel at once",
        arguments: Libraries.Library.allCases)
    func timeToLiveZero(library: APNsClientLibraries.Library) async throws {
        let h = try await Harness.start()
        let voipToken = try await h.device.token(topic: GatewayFixture.voipTopic)
        let channel = try await h.channel()
        let outcome = try await Libraries.push(
            library: library, port: h.gateway.providerPort, auth: tokenAuth, topic: GatewayFixture.voipTopic,
            deviceToken: voipToken, payload: #"{"aps":{},"caller":"Bob"}"#, timeToLive: 0)
        #expect(outcome.accepted(status: 200), "\(outcome)")
        // Before: answered 200 and dropped untried (aioapns sends the current second, already past on arrival).
        let push = try await channel.nextPush(timeout: .seconds(10))
        let payload = try #require(Data(base64Encoded: push.payload))
        let object = try JSONSerialization.jsonObject(with: payload) as? [String: Any]
        #expect(object?["caller"] as? String == "Bob")
        channel.close()
        await h.stop()
    }

    @Test("rejections surface with Apple's reason, and 410 with its timestamp", arguments: Libraries.Library.allCases)
    func rejections(library: APNsClientLibraries.Library) async throws {
        let h = try await Harness.start()
        let port = h.gateway.providerPort
        let voipToken = try await h.device.token(topic: GatewayFixture.voipTopic)
        let (status, json) = try await h.device.call("DELETE", "/device/v1/tokens/\(voipToken)")
        #expect(status == 200)
        let revokedAt = (json["revokedAt"] as? NSNumber)?.int64Value
        let badToken = try await Libraries.push(
            library: library, port: port, auth: tokenAuth, topic: GatewayFixture.voipTopic,
            deviceToken: "0b" + String(repeating: "ad", count: 31))
        let gone = try await Libraries.push(
            library: library, port: port, auth: tokenAuth, topic: GatewayFixture.voipTopic, deviceToken: voipToken)
        let otherTopic = try await Libraries.push(
            library: library, port: port, auth: tokenAuth, topic: "com.example.other.voip", deviceToken: h.token)
        await h.stop()
        #expect(badToken.rejected("BadDeviceToken", status: 400), "\(badToken)")
        #expect(gone.rejected("Unregistered", status: 410), "\(gone)")
        #expect(gone.timestamp != nil && gone.timestamp == revokedAt, "\(gone)")
        #expect(otherTopic.rejected("TopicDisallowed", status: 400), "\(otherTopic)")
    }

    @Test("curl, nghttp and h2load push with token auth; the pushes reach the device channel; a rejection's reason")
    func commandLineClients() async throws {
        let h = try await Harness.start()
        let voipToken = try await h.device.token(topic: GatewayFixture.voipTopic)
        let channel = try await h.channel()
        let port = h.gateway.providerPort
        let body = h.directory.path + "/body.json"
        try Data(#"{"aps":{}}"#.utf8).write(to: URL(fileURLWithPath: body))
        let headers = [
            "authorization: bearer \(h.provider.jwt)", "apns-push-type: voip",
            "apns-topic: \(GatewayFixture.voipTopic)",
        ]
        let url = "https://localhost:\(port)/3/device/\(voipToken)"
        let curl = try await ChildProcess.run(
            "/usr/bin/curl",
            ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--http2", "--cacert", Repository.cert("ca.pem")]
                + headers.flatMap { ["-H", $0] } + ["--data-binary", "@\(body)", url])
        let rejected = try await ChildProcess.run(
            "/usr/bin/curl",
            ["-sS", "--http2", "--cacert", Repository.cert("ca.pem")] + headers.flatMap { ["-H", $0] }
                + ["--data-binary", "@\(body)", "https://localhost:\(port)/3/device/0bad"])
        let nghttp = try await ChildProcess.run(
            "/usr/bin/nghttp", ["-d", body] + headers.flatMap { ["-H", $0] } + [url], timeout: .seconds(30))
        let h2load = try await ChildProcess.run(
            "/usr/bin/h2load",
            ["-n", "20", "-c", "1", "-m", "1", "-d", body] + headers.flatMap { ["-H", $0] } + [url],
            timeout: .seconds(30))
        #expect(curl.stdout == "200", "\(curl.stdout) \(curl.stderr)")
        #expect(rejected.stdout == #"{"reason":"BadDeviceToken"}"#, "\(rejected.stdout)")
        #expect(nghttp.status == 0, "\(nghttp.stderr)")
        #expect(h2load.stdout.contains("status codes: 20 2xx"), "\(h2load.stdout)")
        var seen = 0
        for _ in 0..<22 where (try? await channel.nextPush())?.token == voipToken { seen += 1 }
        #expect(seen == 22, "curl 1 + nghttp 1 + h2load 20 pushes on the device channel")
        channel.close()
        await h.stop()
    }

    @Test("the provider port's first SETTINGS allow one stream until a valid token, then the configured limit")
    func firstSettings() async throws {
        let h = try await Harness.start()
        let voipToken = try await h.device.token(topic: GatewayFixture.voipTopic)
        let body = h.directory.path + "/body.json"
        try Data(#"{"aps":{}}"#.utf8).write(to: URL(fileURLWithPath: body))
        let out = try await ChildProcess.run(
            "/usr/bin/nghttp",
            [
                "-v", "-M", "1", "-d", body, "-H", "apns-push-type: voip", "-H",
                "apns-topic: \(GatewayFixture.voipTopic)", "-H", "authorization: bearer \(h.provider.jwt)",
                "https://127.0.0.1:\(h.gateway.providerPort)/3/device/\(voipToken)",
            ], timeout: .seconds(30))
        await h.stop()
        let text = out.stdout + out.stderr
        #expect(text.contains(":status: 200"), "\(text)")
        #expect(streamLimits(text) == [1, 1000], "\(text)")
    }

    @Test(
        "TLS without ALPN is served as HTTP/2 on the provider and the device port", arguments: ["provider", "device"])
    func noALPN(port which: String) async throws {
        let h = try await Harness.start()
        let port = which == "provider" ? h.gateway.providerPort : h.gateway.devicePort
        var arguments = ["-sS", "-i", "--http2-prior-knowledge", "--no-alpn", "--cacert", Repository.cert("ca.pem")]
        if which == "provider" {
            arguments += [
                "-H", "authorization: bearer \(h.provider.jwt)", "-H", "apns-push-type: alert", "-H",
                "apns-topic: \(GatewayFixture.bundleID)", "-d", #"{"aps":{"alert":"hi"}}"#,
                "https://localhost:\(port)/3/device/\(h.token)",
            ]
        } else {
            arguments += ["https://localhost:\(port)/device/v1/channel"]
        }
        let out = try await ChildProcess.run("/usr/bin/curl", arguments)
        let refused = try await ChildProcess.run(
            "/usr/bin/curl",
            ["-sS", "--http1.1", "--cacert", Repository.cert("ca.pem"), "https://localhost:\(port)/device/v1/channel"])
        await h.stop()
        #expect(out.status == 0, "\(out.stderr)")
        // The provider push is accepted; the device port answers the credential-less request with 401.
        #expect(out.stdout.hasPrefix(which == "provider" ? "HTTP/2 200" : "HTTP/2 401"), "\(out.stdout)")
        #expect(refused.status == 35 && refused.stderr.contains("no application protocol"), "\(refused.stderr)")
    }
}
