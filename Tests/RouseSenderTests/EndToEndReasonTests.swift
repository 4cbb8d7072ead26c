import RouseAPNs
import RouseMockAPNs
import RouseSender
import Testing

/// How each documented reason reaches the sender: refused by the pre-flight, produced by the mock's rules,
/// or scripted with a status fault.
enum ReasonCase: Sendable, CustomStringConvertible {
    case preflight(APNsReason, APNsPush)
    case byRule(APNsReason, APNsPush, timestamp: Int64?)
    case scripted(APNsReason)

    var description: String {
        switch self {
        case .preflight(let r, _): "preflight \(r)"
        case .byRule(let r, _, _): "rule \(r)"
        case .scripted(let r): "scripted \(r)"
        }
    }

    static var all: [ReasonCase] {
        typealias F = MockFixture
        var cases: [ReasonCase] = []
        var p = F.voip(F.token(1))
        p.collapseID = String(repeating: "c", count: 65)
        cases.append(.preflight(.badCollapseId, p))
        p = F.voip("zz" + F.token(1).dropFirst(2))
        cases.append(.preflight(.badDeviceToken, p))
        p = F.voip(F.token(1))
        p.expiration = -5
        cases.append(.preflight(.badExpirationDate, p))
        p = F.voip(F.token(1))
        p.apnsID = "not-a-uuid"
        cases.append(.preflight(.badMessageId, p))
        p = F.voip(F.token(1))
        p.priority = APNsPriority(rawValue: 7)
        cases.append(.preflight(.badPriority, p))
        p = F.voip(F.token(1))
        p.topic = F.bundle
        cases.append(.preflight(.badTopic, p))
        p = F.voip(F.token(1))
        p.pushType = APNsPushType(rawValue: "fax")
        cases.append(.preflight(.invalidPushType, p))
        p = F.voip("")
        cases.append(.preflight(.missingDeviceToken, p))
        p = F.voip(F.token(1), payload: "")
        cases.append(.preflight(.payloadEmpty, p))
        p = F.voip(F.token(1), payload: "{\"x\":\"" + String(repeating: "y", count: 5200) + "\"}")
        cases.append(.preflight(.payloadTooLarge, p))
        var bg = F.background(F.token(1))
        bg.priority = .immediate
        cases.append(.preflight(.badPriority, bg))

        cases.append(.byRule(.unregistered, F.voip(F.goneToken), timestamp: F.goneSince))
        cases.append(.byRule(.expiredToken, F.voip(F.expiredToken), timestamp: nil))
        cases.append(.byRule(.deviceTokenNotForTopic, F.background(F.voipOnlyToken), timestamp: nil))
        cases.append(.byRule(.badDeviceToken, F.voip(F.productionToken), timestamp: nil))
        var other = F.voip(F.token(2))
        other.topic = "com.example.other.voip"
        cases.append(.byRule(.topicDisallowed, other, timestamp: nil))

        let local: Set<APNsReason> = [
            .badCollapseId, .badExpirationDate, .badMessageId, .badPriority, .badTopic, .invalidPushType,
            .missingDeviceToken, .payloadEmpty, .payloadTooLarge,
        ]
        for reason in APNsReason.documented where !local.contains(reason) {
            cases.append(.scripted(reason))
        }
        cases.append(.scripted(APNsReason(rawValue: "SomethingApple-AddsLater")))
        return cases
    }
}

@Suite("End to end: every reason, native engine", .timeLimit(.minutes(3)))
struct EndToEndReasonTests {
    typealias F = MockFixture

    @Test(arguments: ReasonCase.all)
    func reason(_ reasonCase: ReasonCase) async throws {
        let fixture = try F()
        let sender = try fixture.sender { $0.pool.retry.baseBackoff = .milliseconds(5) }
        switch reasonCase {
        case .preflight(let reason, let push):
            let result = await sender.sendDetailed(push)
            #expect(result.outcome == .rejected(reason: reason, timestamp: nil))
            #expect(result.refusedBeforeSending)
            #expect(result.attempts == 0)
            #expect(fixture.mock.records().isEmpty, "a pre-flight refusal must send nothing")
        case .byRule(let reason, let push, let timestamp):
            let result = await sender.sendDetailed(push)
            #expect(result.outcome == .rejected(reason: reason, timestamp: timestamp))
            #expect(result.attempts == 1)
            #expect(fixture.mock.records().count == 1)
        case .scripted(let reason):
            let token = F.token(77)
            fixture.mock.addFault(
                MockFaultRule(
                    id: "r", match: MockFaultMatch(deviceToken: token),
                    action: .status(reason: reason, status: reason.status ?? 400, count: 1)))
            let result = await sender.sendDetailed(F.voip(token))
            #expect(result.outcome == .rejected(reason: reason, timestamp: nil))
            let expectedAttempts: Int
            switch reason.retryPolicy {
            case .never: expectedAttempts = 1
            case .afterNewProviderToken: expectedAttempts = 2
            case .afterDelay, .withBackoff: expectedAttempts = 4
            }
            #expect(result.attempts == expectedAttempts, "\(reason): \(result.attempts) attempts")
            #expect(fixture.mock.records().count == expectedAttempts)
        }
        await sender.shutdown()
        await fixture.shutdown()
    }

    @Test func deliveredWithTheAPNsIDItSent() async throws {
        let fixture = try F()
        let sender = try fixture.sender()
        let result = await sender.sendDetailed(F.voip(F.token(5)))
        guard case .delivered(let id) = result.outcome else {
            Issue.record("not delivered: \(result.outcome)")
            return
        }
        #expect(id == result.push.apnsID)
        let record = fixture.mock.records().first
        #expect(record?.header("apns-expiration") == "0")
        #expect(record?.header("apns-push-type") == "voip")
        await sender.shutdown()
        await fixture.shutdown()
    }
}
