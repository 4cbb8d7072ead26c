// The payloads of ``AgentEvent``: each one's members by their wire names (Swift names differ only where
// the wire name says less: `PreserveRequest.reason` is `state`, `Failure.code` is `error`).

extension AgentEvent {
    /// `registered`.
    public struct Registered: Sendable, Equatable, Codable {
        /// The handler's name.
        public var handler: String
        /// Why it runs: `voipPush`, `backgroundPush`, `user`, `connected`.
        public var launchReason: String

        /// A registration's acceptance.
        public init(handler: String, launchReason: String) {
            self.handler = handler
            self.launchReason = launchReason
        }
    }

    /// `credentials` (PushKit's `didUpdate pushCredentials`).
    public struct Credentials: Sendable, Equatable, Codable {
        /// The APNs topic the token is for.
        public var topic: String
        /// The push token (hex).
        public var token: String

        /// A token.
        public init(topic: String, token: String) {
            self.topic = topic
            self.token = token
        }
    }

    /// `push`.
    public struct Push: Sendable, Equatable, Codable {
        /// The gateway's delivery id (what `reportCall` and `complete` name).
        public var pushID: String
        /// `voip`, `background` or another APNs push type.
        public var pushType: String
        /// APNs topic.
        public var topic: String
        /// The provider's payload, base64.
        public var payload: String
        /// APNs `apns-id`.
        public var apnsID: String
        /// For a VoIP push: whether the handler owes a call report for it (absent for other pushes).
        public var mustReport: Bool?
        /// The deadline in seconds (0: none).
        public var seconds: Double

        /// A push.
        public init(
            pushID: String, pushType: String, topic: String, payload: String, apnsID: String, mustReport: Bool?,
            seconds: Double
        ) {
            self.pushID = pushID
            self.pushType = pushType
            self.topic = topic
            self.payload = payload
            self.apnsID = apnsID
            self.mustReport = mustReport
            self.seconds = seconds
        }
    }

    /// `taskBegun`.
    public struct TaskBegun: Sendable, Equatable, Codable {
        /// The task's token (what `endTask` names).
        public var taskID: Int
        /// The task's name.
        public var taskName: String

        /// A task's start.
        public init(taskID: Int, taskName: String) {
            self.taskID = taskID
            self.taskName = taskName
        }
    }

    /// `taskExpiring`.
    public struct TaskExpiring: Sendable, Equatable, Codable {
        /// The task's token.
        public var taskID: Int
        /// The task's name.
        public var taskName: String
        /// Seconds left.
        public var seconds: Double

        /// An expiration notice.
        public init(taskID: Int, taskName: String, seconds: Double) {
            self.taskID = taskID
            self.taskName = taskName
            self.seconds = seconds
        }
    }

    /// `lifecycle`.
    public struct Lifecycle: Sendable, Equatable, Codable {
        /// `background`, `active`, `inactive`, `suspended`, ….
        public var state: String

        /// A lifecycle change.
        public init(state: String) { self.state = state }
    }

    /// `reachability`.
    public struct Reachability: Sendable, Equatable, Codable {
        /// Whether the gateway is reachable.
        public var reachable: Bool

        /// A reachability notice.
        public init(reachable: Bool) { self.reachable = reachable }
    }

    /// `statusReply`.
    public struct StatusReply: Sendable, Equatable, Codable {
        /// The status document (JSON).
        public var detail: String

        /// A status answer.
        public init(detail: String) { self.detail = detail }
    }

    /// `activation`: `event` with its `reason` or `shouldResume` (RouseActivation's `ActivationMessage`, by
    /// name: an event this version does not know still arrives).
    public struct Activation: Sendable, Equatable, Codable {
        /// The handler's session.
        public var session: String
        /// `granted`, `denied`, `delayed`, `interruptionBegan`, `interruptionEnded`, `duckBegan`, `duckEnded`,
        /// `routeChanged`, `callActivated`, `callDeactivated`.
        public var event: String
        /// Why (`denied`, `interruptionBegan`, `routeChanged`).
        public var reason: String?
        /// `interruptionEnded`: whether the session is active again and may resume playing.
        public var shouldResume: Bool?

        /// An activation event.
        public init(session: String, event: String, reason: String? = nil, shouldResume: Bool? = nil) {
            self.session = session
            self.event = event
            self.reason = reason
            self.shouldResume = shouldResume
        }
    }

    /// `sessionsReply`.
    public struct SessionsReply: Sendable, Equatable, Codable {
        /// The activation snapshot (JSON).
        public var detail: String

        /// A sessions answer.
        public init(detail: String) { self.detail = detail }
    }

    /// `preserveRequest`.
    public struct PreserveRequest: Sendable, Equatable, Codable {
        /// Why: `background`, `suspend`, `terminate` or `shutdown` (wire name `state`).
        public var reason: String

        /// A request to preserve.
        public init(reason: String) { self.reason = reason }

        private enum CodingKeys: String, CodingKey { case reason = "state" }
    }

    /// `preserved`.
    public struct Preserved: Sendable, Equatable, Codable {
        /// Pieces kept, orphans dropped, in words.
        public var detail: String

        /// A preservation's receipt.
        public init(detail: String) { self.detail = detail }
    }

    /// `restoration`.
    public struct Restoration: Sendable, Equatable, Codable {
        /// Restoration path → base64 data.
        public var pieces: [String: String]
        /// Version of the handler that wrote the state.
        public var version: String
        /// Version of the agent that wrote the archive.
        public var agentVersion: String

        /// An offer.
        public init(pieces: [String: String], version: String, agentVersion: String) {
            self.pieces = pieces
            self.version = version
            self.agentVersion = agentVersion
        }
    }

    /// `ok`.
    public struct OK: Sendable, Equatable, Codable {
        /// What the request produced, when it produces something (`rotateKey`: the new key id).
        public var detail: String?
        /// The session a `deactivate` named.
        public var session: String?

        /// A success.
        public init(detail: String? = nil, session: String? = nil) {
            self.detail = detail
            self.session = session
        }
    }

    /// `error`.
    public struct Failure: Sendable, Equatable, Codable {
        /// The error code (wire name `error`): `badRequest`, `notAuthorized`, `malformedFrame`, ….
        public var code: String
        /// What was wrong.
        public var detail: String

        /// An error.
        public init(code: String, detail: String) {
            self.code = code
            self.detail = detail
        }

        private enum CodingKeys: String, CodingKey {
            case code = "error"
            case detail
        }
    }
}
