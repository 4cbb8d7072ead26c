import RouseAPNs
import RouseMockAPNs
import Testing

@Suite("Engine: responses and stream limits")
struct EngineConnectionTests {
    @Test func successEchoesAPNsIDAndAddsUniqueIDInSandbox() {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let id = "123e4567-e89b-12d3-a456-426614174000"
        let decision = mock.handle(F.request { $0.set("apns-id", id) }, connection: &connection, now: F.t0)
        let response = decision.response
        #expect(response?.status == 200)
        #expect(response?.body.isEmpty == true)
        #expect(response?.headers.first { $0.name == "apns-id" }?.value == id)
        let unique = response?.headers.first { $0.name == "apns-unique-id" }?.value
        #expect(unique.map { APNsRules.isCanonicalUUID($0) } == true)
        #expect(response?.headers.contains { $0.name == "content-type" } == false)
    }

    @Test func generatedIDAndNoUniqueIDInProduction() {
        let mock = MockAPNs(
            configuration: F.configuration {
                $0.environment = .production
                $0.devices = DeviceTokenRegistry()
            },
            startedAt: F.t0
        )
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let request = F.request { $0.set("authorization", "bearer " + F.token(F.productionKey, kid: "KEY0000002")) }
        let response = mock.handle(request, connection: &connection, now: F.t0).response
        #expect(response?.status == 200)
        let id = response?.headers.first { $0.name == "apns-id" }?.value
        #expect(id.map { APNsRules.isCanonicalUUID($0) } == true)
        #expect(response?.headers.contains { $0.name == "apns-unique-id" } == false)
        #expect(mock.records().first?.apnsID == id)
    }

    @Test func oneStreamUntilAValidToken() {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        #expect(connection.advertisedMaxConcurrentStreams == 1)
        let bad = mock.handle(F.request { $0.set("authorization", nil) }, connection: &connection, now: F.t0)
        #expect(bad.advertiseMaxConcurrentStreams == nil)
        let good = mock.handle(F.request(streamID: 3), connection: &connection, now: F.t0)
        #expect(good.response?.status == 200)
        #expect(good.advertiseMaxConcurrentStreams == 1000)
        #expect(connection.advertisedMaxConcurrentStreams == 1000)
    }

    @Test func streamLimitDropsAfterRejectionAndComesBack() {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        #expect(
            mock.handle(F.request(streamID: 1), connection: &connection, now: F.t0).advertiseMaxConcurrentStreams
                == 1000)
        let rejected = mock.handle(F.request(streamID: 3) { $0.body = [] }, connection: &connection, now: F.t0)
        #expect(rejected.advertiseMaxConcurrentStreams == 1)
        #expect(
            mock.handle(F.request(streamID: 5) { $0.body = [] }, connection: &connection, now: F.t0)
                .advertiseMaxConcurrentStreams == nil)
        // 410 is "not considered an error condition": no change.
        let gone = mock.handle(
            F.request(streamID: 7) { $0.path = "/3/device/" + F.goneToken }, connection: &connection, now: F.t0)
        #expect(gone.advertiseMaxConcurrentStreams == nil)
        #expect(
            mock.handle(F.request(streamID: 9), connection: &connection, now: F.t0).advertiseMaxConcurrentStreams
                == 1000)
        #expect(connection.requestCount == 5)
    }

    @Test func streamLimitDropCanBeSwitchedOff() {
        let mock = F.mock { $0.dropStreamLimitAfterRejection = false }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        _ = mock.handle(F.request(streamID: 1), connection: &connection, now: F.t0)
        #expect(
            mock.handle(F.request(streamID: 3) { $0.body = [] }, connection: &connection, now: F.t0)
                .advertiseMaxConcurrentStreams == nil)
    }

    @Test func unknownTokensAcceptedByDefault() {
        let mock = F.mock { $0.devices = DeviceTokenRegistry() }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let decision = mock.handle(F.request { $0.path = "/3/device/ABCDEF" }, connection: &connection, now: F.t0)
        #expect(decision.response?.status == 200)
    }

    @Test func keysChangedAtRunTimeApplyToNewConnections() {
        let mock = F.mock()
        var old = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        mock.updateKeys { $0.remove(keyID: "KEY0000001") }
        var new = mock.openConnection(info: MockConnectionInfo(id: 2, remoteAddress: "a"))
        #expect(mock.handle(F.request(), connection: &old, now: F.t0).response?.status == 200)
        #expect(mock.handle(F.request(), connection: &new, now: F.t0).statusAndReason?.1 == "InvalidProviderToken")
    }

    @Test func largeRegistryLookups() {
        var registry = DeviceTokenRegistry(unknownTokens: .reject)
        for index in 0..<100_000 {
            registry.set(String(index, radix: 16).leftPadded(64), .init(topics: ["com.example.app.voip"]))
        }
        #expect(registry.count == 100_000)
        let mock = F.mock { $0.devices = registry }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        var accepted = 0
        for index in stride(from: 0, to: 100_000, by: 997) {
            let path = "/3/device/" + String(index, radix: 16).leftPadded(64)
            let decision = mock.handle(
                F.request(streamID: Int32(index % 1_000_000) * 2 + 1) { $0.path = path }, connection: &connection,
                now: F.t0)
            if decision.response?.status == 200 { accepted += 1 }
        }
        #expect(accepted == 101)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
