import Foundation

/// One message of the agent's IPC protocol (version 1), in either direction. A flat JSON object: `v` is the
/// protocol version, `type` says which of the other members are meaningful (see `docs/agent.md`).
/// Unknown members are ignored; unknown `type`s are answered with an `error` frame.
public struct AgentMessage: Codable, Sendable, Equatable {
    /// The protocol version this library speaks.
    public static let version = 1

    /// Protocol version of the sender.
    public var v: Int
    /// What the message is: `register`, `push`, `reportCall`, `complete`, … (see ``AgentMessageType``).
    public var type: String
    /// Handler name (`register`, `registered`, `reregister`).
    public var handler: String?
    /// Push id (the gateway's delivery id) for `push`, `reportCall`, `complete`.
    public var pushID: String?
    /// `voip` or `background` (or another APNs push type) for `push`.
    public var pushType: String?
    /// APNs topic of a push or of a push token.
    public var topic: String?
    /// Push payload, base64 (the provider's bytes).
    public var payload: String?
    /// APNs `apns-id` of a push.
    public var apnsID: String?
    /// Push token for `credentials` (hex).
    public var token: String?
    /// For a VoIP `push`: whether the handler owes a call report for it.
    public var mustReport: Bool?
    /// Call identifier (`reportCall`, `callEnded`).
    public var callID: String?
    /// `newData`, `noData` or `failed` for `complete`.
    public var result: String?
    /// Background task name (`beginTask`, `taskExpiring`).
    public var taskName: String?
    /// Background task token (`taskBegun`, `endTask`, `taskExpiring`).
    public var taskID: Int?
    /// Lifecycle state (`lifecycle`: `background`, `active`, `inactive`, `suspended`…; `setState` from a handler).
    public var state: String?
    /// Gateway reachability (`reachability`).
    public var reachable: Bool?
    /// Error code (`error`).
    public var error: String?
    /// Human-readable detail (`error`), or the status document (`status`).
    public var detail: String?
    /// Seconds (remaining budget in `taskExpiring`, deadline in `push`).
    public var seconds: Double?
    /// Why the handler runs (`registered`): `voipPush`, `backgroundPush`, `user`, `connected`.
    public var launchReason: String?
    /// Correlates a request with its answer (`activate`, `deactivate`; echoed in `activation`, `ok`, `error`).
    public var requestID: Int?
    /// Activation session name chosen by the handler (`activate`, `deactivate`, `activation`); `call` is
    /// reserved for the call path.
    public var session: String?
    /// Session category (`activate`; `reportCall` for the call's own): `ambient`, `soloAmbient`, `playback`,
    /// `record`, `playAndRecord`.
    public var category: String?
    /// Session mode (`activate`, `reportCall`): `default`, `voiceChat`, `spokenAudio`, ….
    public var mode: String?
    /// Session options (`activate`, `reportCall`): `mixWithOthers`, `duckOthers`,
    /// `interruptSpokenAudioAndMixWithOthers`.
    public var options: [String]?
    /// Priority class (`activate`): `ambient`, `media`, `notification`, `navigation`, `assistant`, `alert`.
    public var role: String?
    /// Whether a request blocked only by a call may wait for it (`activate`).
    public var acceptsDelay: Bool?
    /// Whether the sessions this one interrupted may resume (`deactivate`, `callEnded`; default true for
    /// `callEnded`, false for `deactivate`, as `setActive(false)` without `.notifyOthersOnDeactivation`).
    public var notifyOthers: Bool?
    /// Activation event (`activation`): `granted`, `denied`, `delayed`, `interruptionBegan`,
    /// `interruptionEnded`, `duckBegan`, `duckEnded`, `routeChanged`, `callActivated`, `callDeactivated`.
    public var event: String?
    /// Why (`activation` denied / interruptionBegan / routeChanged; `routeChanged` from an admin).
    public var reason: String?
    /// `interruptionEnded`: whether the session is active again and may resume playing.
    public var shouldResume: Bool?
    /// Preserved state (`preserve`, `restoration`): restoration path (`calls/1234/ui`) → base64 data.
    public var pieces: [String: String]?
    /// Version of the handler that wrote the state (`preserve`, `restoration`).
    public var version: String?
    /// Version of the agent that wrote the archive (`restoration`).
    public var agentVersion: String?
    /// `register`: the handler opts in to state preservation.
    public var preserves: Bool?
    /// `restoreReply`: whether the offered state was taken (false: refused, the archive is discarded).
    public var accepted: Bool?
    /// `restoreReply`: paths whose identifier no longer matches current data (skipped, not an error).
    public var skipped: [String]?
    /// `restoreReply`: the path whose restore failed (the rest is discarded; the handler starts clean).
    public var failedAt: String?

    /// A message of `type` with no other members set.
    public init(type: AgentMessageType) {
        self.v = Self.version
        self.type = type.rawValue
    }

    /// The message type, parsed.
    public var kind: AgentMessageType { AgentMessageType(rawValue: type) }
}

