import RouseActivation

/// Watches the effects of a run and records every broken promise: a second begin, an end without a
/// begin, a message to a dead holder, a grant while interrupted, a hook grant/revoke out of turn, and any
/// disagreement between what the holders were told and the arbiter's snapshot.
struct Ledger {
    var interrupted: Set<SessionID> = []
    var ducked: Set<SessionID> = []
    var playing: Set<SessionID> = []
    var dead: Set<HandlerID> = []
    var violations: [String] = []
    var begins = 0

    mutating func record(_ effects: [ActivationEffect], step: String) {
        func fail(_ what: String) { violations.append("\(step): \(what)") }
        for effect in effects {
            switch effect {
            case .hook(let event):
                switch event.kind {
                case .grant:
                    if !playing.insert(event.session).inserted { fail("hook grant twice \(event.session)") }
                case .revoke:
                    if playing.remove(event.session) == nil { fail("hook revoke without grant \(event.session)") }
                }
            case .notify(let session, let message):
                if dead.contains(session.handler) { fail("message to dead holder \(session): \(message)") }
                switch message {
                case .interruptionBegan:
                    begins += 1
                    if !interrupted.insert(session).inserted { fail("second interruptionBegan \(session)") }
                    if ducked.contains(session) { fail("interrupted while ducked \(session)") }
                case .interruptionEnded:
                    if interrupted.remove(session) == nil { fail("interruptionEnded without begin \(session)") }
                case .duckBegan:
                    begins += 1
                    if !ducked.insert(session).inserted { fail("second duckBegan \(session)") }
                    if interrupted.contains(session) { fail("ducked while interrupted \(session)") }
                case .duckEnded:
                    if ducked.remove(session) == nil { fail("duckEnded without begin \(session)") }
                case .granted, .callActivated:
                    if interrupted.contains(session) { fail("granted while interrupted \(session)") }
                case .denied, .delayed, .routeChanged, .callDeactivated:
                    break
                }
            }
        }
    }

    /// A dead holder's open begins are moot: nothing may be sent to it any more.
    mutating func kill(_ handler: HandlerID) {
        dead.insert(handler)
        interrupted = interrupted.filter { $0.handler != handler }
        ducked = ducked.filter { $0.handler != handler }
    }

    /// What holders were told must match the arbiter's own view.
    mutating func check(_ snapshot: ActivationSnapshot, step: String) {
        func ids(_ states: Set<SessionSnapshot.State>) -> Set<SessionID> {
            Set(snapshot.sessions.filter { states.contains($0.state) }.map(\.session))
        }
        if ids([.interrupted]) != interrupted { violations.append("\(step): interrupted \(interrupted) vs snapshot") }
        if ids([.ducked]) != ducked { violations.append("\(step): ducked \(ducked) vs snapshot") }
        if ids([.active, .ducked]) != playing { violations.append("\(step): hook playing \(playing) vs snapshot") }
        if snapshot.sessions.contains(where: { dead.contains($0.session.handler) }) {
            violations.append("\(step): a dead holder still holds a session")
        }
    }
}
