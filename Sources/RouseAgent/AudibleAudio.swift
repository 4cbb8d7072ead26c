import RouseAgentCore

/// Audible background audio: each watched handler's ``AudibleAudioWatch`` and the one timer of their checks. Owned by
/// the ``Agent`` and touched only on its isolation (see Agent+Audible.swift).
final class AudibleAudio {
    /// The watches, by handler (only handlers in the background protected by playback alone).
    var watches: [String: AudibleAudioWatch] = [:]
    /// The next check's timer (disarmed while no watch plans one).
    let timer: AgentTimer

    init(timer: AgentTimer) { self.timer = timer }

    /// The earliest planned check.
    var nextCheck: Duration? { watches.values.compactMap(\.nextCheck).min() }
}
