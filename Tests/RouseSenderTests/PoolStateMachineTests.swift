import Foundation
import RouseAPNs
import RouseSender
import Testing

/// Drives a `PoolStateMachine` without sockets: a manual clock and a log of its actions.
struct PoolDriver {
    var machine: PoolStateMachine
    var now = PoolInstant(monotonic: .seconds(1000), wall: APNsTime(seconds: 1_800_000_000))
    var sent: [(PoolStateMachine.ConnectionID, UInt64)] = []
    var outcomes: [UInt64: PushOutcome] = [:]
    var retries: [UInt64: Int] = [:]
    var connects: [PoolStateMachine.ConnectionID] = []
    var closes: [PoolStateMachine.ConnectionID] = []
    var aborts: [PoolStateMachine.ConnectionID] = []
    var pings: [PoolStateMachine.ConnectionID] = []
    var authorizations: [UInt64: String] = [:]

    init(_ edit: (inout PoolSettings) -> Void = { _ in }, token: Bool = true) {
        var settings = PoolSettings()
        settings.dedicatedPriorityConnection = false
        edit(&settings)
        let signer: (@Sendable (Int64) -> String)? = token ? { @Sendable iat in "jwt-\(iat)" } : nil
        machine = PoolStateMachine(settings: settings, signer: signer, seed: 1)
    }

    static func push(_ n: Int, type: APNsPushType = .background) -> APNsPush {
        APNsPush(
            deviceToken: String(format: "%064x", n), topic: "com.example.rouse", pushType: type,
            priority: type == .background ? .conservePower : nil, payload: Array("{}".utf8))
    }

    mutating func record(_ actions: [PoolStateMachine.Action]) {
        for action in actions {
            switch action {
            case .connect(let id, _): connects.append(id)
            case .send(let id, let pushID, _, let authorization):
                sent.append((id, pushID))
                authorizations[pushID] = authorization
            case .finish(let pushID, let outcome, _, let count):
                #expect(outcomes[pushID] == nil, "second outcome for push \(pushID)")
                outcomes[pushID] = outcome
                retries[pushID] = count
            case .ping(let id): pings.append(id)
            case .close(let id): closes.append(id)
            case .abort(let id): aborts.append(id)
            }
        }
    }

    mutating func submit(_ id: UInt64, lane: PushLane = .bulk, deadline: Duration = .seconds(30)) {
        record(machine.submit(id: id, push: Self.push(Int(id)), lane: lane, deadline: deadline, now: now))
    }

    mutating func connect(_ id: PoolStateMachine.ConnectionID, limit: UInt32) {
        record(machine.settingsChanged(id, maxConcurrentStreams: limit, now: now))
        record(machine.connected(id, now: now))
    }

    mutating func answer(_ pushID: UInt64, _ result: AttemptResult) {
        guard let index = sent.lastIndex(where: { $0.1 == pushID }) else {
            Issue.record("push \(pushID) was not sent")
            return
        }
        record(machine.completed(sent[index].0, pushID: pushID, result: result, now: now))
    }

    mutating func advance(_ duration: Duration) {
        now = now.advanced(by: duration)
        record(machine.tick(now: now))
    }

    static let ok = AttemptResult.response(status: 200, apnsID: "id", body: [])
    static func rejection(_ reason: APNsReason, timestamp: Int64? = nil) -> AttemptResult {
        .response(
            status: reason.status ?? 400, apnsID: "id", body: APNsErrorBody(reason: reason, timestamp: timestamp).bytes)
    }
}

@Suite("Pool state machine (no sockets)")
struct PoolStateMachineTests {
    typealias D = PoolDriver

    @Test func opensOneConnectionAndSendsOneStreamUntilTheLimitRises() {
        var d = D()
        d.submit(1)
        d.submit(2)
        #expect(d.connects.count == 1)
        let c = d.connects[0]
        d.connect(c, limit: 1)
        #expect(d.sent.map(\.1) == [1])
        d.answer(1, D.ok)
        #expect(d.outcomes[1] == .delivered(apnsID: "id"))
        #expect(d.sent.map(\.1) == [1, 2])
        #expect(d.authorizations[1] == d.authorizations[2])
    }

