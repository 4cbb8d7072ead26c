import RouseAPNs
import RouseMockAPNs
import Synchronization
import Testing

@Suite("Engine: records")
struct EngineRecordTests {
    @Test func recordsWhatArrived() {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 42, remoteAddress: "127.0.0.1:5"))
        _ = mock.handle(F.request(streamID: 1), connection: &connection, now: F.t0)
        _ = mock.handle(
            F.request(streamID: 3) { $0.body = [] }, connection: &connection, now: F.t0.adding(milliseconds: 5))
        let records = mock.records()
        #expect(records.count == 2)
        #expect(records[0].sequence == 1)
        #expect(records[0].connectionID == 42)
        #expect(records[0].streamID == 1)
        #expect(records[0].deviceToken == F.voipToken)
        #expect(records[0].header("apns-push-type") == "voip")
        #expect(records[0].payload == Array(#"{"aps":{}}"#.utf8))
        #expect(records[0].status == 200)
        #expect(records[0].outcome == .accepted)
        #expect(records[1].outcome == .rejected(.payloadEmpty))
        #expect(records[1].time == F.t0.adding(milliseconds: 5))
        #expect(mock.recordCount() == 2)
        mock.clearRecords()
        #expect(mock.records().isEmpty)
        _ = mock.handle(F.request(streamID: 5), connection: &connection, now: F.t0)
        #expect(mock.records().first?.sequence == 3)
    }

    @Test func jsonLine() {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let id = "123e4567-e89b-12d3-a456-426614174000"
        _ = mock.handle(
            F.request {
                $0.set("apns-id", id); $0.body = Array("{\"a\":\"\u{1}\"}".utf8)
            }, connection: &connection, now: F.t0)
        let line = mock.records()[0].jsonLine()
        #expect(!line.contains("\n"))
        #expect(
            line.hasPrefix(#"{"seq":1,"time":1800000000000,"conn":1,"stream":1,"method":"POST","path":"/3/device/"#))
        #expect(line.contains(#""outcome":"accepted","status":200,"apnsID":"\#(id)""#))
        #expect(line.contains(#"["apns-push-type","voip"]"#))
        #expect(line.contains(#""payload":"{\"a\":\"\u0001\"}"}"#))
        #expect(mock.recordsJSON().hasPrefix("[{") && mock.recordsJSON().hasSuffix("}]"))
    }

    @Test("the records (admin endpoint, --json) keep no usable provider token: its signature is cut")
    func authorizationRedacted() throws {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        _ = mock.handle(F.request(), connection: &connection, now: F.t0)
        _ = mock.handle(
            F.request(streamID: 3) { $0.set("authorization", "basic c2VjcmV0") }, connection: &connection, now: F.t0)
        let signature = try #require(F.bearer.split(separator: ".").last)
        let records = mock.records()
        let first = try #require(records.first?.header("authorization"))
        // Before: the whole signed JWT, readable by anyone who could reach the admin port.
        #expect(!first.contains(signature) && first.hasSuffix(".<redacted>") && first.hasPrefix("bearer "), "\(first)")
        #expect(F.bearer.hasPrefix(String(first.dropLast("<redacted>".count))))
        #expect(records[1].header("authorization") == "<redacted>")
        #expect(!mock.recordsJSON().contains(signature) && !mock.recordsJSON().contains("c2VjcmV0"))
    }

    @Test("a connection's redaction is made once per token and follows a new token (the per-connection cache)")
    func redactionFollowsTokenChanges() throws {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let second = "bearer " + F.token(iat: F.t0.adding(milliseconds: 1000))
        #expect(second != F.bearer)
        _ = mock.handle(F.request(streamID: 1), connection: &connection, now: F.t0)
        _ = mock.handle(F.request(streamID: 3), connection: &connection, now: F.t0)
        _ = mock.handle(
            F.request(streamID: 5) { $0.set("authorization", second) }, connection: &connection, now: F.t0)
        _ = mock.handle(F.request(streamID: 7), connection: &connection, now: F.t0)
        let shown = mock.records().map { $0.header("authorization") ?? "" }
        func expected(_ bearer: String) -> String {
            let segments = bearer.split(separator: ".")
            return "\(segments[0]).\(segments[1]).<redacted>"
        }
        #expect(shown == [expected(F.bearer), expected(F.bearer), expected(second), expected(F.bearer)], "\(shown)")
    }

    @Test func recordLimitKeepsNewest() {
        let mock = F.mock { $0.recordLimit = 3 }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        for index in 0..<7 {
            _ = mock.handle(F.request(streamID: Int32(2 * index + 1)), connection: &connection, now: F.t0)
        }
        #expect(mock.records().map(\.sequence) == [5, 6, 7])
        #expect(mock.recordCount() == 7)
    }

    @Test func onRecordSink() {
        let lines = Mutex<[String]>([])
        let mock = MockAPNs(configuration: F.configuration(), startedAt: F.t0) { record in
            lines.withLock { $0.append(record.jsonLine()) }
        }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        _ = mock.handle(F.request(), connection: &connection, now: F.t0)
        #expect(lines.withLock { $0.count } == 1)
    }

    @Test func waitForRecords() async throws {
        let mock = F.mock()
        let task = Task {
            try await mock.waitForRecords(count: 3, timeout: .seconds(5))
        }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        for index in 0..<3 {
            _ = mock.handle(F.request(streamID: Int32(2 * index + 1)), connection: &connection, now: F.t0)
        }
        let records = try await task.value
        #expect(records.count == 3)
        await #expect(throws: MockAPNsError.timeout("")) {
            try await mock.waitForRecords(count: 4, timeout: .milliseconds(20))
        }
    }

    @Test func concurrentConnections() async {
        let mock = F.mock { $0.devices = DeviceTokenRegistry() }
        await withTaskGroup(of: Void.self) { group in
            for connectionID in 0..<4 {
                group.addTask {
                    var connection = mock.openConnection(
                        info: MockConnectionInfo(id: UInt64(connectionID), remoteAddress: "a"))
                    for index in 0..<250 {
                        _ = mock.handle(F.request(streamID: Int32(2 * index + 1)), connection: &connection, now: F.t0)
                    }
                }
            }
        }
        #expect(mock.recordCount() == 1000)
        #expect(Set(mock.records().map(\.sequence)).count == 1000)
    }
}

@Suite("Engine: statistics")
struct EngineStatisticsTests {
    @Test func countsByOutcome() {
        let mock = F.mock {
            $0.faults = [MockFaultRule(id: "r", match: MockFaultMatch(nth: 3), action: .refusedStream)]
        }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        _ = mock.handle(F.request(streamID: 1), connection: &connection, now: F.t0)
        _ = mock.handle(F.request(streamID: 3) { $0.body = [] }, connection: &connection, now: F.t0)
        _ = mock.handle(F.request(streamID: 5), connection: &connection, now: F.t0)
        let statistics = mock.statistics()
        #expect(statistics.total == 3)
        #expect(statistics.accepted == 1)
        #expect(statistics.rejected == [.payloadEmpty: 1])
        #expect(statistics.unprocessed == ["refusedStream": 1])
        #expect(
            statistics.json()
                == #"{"total":3,"accepted":1,"rejected":{"PayloadEmpty":1},"unprocessed":{"refusedStream":1}}"#)
        #expect(mock.records(after: 1).map(\.sequence) == [2, 3])
        mock.clearRecords()
        #expect(mock.statistics().total == 3)
    }
}
