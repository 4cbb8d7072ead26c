/// One handler's background audio under iOS's rule "Apps that play audio content in the background must play audible
/// content and not silence": while the handler is in the background and only playback sessions keep it from being
/// frozen, its streams are checked when its background time would otherwise end, then every grace period; silent
/// (no stream, corked, or no sound) for a whole grace period, the sessions stop protecting it and it is frozen like
/// any other. A value: the agent feeds it what it holds and what each check saw, and runs the checks it asks for.
/// No check is planned while no session is held in the background (nothing polls).
package struct AudibleAudioWatch: Sendable, Equatable {
    /// What one check of the handler's streams saw.
    package enum Observation: Sendable, Equatable {
        /// A stream of the handler is running and not silent.
        case audible
        /// Nothing audible, and why (`no stream`, `corked`, `no sound`).
        case silent(String)
        /// The audio server could not be asked, and why: the sessions keep protecting the handler (nothing can be
        /// said about its sound), and the check is tried again a grace period later.
        case unavailable(String)
    }

    /// Whether the handler is being watched (in the background, protected by playback only).
    package private(set) var watching = false
    /// When the next check is due (nil: none planned, or one is under way).
    package private(set) var nextCheck: Duration?
    /// Since when every check found it silent.
    package private(set) var silentSince: Duration?
    /// Silent past the grace: its sessions no longer keep it from being frozen.
    package private(set) var silenced = false

    /// Nothing watched.
    package init() {}

    /// Whether the handler is in the background with only playback keeping it from being frozen (`protected`) at
    /// `now`; the first check is `firstCheckAfter` (its suspend-after delay) after it began. Not protected: the watch
    /// ends and is forgotten.
    package mutating func protected(_ protected: Bool, now: Duration, firstCheckAfter: Duration) {
        guard protected else {
            self = AudibleAudioWatch()
            return
        }
        guard !watching else { return }
        watching = true
        nextCheck = now + firstCheckAfter
    }

    /// Whether a check is due at `now`.
    package func isDue(now: Duration) -> Bool { nextCheck.map { $0 <= now } ?? false }

    /// A check started: none other until its observation.
    package mutating func checkStarted() { nextCheck = nil }

    /// The observation of the check that ended at `now`. True when the handler's sessions stop protecting it now
    /// (silent for at least `grace`); otherwise the next check is planned.
    package mutating func observed(_ observation: Observation, now: Duration, grace: Duration) -> Bool {
        guard watching, !silenced else { return false }
        switch observation {
        case .audible, .unavailable:
            silentSince = nil
            nextCheck = now + grace
        case .silent:
            let since = silentSince ?? now
            silentSince = since
            if now - since >= grace {
                silenced = true
                nextCheck = nil
                return true
            }
            nextCheck = since + grace
        }
        return false
    }
}
