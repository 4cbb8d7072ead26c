import RouseActivation
import RouseTestSupport
import Testing

@Suite("Property: exactly one end per begin, nothing to the dead, under random sequences")
struct PropertyTests {
    static let seedsPerCase: UInt64 = 64
    static let steps = 200

    static let shapes: [SessionConfiguration] = Party.validShapes.compactMap {
        try? SessionConfiguration(category: $0.0, mode: $0.1, options: $0.2)
    }

    /// One random run; returns the ledger's violations (empty when every promise held).
    /// With `restoring`, the arbiter is replaced after every step by the one its snapshot describes (an agent
    /// restarting between any two steps); `trace` lists every step's effects, to compare the two runs.
    static func run(seed: UInt64, restoring: Bool = false) -> (violations: [String], begins: Int, trace: [String]) {
        var trace: [String] = []
        var random = SplitMix64(seed: seed)
        var arbiter = ActivationArbiter()
        var ledger = Ledger()
        // Six handler slots; a killed handler is replaced by a fresh identity (pids are never reused).
        var generation = [Int](repeating: 0, count: 6)
        func handler(_ slot: Int) -> HandlerID { HandlerID("h\(slot).\(generation[slot])") }
        var now = 0.0
        for step in 0..<steps {
            now += 1
            let slot = Int.random(in: 0..<6, using: &random)
            let who = handler(slot)
            let name = ["a", "b", "c"].randomElement(using: &random) ?? "a"
            let session = SessionID(handler: who, name: name)
            let notify = Bool.random(using: &random)
            let label = "seed \(seed) step \(step)"
            var effects: [ActivationEffect] = []
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<40:
                let priorities = ActivationPriority.allCases
                let request = ActivationRequest(
                    session: session, configuration: shapes.randomElement(using: &random) ?? .voiceCall,
                    priority: priorities.randomElement(using: &random) ?? .media,
                    acceptsDelay: Bool.random(using: &random))
                effects = arbiter.activate(request, now: now)
            case 40..<60:
                effects = arbiter.deactivate(session, notifyOthers: notify, now: now)
            case 60..<67:
                effects = arbiter.callStarted(who, now: now)
            case 67..<74:
                effects = arbiter.callEnded(who, notifyOthers: notify, now: now)
            case 74..<80:
                let reasons: [HolderGoneReason] = [.connectionClosed, .processExited, .terminatedByAgent]
                effects = arbiter.holderGone(
                    who, reason: reasons.randomElement(using: &random) ?? .processExited, now: now)
                ledger.kill(who)
                generation[slot] += 1
            case 80..<87:
                effects = arbiter.handlerSuspended(who, now: now).effects
            case 87..<97:
                effects = arbiter.handlerStateChanged(who, to: notify ? .foreground : .background, now: now)
            default:
                effects = arbiter.routeChanged(.oldDeviceUnavailable, now: now)
            }
            ledger.record(effects, step: label)
            ledger.check(arbiter.snapshot, step: label)
            trace.append("\(effects)")
            if restoring {
                let snapshot = arbiter.snapshot
                arbiter = ActivationArbiter(restoring: snapshot)
                if arbiter.snapshot != snapshot { ledger.violations.append("\(label): the restored snapshot differs") }
            }
        }
        // Wind down as live holders would: thaw, end calls, deactivate; every begin must then be ended.
        for slot in 0..<6 {
            now += 1
            ledger.record(
                arbiter.handlerStateChanged(handler(slot), to: .background, now: now), step: "seed \(seed) thaw")
        }
        while let first = arbiter.snapshot.sessions.first {
            now += 1
            let session = first.session
            let effects =
                session.isCall
                ? arbiter.callEnded(session.handler, notifyOthers: Bool.random(using: &random), now: now)
                : arbiter.deactivate(session, notifyOthers: Bool.random(using: &random), now: now)
            ledger.record(effects, step: "seed \(seed) wind-down \(session)")
            if arbiter.snapshot.sessions.first?.session == session {
                ledger.violations.append("seed \(seed): \(session) does not end")
                break
            }
        }
        ledger.check(arbiter.snapshot, step: "seed \(seed) end")
        if !ledger.interrupted.isEmpty || !ledger.ducked.isEmpty || !ledger.playing.isEmpty {
            ledger.violations.append(
                "seed \(seed): open at the end: \(ledger.interrupted) \(ledger.ducked) \(ledger.playing)")
        }
        return (ledger.violations, ledger.begins, trace)
    }

    @Test("An arbiter restored from its snapshot after every step behaves exactly as the original", arguments: 0..<4)
    func restoredFromSnapshots(_ chunk: UInt64) {
        for seed in (chunk * Self.seedsPerCase)..<((chunk + 1) * Self.seedsPerCase) {
            let original = Self.run(seed: seed)
            let restored = Self.run(seed: seed, restoring: true)
            #expect(restored.violations.isEmpty, "\(restored.violations.prefix(3))")
            #expect(restored.trace == original.trace, "seed \(seed): a restored arbiter answered differently")
        }
    }

    @Test("Random activate/deactivate/kill/suspend/call sequences", arguments: 0..<16)
    func randomSequences(_ chunk: UInt64) {
        var begins = 0
        for seed in (chunk * Self.seedsPerCase)..<((chunk + 1) * Self.seedsPerCase) {
            let result = Self.run(seed: seed)
            #expect(result.violations.isEmpty, "\(result.violations.prefix(5))")
            begins += result.begins
        }
        // The sequences do exercise interruptions and ducks.
        #expect(begins > Int(Self.seedsPerCase) * 5)
    }
}
