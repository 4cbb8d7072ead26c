import RouseActivation
import Testing

@Suite("Preemption matrix: every (existing, new) pair of category × mode × options × priority × fg/bg")
struct PreemptionMatrixTests {
    static let existing = Party.all(priorities: ActivationPriority.allCases.filter { $0 != .call }, delays: [false])
    static let new = Party.all(priorities: ActivationPriority.allCases, delays: [false, true])

    static let e = HandlerID("existing")
    static let n = HandlerID("new")

    /// An arbiter holding E, with E's handler then moved to E's activity.
    static func arbiter(holding party: Party, as session: SessionID) throws -> ActivationArbiter {
        var arbiter = ActivationArbiter()
        if let priority = party.priority {
            _ = arbiter.handlerStateChanged(e, to: .foreground, now: 0)
            let request = try Fixture.request(
                session, party.category, mode: party.mode, options: party.options, priority: priority)
            let effects = arbiter.activate(request, now: 0)
            try #require(effects.sent == [Sent(session, .granted)], "setup of \(party)")
            _ = arbiter.handlerStateChanged(e, to: party.foreground ? .foreground : .background, now: 0)
        } else {
            try #require(arbiter.callStarted(e, now: 0).sent == [Sent(session, .callActivated)])
        }
        return arbiter
    }

    @Test("Outcome and effects of N against E, then of N's release with and without notify", arguments: existing)
    func matrix(_ existing: Party) throws {
        let eSession = existing.viaCallPath ? SessionID.call(of: Self.e) : SessionID(handler: Self.e, name: "e")
        let base = try Self.arbiter(holding: existing, as: eSession)
        var cases = 0
        for new in Self.new {
            let nSession = new.viaCallPath ? SessionID.call(of: Self.n) : SessionID(handler: Self.n, name: "n")
            func who(_ side: PreemptionModel.Who) -> SessionID { side == .existing ? eSession : nSession }
            let expected = PreemptionModel.expect(existing: existing, new: new)
            var arbiter = base
            _ = arbiter.handlerStateChanged(Self.n, to: new.foreground ? .foreground : .background, now: 1)
            let effects: [ActivationEffect]
            if let priority = new.priority {
                let request = try Fixture.request(
                    nSession, new.category, mode: new.mode, options: new.options, priority: priority,
                    acceptsDelay: new.acceptsDelay)
                effects = arbiter.activate(request, now: 2)
            } else {
                effects = arbiter.callStarted(Self.n, now: 2)
            }
            #expect(effects.sent == expected.first.map { Sent(who($0.0), $0.1) }, "\(existing) ← \(new)")
            #expect(effects.hooked == expected.firstHooks.map { Hooked($0.0, who($0.1)) }, "\(existing) ← \(new)")
            for notify in [true, false] {
                var after = arbiter
                let released =
                    new.viaCallPath
                    ? after.callEnded(Self.n, notifyOthers: notify, now: 3)
                    : after.deactivate(nSession, notifyOthers: notify, now: 3)
                let (sent, hooks) = expected.released(notify)
                #expect(
                    released.sent == sent.map { Sent(who($0.0), $0.1) },
                    "\(existing) ← \(new) released notify=\(notify)")
                #expect(released.hooked == hooks.map { Hooked($0.0, who($0.1)) }, "\(existing) ← \(new) hooks")
            }
            cases += 1
        }
        #expect(cases == Self.new.count)
    }

    @Test("The matrix covers what it claims")
    func size() {
        // 28 valid shapes: ambient ×2, soloAmbient, record, playback 8 options × 2 modes, playAndRecord 8.
        #expect(Party.validShapes.count == 28)
        #expect(Self.existing.count == 28 * 6 * 2 + 1)
        #expect(Self.new.count == 28 * 7 * 2 * 2 + 1)
    }
}
