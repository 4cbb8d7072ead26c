import RouseAPNs
import RouseMockAPNs
import RouseSender
import RouseTestSupport
import Testing

@Suite("curl engine and certificate auth against the mock", .timeLimit(.minutes(2)))
struct CurlEngineTests {
    typealias F = MockFixture

    static let pemCertificate = SenderCredentials.certificatePEM(
        certificateFile: Repository.cert("provider.pem"), keyFile: Repository.cert("provider.key"))
    static let p12Certificate = SenderCredentials.pkcs12(file: Repository.cert("provider.p12"), password: "rouse-test")

    @Test(arguments: ["token", "pem", "p12"])
    func deliversWithEachCredential(_ kind: String) async throws {
        let fixture = try F()
        let credentials: SenderCredentials? =
            kind == "pem" ? Self.pemCertificate : kind == "p12" ? Self.p12Certificate : nil
        for transport in [SenderTransport.native, .curl(proxy: "")] {
            let sender = try fixture.sender(transport: transport, credentials: credentials)
            let outcome = await sender.send(F.voip(F.token(3)))
            #expect(outcome.isDelivered, "\(kind) over \(transport): \(outcome)")
            await sender.shutdown()
        }
        let records = fixture.mock.records()
        #expect(records.count == 2)
        #expect(records.allSatisfy { ($0.header("authorization") != nil) == (kind == "token") })
        await fixture.shutdown()
    }

    @Test func certificateTopicsAreCheckedBeforeSending() async throws {
        let fixture = try F()
        let sender = try fixture.sender(credentials: Self.p12Certificate)
        #expect(
            sender.certificateTopics == [
                "com.example.rouse", "com.example.rouse.voip", "com.example.rouse.complication",
            ])
        var push = F.voip(F.token(4))
        push.topic = "com.example.other.voip"
        let result = await sender.sendDetailed(push)
        #expect(result.outcome == .rejected(reason: .topicDisallowed, timestamp: nil))
        #expect(result.refusedBeforeSending)
        #expect(fixture.mock.records().isEmpty)
        await sender.shutdown()
        await fixture.shutdown()
    }

    @Test func badCredentialsFailAtInit() throws {
        let fixture = try F()
        #expect(throws: SendError.credentials("")) {
            _ = try fixture.sender(credentials: .token(keyPEM: "not a key", keyID: "ROUSEKEY01", teamID: "ROUSETEAM1"))
        }
        #expect(throws: SendError.credentials("")) {
            _ = try fixture.sender(credentials: .pkcs12(file: Repository.cert("provider.p12"), password: "wrong"))
        }
    }

    @Test func curlReasonsAndRetries() async throws {
        let fixture = try F()
        let retried = F.token(9)
        fixture.mock.addFault(
            MockFaultRule(
                id: "u", match: MockFaultMatch(deviceToken: retried),
                action: .status(reason: .serviceUnavailable, status: 503, count: 1), times: 1))
        let sender = try fixture.sender(transport: .curl(proxy: "")) { $0.pool.retry.baseBackoff = .milliseconds(5) }
        #expect(await sender.send(F.voip(F.goneToken)) == .rejected(reason: .unregistered, timestamp: F.goneSince))
        #expect(await sender.send(F.voip(F.expiredToken)) == .rejected(reason: .expiredToken, timestamp: nil))
        #expect(
            await sender.send(F.background(F.voipOnlyToken))
                == .rejected(reason: .deviceTokenNotForTopic, timestamp: nil))
        let result = await sender.sendDetailed(F.voip(retried))
        #expect(result.outcome.isDelivered)
        #expect(result.attempts == 2)
        var bad = F.voip(F.token(1))
        bad.collapseID = String(repeating: "x", count: 65)
        #expect(await sender.send(bad) == .rejected(reason: .badCollapseId, timestamp: nil))
        #expect(fixture.mock.records().count == 5)
        await sender.shutdown()
        await fixture.shutdown()
    }

    @Test func curlBulkGivesOneOutcomePerPush() async throws {
        let fixture = try F()
        let sender = try fixture.sender(transport: .curl(proxy: ""))
        let box = ResultBox()
        await sender.sendAll((0..<2000).map { F.background(F.token($0)) }, maxInFlight: 500) { box.append($0) }
        let results = box.all
        #expect(results.count == 2000)
        let delivered = results.filter(\.outcome.isDelivered).count
        let accepted = fixture.mock.records().filter { $0.outcome == .accepted }.count
        #expect(delivered == accepted)
        #expect(
            results.allSatisfy { r in
                if case .failed(_, let processed) = r.outcome { return processed == .unknown || r.attempts == 0 }
                return true
            })
        await sender.shutdown()
        await fixture.shutdown()
    }
}
