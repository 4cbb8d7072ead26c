import Foundation
import RouseAPNs
import RouseMockAPNs
import RouseTestSupport
import Testing

private typealias C = ConformanceFixture
private typealias Libraries = APNsClientLibraries

private let tokenAuth = Libraries.Auth.token(
    keyFile: Repository.cert("apns-key.p8"), keyID: "ROUSEKEY01", teamID: "ROUSETEAM1")
private let certificateAuth = Libraries.Auth.certificate(
    certificateFile: Repository.cert("provider.pem"), keyFile: Repository.cert("provider.key"))

/// `rouse mock-apns` driven by APNs client libraries that nobody here wrote, as another project's CI would.
@Suite(
    "Mock APNs with real client libraries (aioapns, kalyke-apns, pyapns-client, apns2-up)", .timeLimit(.minutes(5)))
struct ClientLibraryTests {
    @Test("a token-auth VoIP push is accepted and recorded", arguments: Libraries.Library.allCases)
    func tokenVoIP(library: APNsClientLibraries.Library) async throws {
        let fixture = try C()
        let apnsID = library.setsAPNsID ? "6f2e4c1a-0b3d-4e5f-8a7b-9c0d1e2f3a4b" : nil
        let outcome = try await Libraries.push(
            library: library, port: fixture.server.port, auth: tokenAuth, topic: "\(C.bundle).voip",
            deviceToken: C.voipToken, apnsID: apnsID)
        let records = fixture.mock.records()
        await fixture.shutdown()
        // pyapns-client and apns2-up sign iat as a fraction (PyJWT, time.time()): before, 403 InvalidProviderToken.
        #expect(outcome.accepted(status: 200), "\(outcome)")
        if library.surfacesAPNsID { #expect(outcome.apnsID?.lowercased() == apnsID, "\(outcome)") }
        let record = try #require(records.last)
        #expect(record.deviceToken == C.voipToken)
        #expect(record.outcome == .accepted)
        if let apnsID { #expect(record.apnsID?.lowercased() == apnsID) }
    }

    @Test("rejections surface with Apple's reason, and 410 with its timestamp", arguments: Libraries.Library.allCases)
    func rejections(library: APNsClientLibraries.Library) async throws {
        let fixture = try C()
        let port = fixture.server.port
        let badToken = try await Libraries.push(
            library: library, port: port, auth: tokenAuth, topic: "\(C.bundle).voip",
            deviceToken: "0b" + String(repeating: "ad", count: 31))
        let gone = try await Libraries.push(
            library: library, port: port, auth: tokenAuth, topic: "\(C.bundle).voip", deviceToken: C.goneToken)
        let otherTopic = try await Libraries.push(
            library: library, port: port, auth: tokenAuth, topic: "com.example.other.voip", deviceToken: C.voipToken)
        await fixture.shutdown()
        #expect(badToken.rejected("BadDeviceToken", status: 400), "\(badToken)")
        #expect(gone.rejected("Unregistered", status: 410), "\(gone)")
        #expect(gone.timestamp == C.goneSince.milliseconds, "\(gone)")
        #expect(otherTopic.rejected("TopicDisallowed", status: 400), "\(otherTopic)")
    }

    @Test(
        "a certificate-auth VoIP push is accepted",
        arguments: Libraries.Library.allCases.filter { $0.supportsCertificate })
    func certificateVoIP(library: APNsClientLibraries.Library) async throws {
        let fixture = try C()
        let outcome = try await Libraries.push(
            library: library, port: fixture.server.port, auth: certificateAuth, topic: "\(C.bundle).voip",
            deviceToken: C.voipToken)
        let records = fixture.mock.records()
        await fixture.shutdown()
        #expect(outcome.unsupported == nil, "\(library) supports certificate auth: \(outcome)")
        #expect(outcome.accepted(status: 200), "\(outcome)")
        #expect(records.last?.outcome == .accepted)
    }

    @Test("TLS without ALPN and the HTTP/2 preface is served (curl --no-alpn), as APNs does")
    func noALPN() async throws {
        let fixture = try C()
        let out = try await ChildProcess.run(
            "/usr/bin/curl",
            [
                "-sS", "-i", "--http2-prior-knowledge", "--no-alpn", "--cacert", Repository.cert("ca.pem"),
                "-H", "authorization: \(fixture.bearer)", "-H", "apns-push-type: voip", "-H",
                "apns-topic: \(C.bundle).voip", "-d", #"{"aps":{}}"#, "\(fixture.url)/3/device/\(C.voipToken)",
            ])
        await fixture.shutdown()
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout.hasPrefix("HTTP/2 200"), "\(out.stdout)")
    }
}
