import RouseAgentCore

/// How often the freeze-time rules acted (status `freeze`; docs/agent.md, "Freezing and shared resources").
package struct FreezeCounters: Codable, Sendable, Equatable {
    /// Handlers terminated where they would have been frozen, for `exits-on-suspend = true`.
    package var exitsOnSuspend = 0
    /// Handlers terminated for holding a lock on a declared exclusive file past their background time.
    package var exclusiveResource = 0
    /// Handlers terminated for listening past their background time (`listening-sockets = "terminate"`).
    package var listeningSockets = 0
    /// Freezes of handlers that kept listening sockets (`listening-sockets = "report"`).
    package var listeningSocketsReported = 0
    /// Held playback sessions found silent past their grace: they no longer kept the handler from being frozen.
    package var silentAudio = 0
    /// Checks of held background playback run against the audio server.
    package var audibleChecks = 0

    /// No event yet.
    package init() {}
}

/// The freeze-time rules' state: counters, the listening sockets each frozen handler kept (for status). Owned by
/// the ``Agent`` and touched only on its isolation.
final class FreezeChecks {
    /// The counters.
    var counters = FreezeCounters()
    /// The listening sockets each handler kept when it was last frozen.
    private var reported: [String: [ListeningSocket]] = [:]

    /// A termination instead of a freeze, counted.
    func count(_ termination: FreezeTermination) {
        switch termination {
        case .exitsOnSuspend: counters.exitsOnSuspend += 1
        case .exclusiveResource: counters.exclusiveResource += 1
        case .listeningSockets: counters.listeningSockets += 1
        }
    }

    /// `name` was frozen keeping `sockets` (none: nothing to report).
    func frozen(_ name: String, keeping sockets: [ListeningSocket]) {
        reported[name] = sockets.isEmpty ? nil : sockets
        if !sockets.isEmpty { counters.listeningSocketsReported += 1 }
    }

    /// The listening sockets `name` kept when it was last frozen.
    func listeningSockets(of name: String) -> [ListeningSocket]? { reported[name] }
}