    @Test func priorityLaneFirstAndStreamsHeldBackForIt() {
        var d = D()
        for id in 1...100 { d.submit(UInt64(id), lane: .bulk) }
        let c = d.connects[0]
        d.connect(c, limit: 40)
        // Bulk leaves 5 % (2 streams) for the priority lane.
        #expect(d.sent.count == 38)
        d.submit(1000, lane: .priority)
        #expect(d.sent.last?.1 == 1000)
        // When a stream frees, a waiting priority push goes before waiting bulk pushes.
        d.submit(1001, lane: .priority)
        d.submit(1002, lane: .priority)
        #expect(d.sent.last?.1 == 1001)
        d.answer(1, D.ok)
        #expect(d.sent.last?.1 == 1002)
    }

    @Test func priorityPushesGetTheirOwnConnection() {
        var d = D { $0.dedicatedPriorityConnection = true }
        for id in 1...100 { d.submit(UInt64(id), lane: .bulk) }
        #expect(d.connects.count == 1)
        d.connect(d.connects[0], limit: 1000)
        d.submit(1000, lane: .priority)
        #expect(d.connects.count == 2)
        // Until its own connection is up, a priority push uses the reserve of the bulk connection.
        #expect(d.sent.last?.1 == 1000)
        #expect(d.sent.last?.0 == d.connects[0])
        d.connect(d.connects[1], limit: 1000)
        d.submit(1001, lane: .priority)
        #expect(d.sent.last?.1 == 1001)
        #expect(d.sent.last?.0 == d.connects[1])
        // Bulk never uses the priority connection.
        for id in 2000...3000 { d.submit(UInt64(id), lane: .bulk) }
        #expect(d.sent.filter { $0.0 == d.connects[1] }.map(\.1) == [1001])
    }

    @Test func goAwayDrainsAndUnprocessedStreamsGoToAFreshConnection() {
        var d = D()
        for id in 1...10 { d.submit(UInt64(id)) }
        let c1 = d.connects[0]
        d.connect(c1, limit: 100)
        #expect(d.sent.count == 10)
        for id in 1...4 { d.answer(UInt64(id), D.ok) }
        d.record(d.machine.goAway(c1, reason: .shutdown, now: d.now))
        for id in 5...10 { d.answer(UInt64(id), .notProcessed("above last-stream-id", goAwayReason: nil)) }
        #expect(d.connects.count == 2)
        #expect(d.closes == [c1])
        let c2 = d.connects[1]
        d.connect(c2, limit: 100)
        let resent = d.sent.filter { $0.0 == c2 }.map(\.1)
        #expect(Set(resent) == Set(5...10))
        for id in resent { d.answer(id, D.ok) }
        #expect(d.outcomes.count == 10)
        #expect((5...10).allSatisfy { d.retries[UInt64($0)] == 1 })
    }

    @Test func goAwayWithAFatalReasonFailsUnprocessedPushesWithoutRetry() {
        var d = D()
        d.submit(1)
        let c = d.connects[0]
        d.connect(c, limit: 1)
        d.record(d.machine.goAway(c, reason: .badCertificateEnvironment, now: d.now))
        d.answer(1, .notProcessed("above last-stream-id", goAwayReason: nil))
        #expect(d.outcomes[1] == .failed(.goAway("BadCertificateEnvironment"), processed: .no))
    }

    @Test func refusedStreamIsResentAndBounded() {
        var d = D { $0.retry.maxUnprocessedResends = 3 }
        d.submit(1)
        d.connect(d.connects[0], limit: 10)
        for _ in 0..<3 { d.answer(1, .notProcessed("REFUSED_STREAM", goAwayReason: nil)) }
        #expect(d.outcomes[1] == nil)
        d.answer(1, .notProcessed("REFUSED_STREAM", goAwayReason: nil))
        guard case .failed(_, let processed) = d.outcomes[1] else {
            Issue.record("expected failure")
            return
        }
        #expect(processed == .no)
    }

    @Test(arguments: [
        APNsReason.badDeviceToken, .deviceTokenNotForTopic, .forbidden, .expiredToken, .unregistered,
        .payloadTooLarge, .badTopic,
    ])
    func neverRetried(_ reason: APNsReason) {
        var d = D()
        d.submit(1)
        d.connect(d.connects[0], limit: 10)
        d.answer(1, D.rejection(reason, timestamp: reason == .unregistered ? 1234 : nil))
        #expect(d.outcomes[1] == .rejected(reason: reason, timestamp: reason == .unregistered ? 1234 : nil))
        #expect(d.sent.count == 1)
    }

