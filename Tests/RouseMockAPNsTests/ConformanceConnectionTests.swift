import Foundation
import RouseAPNs
import RouseCurl
import RouseMockAPNs
import RouseTestSupport
import Testing

private typealias C = ConformanceFixture

/// `nghttp -v` with the fixture's headers, POSTing to each device token in order (each `multiply` times), on one
/// connection. `-M 1`: like a careful APNs client, nghttp assumes one stream until the server's SETTINGS says more.
private func nghttp(
    _ fixture: C, tokens: [String], multiply: Int = 1, topic: String = "\(C.bundle).voip", bearer: String? = nil
) async throws -> String {
    let body = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-nghttp-\(UUID())")
    try Data(#"{"aps":{}}"#.utf8).write(to: body)
    defer { try? FileManager.default.removeItem(at: body) }
    var args = ["-v", "-M", "1", "-m", String(multiply), "-d", body.path]
    args += ["-H", "apns-push-type: voip", "-H", "apns-topic: \(topic)"]
    args += ["-H", "authorization: \(bearer ?? fixture.bearer)"]
    args += tokens.map { "\(fixture.url)/3/device/\($0)" }
    let out = try await ChildProcess.run("/usr/bin/nghttp", args, timeout: .seconds(30))
    return out.stdout + out.stderr
}

private let streamLimits = NghttpOutput.streamLimits

@Suite("Conformance: connection rules, certificates, faults", .timeLimit(.minutes(2)))
struct ConformanceConnectionTests {
    @Test("one stream until a valid provider token from the first SETTINGS frame, then 1000 (seen by nghttp)")
    func oneStreamUntilValidToken() async throws {
        let fixture = try C()
        let out = try await nghttp(fixture, tokens: [C.voipToken])
        await fixture.shutdown()
        #expect(out.contains(":status: 200"))
        #expect(streamLimits(out) == [1, 1000])
    }

    @Test("stream limit drops to 1 after a rejected push and comes back after an accepted one")
    func streamLimitDrop() async throws {
        let fixture = try C()
        // accepted, rejected (DeviceTokenNotForTopic), accepted — serialised by the 1-stream start.
        let out = try await nghttp(fixture, tokens: [C.voipToken, C.alertToken, C.voipToken2])
        await fixture.shutdown()
        #expect(streamLimits(out) == [1, 1000, 1, 1000])
    }

    @Test("the drop can be switched off")
    func streamLimitDropOff() async throws {
        let fixture = try C { $0.dropStreamLimitAfterRejection = false }
        let out = try await nghttp(fixture, tokens: [C.voipToken, C.alertToken, C.voipToken2])
        await fixture.shutdown()
        #expect(streamLimits(out) == [1, 1000])
    }

    @Test("a new token within 20 minutes on one connection: 429 TooManyProviderTokenUpdates")
    func tokenUpdateRate() async throws {
        let fixture = try C()
        let client = try CurlHTTPClient()
        let first = try await client.send(fixture.voipRequest())
        let second = try await client.send(
            fixture.voipRequest { h, _ in
                h.set("authorization", "bearer " + C.jwt(issuedAt: .now().adding(seconds: -5)))
            })
        await client.shutdown()
        await fixture.shutdown()
        #expect(first.status == 200)
        #expect(second.status == 429)
        #expect(second.reason == "TooManyProviderTokenUpdates")
        #expect(first.connection.localPort == second.connection.localPort, "same connection")
    }

    @Test("the team is bound to the connection on the first push")
    func teamBinding() async throws {
        let fixture = try C()
        let client = try CurlHTTPClient()
        let first = try await client.send(fixture.voipRequest())
        let otherKey = try ProviderToken.privateKey(
            pem: String(contentsOfFile: Repository.cert("apns-key-other-team.p8"), encoding: .utf8))
        let other = try await client.send(
            fixture.voipRequest { h, _ in
                h.set(
                    "authorization",
                    "bearer " + C.jwt(otherKey, keyID: "ROUSEKEY02", teamID: "ROUSETEAM2", issuedAt: .now()))
                h.set("apns-topic", "com.example.other.voip")
            })
        await client.shutdown()
        await fixture.shutdown()
        #expect(first.status == 200)
        // "APNs doesn't support authentication tokens from multiple developer accounts over a single connection."
        #expect(other.status == 403)
        #expect(other.reason == "InvalidProviderToken")
    }

    @Test("a topic-specific key after a team key: 403 UnrelatedKeyIdInToken")
    func unrelatedKey() async throws {
        let fixture = try C()
        let client = try CurlHTTPClient()
        _ = try await client.send(fixture.voipRequest())
        let response = try await client.send(
            fixture.voipRequest { h, _ in h.set("authorization", "bearer " + C.jwt(C.topicKey, keyID: "ROUSETOPIC")) })
        await client.shutdown()
        await fixture.shutdown()
        #expect(response.status == 403)
        #expect(response.reason == "UnrelatedKeyIdInToken")
    }

    // MARK: certificates

    struct CertificateCase: Sendable, CustomTestStringConvertible {
        var file: String
        var status: Int
        var reason: String?
        var testDescription: String { "\(file) → \(status) \(reason ?? "")" }
    }

    @Test(
        "certificate connections: topics and environment from the certificate",
        arguments: [
            CertificateCase(file: "provider", status: 200, reason: nil),
            CertificateCase(file: "provider-sandbox", status: 200, reason: nil),
            CertificateCase(file: "provider-production", status: 403, reason: "BadCertificateEnvironment"),
            CertificateCase(file: "provider-expired", status: 403, reason: "BadCertificate"),
            CertificateCase(file: "provider-unknown-ca", status: 403, reason: "BadCertificate"),
        ])
    func certificates(_ testCase: CertificateCase) async throws {
        let fixture = try C()
        let client = try CurlHTTPClient()
        let response = try await client.send(
            fixture.voipRequest { h, r in
                h.set("authorization", nil)
                r.tls.clientCertificate = .pem(
                    certificateFile: Repository.cert("\(testCase.file).pem"),
                    keyFile: Repository.cert("\(testCase.file).key"))
            })
        await client.shutdown()
        await fixture.shutdown()
        #expect(response.status == testCase.status)
        #expect(response.reason == testCase.reason)
    }

    @Test("certificate connections: a topic outside the certificate, and a missing topic with a multi-topic cert")
    func certificateTopics() async throws {
        let fixture = try C()
        let client = try CurlHTTPClient()
        func send(_ topic: String?) async throws -> CurlResponse {
            try await client.send(
                fixture.voipRequest { h, r in
                    h.set("authorization", nil)
                    h.set("apns-topic", topic)
                    r.tls.clientCertificate = .pkcs12(file: Repository.cert("provider.p12"), password: "rouse-test")
                })
        }
        let other = try await send("com.example.other.voip")
        let missing = try await send(nil)
        await client.shutdown()
        await fixture.shutdown()
        #expect(other.status == 400 && other.reason == "TopicDisallowed")
        #expect(missing.status == 400 && missing.reason == "MissingTopic")
    }

    // MARK: faults, seen from the client side

    func withFaults(_ script: String) throws -> ConformanceFixture {
        let fixture = try C()
        for rule in try MockFaultScript.parse(json: Array(script.utf8)) { fixture.mock.addFault(rule) }
        return fixture
    }

    @Test("GOAWAY with a JSON reason and last-stream-id 0 on the first request (nghttp sees it)")
    func goAwayFirstRequest() async throws {
        let fixture = try withFaults(
            #"{"faults":[{"match":{"nth":1},"action":{"goAway":{"lastStreamID":0,"reason":"BadCertificateEnvironment"}}}]}"#
        )
        let out = try await nghttp(fixture, tokens: [C.voipToken])
        await fixture.shutdown()
        #expect(out.contains("recv GOAWAY frame"))
        #expect(out.contains("last_stream_id=0"))
        #expect(out.contains(#"{"reason":"BadCertificateEnvironment"}"#))
        #expect(fixture.mock.statistics().accepted == 0)
    }

    @Test("GOAWAY Shutdown mid-burst: earlier streams answered, later ones not processed")
    func goAwayMidBurst() async throws {
        let fixture = try withFaults(#"{"faults":[{"match":{"nth":3},"action":{"shutdown":{}}}]}"#)
        let out = try await nghttp(fixture, tokens: [C.voipToken], multiply: 6)
        await fixture.shutdown()
        #expect(out.contains(#"{"reason":"Shutdown"}"#))
        let statistics = fixture.mock.statistics()
        #expect(statistics.accepted == 3, "\(statistics)")
        #expect(out.components(separatedBy: ":status: 200").count - 1 == 3)
    }

    @Test("REFUSED_STREAM on demand")
    func refusedStream() async throws {
        let fixture = try withFaults(#"{"faults":[{"match":{"nth":1},"action":{"refusedStream":{}}}]}"#)
        let out = try await nghttp(fixture, tokens: [C.voipToken])
        await fixture.shutdown()
        #expect(out.contains("error_code=REFUSED_STREAM(0x07)"))
    }

    @Test("TCP reset: libcurl sees the connection die, processing unknown")
    func tcpReset() async throws {
        let fixture = try withFaults(#"{"faults":[{"match":{"nth":1},"action":{"tcpReset":{}}}]}"#)
        let client = try CurlHTTPClient()
        await #expect(throws: CurlError.self) { _ = try await client.send(fixture.voipRequest()) }
        await client.shutdown()
        await fixture.shutdown()
    }

    @Test("blackhole: no answer, not even to PING; the client's deadline fires")
    func blackhole() async throws {
        let fixture = try withFaults(#"{"faults":[{"match":{"nth":1},"action":{"blackhole":{}}}]}"#)
        let client = try CurlHTTPClient()
        let started = ContinuousClock.now
        do {
            _ = try await client.send(fixture.voipRequest { _, r in r.timeout = .milliseconds(500) })
            Issue.record("a blackholed request must not be answered")
        } catch let error as CurlError {
            #expect(error.isTimeout)
        }
        #expect(ContinuousClock.now - started >= .milliseconds(450))
        await client.shutdown()
        await fixture.shutdown()
    }

    @Test("added latency delays the answer")
    func latency() async throws {
        let fixture = try withFaults(#"{"faults":[{"match":{"nth":1},"action":{"latency":{"ms":300}}}]}"#)
        let client = try CurlHTTPClient()
        let started = ContinuousClock.now
        let response = try await client.send(fixture.voipRequest())
        let elapsed = ContinuousClock.now - started
        await client.shutdown()
        await fixture.shutdown()
        #expect(response.status == 200)
        #expect(elapsed >= .milliseconds(300))
    }

    @Test("idle connections get GOAWAY IdleTimeout")
    func idleTimeout() async throws {
        var options = MockAPNsServer.Options()
        options.idleTimeout = .milliseconds(200)
        let server = try MockAPNsServer(
            mock: MockAPNs(configuration: MockAPNsConfiguration(), startedAt: .now()), options: options)
        let client = try RawH2Client(port: server.port)
        try client.sendPreface()
        let goAway = try #require(try client.readUntil { $0.type == 7 })
        await server.shutdown()
        #expect(String(decoding: goAway.payload.dropFirst(8), as: UTF8.self) == #"{"reason":"IdleTimeout"}"#)
    }
}
