import RouseAgentCore
import Testing

/// Strikes for UnifiedPush apps (docs/unifiedpush.md, "Strikes"), on machine time given by hand: the handler rules'
/// limit (3) within their window (24 h) pauses an app's deliveries until it registers again or acknowledges a probe.
struct UnifiedPushStrikesTests {
    static let app = "org.example.App"
    static let other = "org.example.Other"

    /// Records a failure of `service` at `second`; whether it paused the app.
    static func fail(_ strikes: inout UnifiedPushStrikes, _ service: String = app, at second: Duration) -> Bool {
        strikes.failed(service: service, now: second)
    }

    /// What a delivery to `service` at `second` is.
    static func admit(_ strikes: inout UnifiedPushStrikes, _ service: String = app, at second: Duration)
        -> UnifiedPushStrikes.Admission
    {
        strikes.admit(service: service, now: second)
    }

    @Test func theHandlerRulesNumbersAreMirrored() {
        let strikes = UnifiedPushStrikes()
        #expect(strikes.limit == HandlerRules().strikeLimit)
        #expect(strikes.window == HandlerRules().strikeWindow)
        #expect(strikes.limit == 3)
    }

    @Test func threeFailuresPauseTheAppAloneAndRegisteringAgainResumesIt() {
        var strikes = UnifiedPushStrikes()
        let first = Self.fail(&strikes, at: .seconds(1))
        let second = Self.fail(&strikes, at: .seconds(2))
        #expect(!first && !second)
        let before = Self.admit(&strikes, at: .seconds(3))
        #expect(before == .deliver)
        let third = Self.fail(&strikes, at: .seconds(3))
        #expect(third, "the third strike did not pause")
        #expect(strikes.pausedApps == [Self.app])
        let fourth = Self.admit(&strikes, at: .seconds(4))
        let fifth = Self.admit(&strikes, at: .seconds(5))
        let otherApp = Self.admit(&strikes, Self.other, at: .seconds(5))
        #expect(fourth == .paused && fifth == .paused)
        #expect(otherApp == .deliver, "another app was paused")
        #expect(strikes.withheld == 2)
        #expect(strikes.total == 3)
        #expect(strikes.pauses == 1)
        // A failure of a delivery that was in flight when the app was paused does not pause it twice.
        let late = Self.fail(&strikes, at: .seconds(6))
        #expect(!late)
        #expect(strikes.pauses == 1)

        let resumed = strikes.registered(service: Self.app)
        #expect(resumed)
        #expect(strikes.pausedApps.isEmpty)
        #expect(strikes.strikeCount(Self.app, now: .seconds(7)) == 0)
        let after = Self.admit(&strikes, at: .seconds(7))
        #expect(after == .deliver)
    }

    @Test func anAcknowledgementClearsTheStrikesSoOnlyConsecutiveFailuresCount() {
        var strikes = UnifiedPushStrikes()
        _ = Self.fail(&strikes, at: .seconds(1))
        _ = Self.fail(&strikes, at: .seconds(2))
        let wasPaused = strikes.acknowledged(service: Self.app)
        #expect(!wasPaused)
        let third = Self.fail(&strikes, at: .seconds(3))
        let fourth = Self.fail(&strikes, at: .seconds(4))
        #expect(!third && !fourth, "strikes before an acknowledgement counted")
        #expect(strikes.pausedApps.isEmpty)
        let fifth = Self.fail(&strikes, at: .seconds(5))
        #expect(fifth)
    }

    @Test func strikesOlderThanTheWindowDoNotCount() {
        var strikes = UnifiedPushStrikes()
        let day = Duration.seconds(24 * 3600)
        _ = Self.fail(&strikes, at: .seconds(0))
        _ = Self.fail(&strikes, at: .seconds(10))
        #expect(strikes.strikeCount(Self.app, now: day + .seconds(5)) == 1)
        let third = Self.fail(&strikes, at: day + .seconds(5))
        #expect(!third, "a strike outside the window counted")
        let fourth = Self.fail(&strikes, at: day + .seconds(6))
        #expect(fourth)
    }

    @Test func aPausedAppGetsOneProbeAfterTheIntervalWhichEndsThePauseOrStrikesAgain() {
        var strikes = UnifiedPushStrikes(probeInterval: .seconds(60))
        for second in 1...3 { _ = Self.fail(&strikes, at: .seconds(second)) }
        let early = Self.admit(&strikes, at: .seconds(62))
        #expect(early == .paused, "probed before the interval")
        let probe = Self.admit(&strikes, at: .seconds(63))
        #expect(probe == .probe)
        let secondProbe = Self.admit(&strikes, at: .seconds(64))
        #expect(secondProbe == .paused, "a second probe while one is out")
        // The probe fails: another strike, the next probe an interval later.
        let failedProbe = Self.fail(&strikes, at: .seconds(70))
        #expect(!failedProbe)
        let tooSoon = Self.admit(&strikes, at: .seconds(129))
        let next = Self.admit(&strikes, at: .seconds(130))
        #expect(tooSoon == .paused && next == .probe)
        // The probe is acknowledged: resumed, strikes cleared.
        let resumed = strikes.acknowledged(service: Self.app)
        #expect(resumed)
        let after = Self.admit(&strikes, at: .seconds(131))
        #expect(after == .deliver)
        #expect(strikes.apps.isEmpty)
    }
}