    @Test func serviceUnavailableBacksOffThenDelivers() {
        var d = D()
        d.submit(1)
        d.connect(d.connects[0], limit: 10)
        d.answer(1, D.rejection(.serviceUnavailable))
        #expect(d.sent.count == 1)
        d.advance(.milliseconds(10))
        #expect(d.sent.count == 1, "resent before its backoff")
        d.advance(.milliseconds(100))
        #expect(d.sent.count == 2)
        d.answer(1, D.ok)
        #expect(d.outcomes[1] == .delivered(apnsID: "id"))
    }

    @Test func statusRetriesEndWithTheRejection() {
        var d = D { $0.retry.maxStatusRetries = 2 }
        d.submit(1)
        d.connect(d.connects[0], limit: 10)
        for _ in 0..<3 {
            d.answer(1, D.rejection(.internalServerError))
            d.advance(.seconds(1))
        }
        #expect(d.outcomes[1] == .rejected(reason: .internalServerError, timestamp: nil))
        #expect(d.sent.count == 3)
    }

    @Test func expiredProviderTokenMintsAndRetriesOnceOnAFreshConnection() {
        var d = D()
        d.submit(1)
        let c1 = d.connects[0]
        d.connect(c1, limit: 10)
        let firstToken = d.authorizations[1]
        d.now = d.now.advanced(by: .seconds(2))
        d.answer(1, D.rejection(.expiredProviderToken))
        // The connection may not switch tokens within 20 minutes: it drains, a new one opens.
        #expect(d.closes == [c1])
        #expect(d.connects.count == 2)
        d.connect(d.connects[1], limit: 10)
        #expect(d.sent.count == 2)
        #expect(d.authorizations[1] != firstToken)
        #expect(d.machine.tokensMinted == 2)
        d.answer(1, D.rejection(.expiredProviderToken))
        #expect(d.outcomes[1] == .rejected(reason: .expiredProviderToken, timestamp: nil))
    }

    @Test func deadlineGivesExactlyOneOutcome() {
        var d = D()
        d.submit(1, deadline: .seconds(2))
        d.submit(2, deadline: .seconds(2))
        d.connect(d.connects[0], limit: 1)
        d.advance(.seconds(3))
        #expect(d.outcomes[1] == .failed(.deadline(""), processed: .unknown))
        guard case .failed(_, .no) = d.outcomes[2] else {
            Issue.record("queued push should fail unprocessed: \(String(describing: d.outcomes[2]))")
            return
        }
        d.answer(1, D.ok)  // a late answer changes nothing
        #expect(d.outcomes.count == 2)
    }

    @Test func unansweredPingDeclaresTheConnectionDeadWithinTwoSeconds() {
        var d = D()
        d.submit(1)
        let c = d.connects[0]
        d.connect(c, limit: 10)
        var elapsed = Duration.zero
        while d.aborts.isEmpty && elapsed < .seconds(5) {
            d.advance(.milliseconds(100))
            elapsed += .milliseconds(100)
        }
        #expect(d.pings == [c])
        #expect(d.aborts == [c])
        #expect(elapsed <= .seconds(2))
    }

    @Test func pingAnsweredKeepsTheConnection() {
        var d = D()
        d.submit(1)
        let c = d.connects[0]
        d.connect(c, limit: 10)
        for _ in 0..<50 {
            d.advance(.milliseconds(100))
            if d.pings.count > 0 { d.machine.pingAcknowledged(c, now: d.now) }
        }
        #expect(d.aborts.isEmpty)
    }

    @Test func repeatedConnectFailuresFailWaitingPushes() {
        var d = D { $0.maxConnectFailures = 3 }
        d.submit(1)
        var rounds = 0
        while d.outcomes[1] == nil && rounds < 20 {
            if let id = d.connects.last {
                d.record(d.machine.connectFailed(id, error: "connection refused", now: d.now))
            }
            d.advance(.seconds(3))
            rounds += 1
        }
        #expect(d.outcomes[1] == .failed(.connect(""), processed: .no))
        #expect(d.connects.count == 3)
    }

    @Test func certificatePoolSendsNoAuthorization() {
        var d = D(token: false)
        d.submit(1)
        d.connect(d.connects[0], limit: 10)
        #expect(d.authorizations[1] == nil)
        #expect(d.machine.tokensMinted == 0)
    }
}