/// The `type` of an ``AgentMessage``; open, so an unknown value survives verbatim.
public struct AgentMessageType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The wire value.
    public let rawValue: String
    /// Wraps a wire value.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The wire value.
    public var description: String { rawValue }

    // Handler → agent.
    /// First message on a connection: `handler`.
    public static let register = AgentMessageType(rawValue: "register")
    /// The incoming call for `pushID` is reported (`callID`).
    public static let reportCall = AgentMessageType(rawValue: "reportCall")
    /// A call ended (`callID`).
    public static let callEnded = AgentMessageType(rawValue: "callEnded")
    /// A background push is processed: `pushID`, `result`.
    public static let complete = AgentMessageType(rawValue: "complete")
    /// Begin a background task: `taskName`; answered with `taskBegun`.
    public static let beginTask = AgentMessageType(rawValue: "beginTask")
    /// End a background task: `taskID`.
    public static let endTask = AgentMessageType(rawValue: "endTask")
    /// The handler declares its state: `state` = `active`, `inactive` or `background`.
    public static let setState = AgentMessageType(rawValue: "setState")
    /// Status request (admin peers); answered with `status`.
    public static let status = AgentMessageType(rawValue: "status")
    /// Admin: register `handler` again (clears strikes).
    public static let reregister = AgentMessageType(rawValue: "reregister")
    /// Admin: the user starts (`state` = `started`) or stops (`stopped`) `handler`.
    public static let userControl = AgentMessageType(rawValue: "userControl")
    /// Activate an audio session: `requestID`, `session`, `category`, `mode`, `options`, `role`,
    /// `acceptsDelay`; answered with `activation` (`granted`, `denied` + `reason`, or `delayed`).
    public static let activate = AgentMessageType(rawValue: "activate")
    /// Deactivate a session: `requestID`, `session`, `notifyOthers`; answered with `ok`.
    public static let deactivate = AgentMessageType(rawValue: "deactivate")
    /// Admin (or a route source): the audio route changed, `reason`; forwarded to every active session.
    public static let routeChanged = AgentMessageType(rawValue: "routeChanged")
    /// Admin: who holds which session; answered with `sessionsReply`.
    public static let sessions = AgentMessageType(rawValue: "sessions")
    /// State to preserve (answer to `preserveRequest`, or at any time): `pieces`, `version`.
    public static let preserve = AgentMessageType(rawValue: "preserve")
    /// Answer to `restoration`: `accepted`, `skipped`, `failedAt`.
    public static let restoreReply = AgentMessageType(rawValue: "restoreReply")
    /// Admin: rotate the data key of the agent's sealed files; answered with `ok`, `detail` = the new key id.
    public static let rotateKey = AgentMessageType(rawValue: "rotateKey")

    // Agent → handler.
    /// Registration accepted: `handler`, `launchReason`.
    public static let registered = AgentMessageType(rawValue: "registered")
    /// A push token for `topic` (new or changed): `token`.
    public static let credentials = AgentMessageType(rawValue: "credentials")
    /// A push: `pushID`, `pushType`, `topic`, `payload`, `apnsID`, `mustReport`, `seconds` (deadline).
    public static let push = AgentMessageType(rawValue: "push")
    /// Answer to `beginTask`: `taskID`, `taskName`.
    public static let taskBegun = AgentMessageType(rawValue: "taskBegun")
    /// The background budget ends soon: end `taskID` (`seconds` left).
    public static let taskExpiring = AgentMessageType(rawValue: "taskExpiring")
    /// Lifecycle change: `state`.
    public static let lifecycle = AgentMessageType(rawValue: "lifecycle")
    /// Gateway reachability changed (coalesced while suspended): `reachable`.
    public static let reachability = AgentMessageType(rawValue: "reachability")
    /// Answer to `status`: `detail` holds the JSON document.
    public static let statusReply = AgentMessageType(rawValue: "statusReply")
    /// An activation event for `session`: `event`, `reason`, `shouldResume` (and `requestID` when it answers
    /// an `activate`).
    public static let activation = AgentMessageType(rawValue: "activation")
    /// Answer to `sessions`: `detail` holds the JSON snapshot.
    public static let sessionsReply = AgentMessageType(rawValue: "sessionsReply")
    /// Preserve now (`state`: `background`, `suspend`, `terminate` or `shutdown`); answer with `preserve`
    /// within the agent's preserve timeout.
    public static let preserveRequest = AgentMessageType(rawValue: "preserveRequest")
    /// Answer to `preserve`: the state is stored (`detail`: pieces kept, orphans dropped).
    public static let preserved = AgentMessageType(rawValue: "preserved")
    /// After `registered`, once per launch: the state preserved last time (`pieces`, `version`,
    /// `agentVersion`); answer with `restoreReply`.
    public static let restoration = AgentMessageType(rawValue: "restoration")
    /// A generic success answer to admin requests.
    public static let ok = AgentMessageType(rawValue: "ok")
    /// Something was wrong: `error`, `detail`. A protocol error closes the connection after it.
    public static let error = AgentMessageType(rawValue: "error")
}
