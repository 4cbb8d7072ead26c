// The payloads of ``AgentRequest``: each one's members by their wire names.

extension AgentRequest {
    /// `register`.
    public struct Register: Sendable, Equatable, Codable {
        /// The handler's name (its file in `handlers.d`).
        public var handler: String?
        /// `true`: the handler opts in to state preservation.
        public var preserves: Bool?

        /// A registration.
        public init(handler: String?, preserves: Bool? = nil) {
            self.handler = handler
            self.preserves = preserves
        }
    }

    /// `reportCall`, with the call session's configuration when the handler gives one.
    public struct ReportCall: Sendable, Equatable, Codable {
        /// The VoIP push the call answers, or the `wakeID` of the `voipSocketWake` it answers (none for an outgoing
        /// call).
        public var pushID: String?
        /// The call's identifier.
        public var callID: String?
        /// Session category of the call's session (`playAndRecord`…).
        public var category: String?
        /// Session mode (`voiceChat`…).
        public var mode: String?
        /// Session options (`mixWithOthers`…).
        public var options: [String]?

        /// A call report.
        public init(
            pushID: String?, callID: String?, category: String? = nil, mode: String? = nil, options: [String]? = nil
        ) {
            self.pushID = pushID
            self.callID = callID
            self.category = category
            self.mode = mode
            self.options = options
        }
    }

    /// `callEnded`.
    public struct CallEnded: Sendable, Equatable, Codable {
        /// The call's identifier.
        public var callID: String?
        /// Whether the sessions the call interrupted may resume (absent: true).
        public var notifyOthers: Bool?

        /// A call's end.
        public init(callID: String?, notifyOthers: Bool? = nil) {
            self.callID = callID
            self.notifyOthers = notifyOthers
        }
    }

    /// `complete`.
    public struct Complete: Sendable, Equatable, Codable {
        /// The background push.
        public var pushID: String?
        /// `newData`, `noData` or `failed` (``BackgroundFetchResult``).
        public var result: String?

        /// A completion.
        public init(pushID: String?, result: String?) {
            self.pushID = pushID
            self.result = result
        }
    }

    /// `beginTask`.
    public struct BeginTask: Sendable, Equatable, Codable {
        /// The task's name (absent: `unnamed`).
        public var taskName: String?

        /// A task request.
        public init(taskName: String?) { self.taskName = taskName }
    }

    /// `endTask`.
    public struct EndTask: Sendable, Equatable, Codable {
        /// The token `taskBegun` gave.
        public var taskID: Int?

        /// A task's end.
        public init(taskID: Int?) { self.taskID = taskID }
    }

    /// `setState`.
    public struct SetState: Sendable, Equatable, Codable {
        /// `active`, `inactive` or `background`.
        public var state: String?

        /// A state declaration.
        public init(state: String?) { self.state = state }
    }

    /// `activate`.
    public struct Activate: Sendable, Equatable, Codable {
        /// The session's name, chosen by the handler (`call` is reserved for the call path).
        public var session: String?
        /// Session category: `ambient`, `soloAmbient`, `playback`, `record`, `playAndRecord`.
        public var category: String?
        /// Session mode: `default`, `voiceChat`, `spokenAudio`, ….
        public var mode: String?
        /// Session options: `mixWithOthers`, `duckOthers`, `interruptSpokenAudioAndMixWithOthers`.
        public var options: [String]?
        /// Priority class: `ambient`, `media` (absent), `notification`, `navigation`, `assistant`, `alert`.
        public var role: String?
        /// Whether a request blocked only by a call may wait for it.
        public var acceptsDelay: Bool?

        /// An activation request.
        public init(
            session: String?, category: String?, mode: String? = nil, options: [String]? = nil, role: String? = nil,
            acceptsDelay: Bool? = nil
        ) {
            self.session = session
            self.category = category
            self.mode = mode
            self.options = options
            self.role = role
            self.acceptsDelay = acceptsDelay
        }
    }

    /// `deactivate`.
    public struct Deactivate: Sendable, Equatable, Codable {
        /// The session's name.
        public var session: String?
        /// Whether the sessions it interrupted may resume (absent: false, as `setActive(false)` without
        /// `.notifyOthersOnDeactivation`).
        public var notifyOthers: Bool?

        /// A deactivation.
        public init(session: String?, notifyOthers: Bool? = nil) {
            self.session = session
            self.notifyOthers = notifyOthers
        }
    }

    /// `preserve`.
    public struct Preserve: Sendable, Equatable, Codable {
        /// Restoration path (`calls/1234/ui`) → base64 data.
        public var pieces: [String: String]?
        /// The handler's version (read back at the next launch).
        public var version: String?

        /// State to preserve.
        public init(pieces: [String: String]?, version: String?) {
            self.pieces = pieces
            self.version = version
        }
    }

    /// `restoreReply`.
    public struct RestoreReply: Sendable, Equatable, Codable {
        /// Whether the offered state was taken (false or absent: refused, the archive is discarded).
        public var accepted: Bool?
        /// Paths whose identifier no longer matches current data (skipped, not an error).
        public var skipped: [String]?
        /// The path whose restore failed (the rest is discarded; the handler starts clean).
        public var failedAt: String?

        /// An answer to an offer.
        public init(accepted: Bool?, skipped: [String]? = nil, failedAt: String? = nil) {
            self.accepted = accepted
            self.skipped = skipped
            self.failedAt = failedAt
        }
    }

    /// `reregister`.
    public struct Reregister: Sendable, Equatable, Codable {
        /// The handler.
        public var handler: String?

        /// A re-registration.
        public init(handler: String?) { self.handler = handler }
    }

    /// `userControl`.
    public struct UserControl: Sendable, Equatable, Codable {
        /// The handler.
        public var handler: String?
        /// `started` or `stopped` (the user's explicit quit; anything else starts).
        public var state: String?

        /// A user's start or stop.
        public init(handler: String?, state: String?) {
            self.handler = handler
            self.state = state
        }
    }

    /// `routeChanged`.
    public struct RouteChange: Sendable, Equatable, Codable {
        /// `newDeviceAvailable`, `oldDeviceUnavailable`, `categoryChange`, `override`, … (open).
        public var reason: String?

        /// A route change.
        public init(reason: String?) { self.reason = reason }
    }
}
