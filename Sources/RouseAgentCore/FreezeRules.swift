/// What a handler file says about freezing the handler (iOS's rules for suspended apps): `exits-on-suspend`
/// (`UIApplicationExitsOnSuspend`), `listening-sockets` and `exclusive-files` ("if it is found to be using a shared
/// resource, the app is killed"), `silent-audio-grace-seconds` (background audio must be audible). See docs/agent.md,
/// "Freezing and shared resources".
package struct FreezeRules: Sendable, Equatable {
    /// Terminate the handler where it would be frozen (`exits-on-suspend = true`).
    package var exitsOnSuspend = false
    /// What a listening socket found at freeze time does (`listening-sockets`).
    package var listeningSockets = ListeningSocketPolicy.report
    /// Files the handler must not hold a lock on while frozen (`exclusive-files`): absolute paths.
    package var exclusiveFiles: [String] = []
    /// How long a held playback session may be silent (corked, no stream, or no sound) before it stops keeping the
    /// handler from being frozen (`silent-audio-grace-seconds`).
    package var silentAudioGrace: Duration = .seconds(10)

    /// The defaults: frozen as before, listening sockets reported, no exclusive file, 10 s of silence allowed.
    package init() {}
}

/// What a listening socket found when the handler is about to be frozen does.
package enum ListeningSocketPolicy: String, Sendable, Equatable, CaseIterable {
    /// Logged, counted and shown in status; the handler is frozen.
    case report
    /// The handler is terminated instead of frozen.
    case terminate
}

/// A listening socket a handler holds: its protocol and local address as `/proc/net` shows them.
package struct ListeningSocket: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `tcp`, `tcp6`, `udp`, `udp6` or `unix`.
    package var proto: String
    /// `address:port` (inet) or the path (`@name` abstract, empty unnamed) of a unix socket.
    package var local: String

    /// A socket.
    package init(proto: String, local: String) {
        self.proto = proto
        self.local = local
    }

    /// `tcp 0.0.0.0:8080`.
    package var description: String { proto + " " + local }
}

/// What a handler holds when it is about to be frozen (read from `/proc` by the agent).
package struct HeldResources: Sendable, Equatable {
    /// Its listening sockets (TCP in LISTEN, unconnected bound UDP, accepting unix sockets).
    package var listeningSockets: [ListeningSocket]
    /// The declared exclusive files it holds a lock on.
    package var lockedExclusiveFiles: [String]

    /// What it holds.
    package init(listeningSockets: [ListeningSocket] = [], lockedExclusiveFiles: [String] = []) {
        self.listeningSockets = listeningSockets
        self.lockedExclusiveFiles = lockedExclusiveFiles
    }
}

/// The agent's choice when a handler's background time ends: freeze it, or terminate it (through the stop path).
package enum FreezeDecision: Sendable, Equatable {
    /// Freeze it; `reported` are the listening sockets it keeps while frozen (policy `report`).
    case freeze(reported: [ListeningSocket])
    /// Terminate it instead, for `reason`.
    case terminate(FreezeTermination)

    /// Decides for a handler with `rules` that holds `held` (nil: not looked at, as `exits-on-suspend` needs no look).
    package static func decide(_ rules: FreezeRules, held: HeldResources?) -> FreezeDecision {
        if rules.exitsOnSuspend { return .terminate(.exitsOnSuspend) }
        let held = held ?? HeldResources()
        if !held.lockedExclusiveFiles.isEmpty {
            return .terminate(.exclusiveResource(held.lockedExclusiveFiles.sorted()))
        }
        let sockets = held.listeningSockets.sorted { $0.description < $1.description }
        if !sockets.isEmpty && rules.listeningSockets == .terminate { return .terminate(.listeningSockets(sockets)) }
        return .freeze(reported: sockets)
    }

    /// Whether the decision needs to know what the handler holds (so the agent reads `/proc` only then).
    package static func needsHeldResources(_ rules: FreezeRules) -> Bool { !rules.exitsOnSuspend }
}

/// Why a handler is terminated instead of frozen.
package enum FreezeTermination: Sendable, Equatable {
    /// It declared `exits-on-suspend = true`.
    case exitsOnSuspend
    /// It holds a lock on declared exclusive files.
    case exclusiveResource([String])
    /// It listens (policy `terminate`).
    case listeningSockets([ListeningSocket])

    /// The reason logged and given to the stop path.
    package var reason: String {
        switch self {
        case .exitsOnSuspend: "exits on suspend"
        case .exclusiveResource(let files):
            "holds an exclusive resource past its background time: "
                + files.joined(separator: ",")
        case .listeningSockets(let sockets):
            "listens past its background time: "
                + sockets.map(\.description).joined(separator: ",")
        }
    }

    /// The counter it adds to (`exitsOnSuspend`, `exclusiveResource`, `listeningSockets`).
    package var counter: String {
        switch self {
        case .exitsOnSuspend: "exitsOnSuspend"
        case .exclusiveResource: "exclusiveResource"
        case .listeningSockets: "listeningSockets"
        }
    }
}
