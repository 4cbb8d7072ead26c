import RouseAPNs
import RouseMockAPNs
import Testing

@Suite("Engine: fault injection")
struct EngineFaultTests {
    static func run(_ mock: MockAPNs, count: Int, connection: inout MockConnection, at time: APNsTime = F.t0)
        -> [MockDecision]
    {
        (0..<count).map { index in
            mock.handle(F.request(streamID: Int32(2 * index + 1)), connection: &connection, now: time)
        }
    }

    @Test func goAwayCurrentAnswersThenGoesAway() {
        let mock = F.mock {
            $0.faults = [MockFaultRule(id: "s", match: MockFaultMatch(nth: 2), action: .shutdown, times: 1)]
        }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let decisions = Self.run(mock, count: 3, connection: &connection)
        #expect(decisions[0].goAwayAfterResponse == nil)
        #expect(decisions[1].response?.status == 200)
        #expect(
            decisions[1].goAwayAfterResponse
                == MockGoAwayFrame(errorCode: 0, lastStreamID: 3, debugData: Array(#"{"reason":"Shutdown"}"#.utf8)))
        #expect(decisions[2].goAwayAfterResponse == nil)
    }

    @Test func goAwayWithLastStreamZeroDoesNotProcess() {
        let goAway = MockGoAway(lastStreamID: .id(0), reason: .badCertificateEnvironment)
        let mock = F.mock {
            $0.faults = [MockFaultRule(id: "g", match: MockFaultMatch(nth: 1), action: .goAway(goAway))]
        }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let decision = mock.handle(F.request(), connection: &connection, now: F.t0)
        guard case .goAway(let code, let last, let debug) = decision.action else {
            Issue.record("expected GOAWAY")
            return
        }
        #expect(code == 0)
        #expect(last == 0)
        #expect(String(decoding: debug, as: UTF8.self) == #"{"reason":"BadCertificateEnvironment"}"#)
        #expect(mock.records().first?.outcome == .unprocessed("goAway"))
        #expect(mock.records().first?.status == nil)
    }

    @Test func refusedResetBlackholeEveryN() {
        let mock = F.mock {
            $0.faults = [
                MockFaultRule(id: "r", match: MockFaultMatch(every: 3), action: .refusedStream),
                MockFaultRule(id: "t", match: MockFaultMatch(nth: 4), action: .tcpReset),
                MockFaultRule(id: "b", match: MockFaultMatch(nth: 5), action: .blackhole),
            ]
        }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let decisions = Self.run(mock, count: 6, connection: &connection)
        if case .resetStream(let code) = decisions[2].action {
            #expect(code == 7)
        } else {
            Issue.record("no RST_STREAM")
        }
        if case .resetConnection = decisions[3].action {} else { Issue.record("no TCP reset") }
        if case .blackhole = decisions[4].action {} else { Issue.record("no blackhole") }
        if case .resetStream = decisions[5].action {} else { Issue.record("no RST_STREAM at 6") }
        let outcomes = mock.records().map(\.outcome)
        #expect(
            outcomes == [
                .accepted, .accepted, .unprocessed("refusedStream"), .unprocessed("tcpReset"),
                .unprocessed("blackhole"), .unprocessed("refusedStream"),
            ])
    }

    @Test func statusBurst() {
        let mock = F.mock {
            $0.faults = [
                MockFaultRule(
                    id: "b", match: MockFaultMatch(nth: 2),
                    action: .status(reason: .serviceUnavailable, status: 503, count: 3))
            ]
        }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let statuses = Self.run(mock, count: 6, connection: &connection).map { $0.response?.status ?? 0 }
        #expect(statuses == [200, 503, 503, 503, 200, 200])
        #expect(mock.records()[1].reason == .serviceUnavailable)
    }

    @Test(arguments: [
        (APNsReason.internalServerError, 500), (.serviceUnavailable, 503), (.shutdown, 503), (.forbidden, 403),
        (.idleTimeout, 400), (.badEnvironmentKeyInToken, 403),
    ])
    func scriptedReasons(reason: APNsReason, status: Int) {
        let mock = F.mock {
            $0.faults = [
                MockFaultRule(id: "x", action: .status(reason: reason, status: reason.status ?? 500, count: 1))
            ]
        }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let decision = mock.handle(F.request(), connection: &connection, now: F.t0)
        #expect(decision.statusAndReason?.0 == status)
        #expect(decision.statusAndReason?.1 == reason.rawValue)
    }

    @Test func latencyAddsUpAndPerTokenMatch() {
        let mock = F.mock {
            $0.faults = [
                MockFaultRule(
                    id: "l1", match: MockFaultMatch(deviceToken: F.voipToken.uppercased()),
                    action: .latency(milliseconds: 100)),
                MockFaultRule(id: "l2", action: .latency(milliseconds: 50)),
            ]
        }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        #expect(mock.handle(F.request(), connection: &connection, now: F.t0).response?.delayMilliseconds == 150)
        let other = F.request(streamID: 3) { $0.path = "/3/device/" + F.alertToken }
        #expect(mock.handle(other, connection: &connection, now: F.t0).response?.delayMilliseconds == 50)
    }

    @Test func timeWindow() {
        let mock = F.mock {
            $0.faults = [
                MockFaultRule(
                    id: "w", match: MockFaultMatch(afterMilliseconds: 1000, untilMilliseconds: 2000),
                    action: .refusedStream)
            ]
        }
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        let kinds = [0, 999, 1000, 1999, 2000].map { offset -> Bool in
            if case .resetStream = mock.handle(
                F.request(), connection: &connection, now: F.t0.adding(milliseconds: Int64(offset))
            ).action {
                return true
            }
            return false
        }
        #expect(kinds == [false, false, true, true, false])
    }

    @Test func runTimeAPI() {
        let mock = F.mock()
        var connection = mock.openConnection(info: MockConnectionInfo(id: 1, remoteAddress: "a"))
        mock.addFault(MockFaultRule(id: "r", action: .refusedStream))
        #expect(mock.faults().count == 1)
        if case .resetStream = mock.handle(F.request(), connection: &connection, now: F.t0).action {
        } else {
            Issue.record("no fault")
        }
        #expect(mock.removeFault(id: "r") == 1)
        #expect(mock.handle(F.request(), connection: &connection, now: F.t0).response?.status == 200)
        mock.addFault(MockFaultRule(id: "b", action: .status(reason: .internalServerError, status: 500, count: 100)))
        #expect(mock.handle(F.request(), connection: &connection, now: F.t0).response?.status == 500)
        mock.clearFaults()
        #expect(mock.handle(F.request(), connection: &connection, now: F.t0).response?.status == 200)
    }
}
