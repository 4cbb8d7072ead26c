import RouseAgentCore
import Testing

/// Keep-alive scheduling without a process: times are plain `Duration`s the test chooses.
@Suite("KeepAliveScheduler: minimum interval, never late, N handlers on one wake-up")
struct KeepAliveSchedulerTests {
    @Test func intervalsBelowSixHundredSecondsAreRefused() {
        #expect(KeepAliveScheduler.interval(seconds: 599.9) == .failure(.tooShort))
        #expect(KeepAliveScheduler.interval(seconds: 600) == .success(.seconds(600)))
        #expect(KeepAliveScheduler.interval(seconds: 86_401) == .failure(.tooLong))
        #expect(KeepAliveScheduler.interval(seconds: .nan) == .failure(.notANumber))
        #expect(KeepAliveScheduler.interval(seconds: -1) == .failure(.tooShort))
    }

    @Test func aKeepAliveIsNeverLateAndNeverEarlierThanItsTolerance() {
        var scheduler = KeepAliveScheduler()
        scheduler.set("a", interval: .seconds(600), now: .seconds(17))
        // Due at 617; planned on the 60 s grid at 600 (17 s early, inside the 60 s tolerance).
        #expect(scheduler.nextTimer() == .seconds(600))
        #expect(scheduler.due(now: .seconds(556)).isEmpty)
        #expect(scheduler.due(now: .seconds(557)) == ["a"])
        scheduler.ran("a", now: .seconds(600))
        #expect(scheduler.due(of: "a") == .seconds(1200))
        #expect(scheduler.nextTimer() == .seconds(1200))
        scheduler.clear("a")
        #expect(scheduler.nextTimer() == nil)
    }

    /// Ten handlers asking for 600 s at different moments of the first minute and a half: after their first round
    /// they all run at the same timer, once per interval, for an hour, each never later than its interval.
    @Test func tenHandlersCostOneWakeUpPerInterval() {
        var scheduler = KeepAliveScheduler()
        for index in 0..<10 { scheduler.set("h\(index)", interval: .seconds(600), now: .seconds(Int64(index * 9))) }
        var wakeUps: [Duration] = []
        var runs: [String: [Duration]] = [:]
        while let next = scheduler.nextTimer(), next <= .seconds(4200) {
            wakeUps.append(next)
            for name in scheduler.due(now: next) {
                runs[name, default: []].append(next)
                scheduler.ran(name, now: next)
            }
        }
        // The first round takes two wake-ups (those due after 660 s are not within their tolerance at 600 s); from the
        // second on, one wake-up per interval for all ten: 8 wake-ups in 70 minutes instead of 70.
        #expect(wakeUps == [600, 660, 1200, 1800, 2400, 3000, 3600, 4200].map { Duration.seconds($0) }, "\(wakeUps)")
        for (name, times) in runs {
            #expect(times.count == 7, "\(name): \(times)")
            var last = Duration.seconds(Int64((Int(name.dropFirst()) ?? 0) * 9))
            for time in times {
                #expect(time - last <= .seconds(600) && time - last >= .seconds(540), "\(name): \(times)")
                last = time
            }
        }
    }

    @Test func differentIntervalsConvergeOnSharedWakeUps() {
        var scheduler = KeepAliveScheduler()
        scheduler.set("short", interval: .seconds(600), now: .zero)
        scheduler.set("long", interval: .seconds(1200), now: .seconds(30))
        var wakeUps: [Duration] = []
        while let next = scheduler.nextTimer(), next <= .seconds(3600) {
            wakeUps.append(next)
            for name in scheduler.due(now: next) { scheduler.ran(name, now: next) }
        }
        // The long one joins the short one's 1200 s wake-up (due 1230, tolerance 120 s): 6 wake-ups, not 6 + 3.
        #expect(wakeUps == [600, 1200, 1800, 2400, 3000, 3600].map { Duration.seconds($0) })
    }
}
