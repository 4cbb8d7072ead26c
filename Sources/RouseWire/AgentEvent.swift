/// A message from the agent (IPC protocol version 1): notices to a handler and answers to requests. On the
/// wire it is the frame's flat JSON object (``IPCFrame``): `"type"` names the case and the payload's members
/// sit beside it (docs/agent.md). The agent always sends the members that are not optional. A `type` this
/// version does not know decodes as ``unknown(type:)``.
public enum AgentEvent: IPCMessage {
    /// Registration accepted.
    case registered(Registered)
    /// A push token for a topic (new or changed).
    case credentials(Credentials)
    /// A push.
    case push(Push)
    /// Answer to `beginTask`.
    case taskBegun(TaskBegun)
    /// The background budget ends soon: end the task.
    case taskExpiring(TaskExpiring)
    /// The handler's lifecycle changed.
    case lifecycle(Lifecycle)
    /// Gateway reachability changed (coalesced while suspended).
    case reachability(Reachability)
    /// Answer to `status`.
    case statusReply(StatusReply)
    /// An audio session event (an answer to `activate` carries its `requestID`).
    case activation(Activation)
    /// Answer to `sessions`.
    case sessionsReply(SessionsReply)
    /// Preserve now; answer with `preserve`.
    case preserveRequest(PreserveRequest)
    /// Answer to `preserve`: the state is stored.
    case preserved(Preserved)
    /// Once per launch, after `registered`: the state preserved last time; answer with `restoreReply`.
    case restoration(Restoration)
    /// A background-transfer task's state: answer, progress, result (a download's file descriptor with it).
    case transferTask(TransferTask)
    /// Answer to `transferSession`.
    case transferSessionReply(TransferSessionReply)
    /// Every task of a session finished: answer with `transfersHandled`.
    case transferSessionDone(TransferSessionDone)
    /// A background-fetch opportunity: answer with `fetchComplete`.
    case fetch(Fetch)
    /// A watched VoIP socket: the answer to `addVoIPSocket`, or the socket handed back after a relaunch.
    case voipSocket(VoIPSocket)
    /// Data arrived on watched sockets: report the call (or `voipWakeHandled`) within the deadline.
    case voipSocketWake(VoIPSocketWake)
    /// Watched sockets closed or failed while the handler slept (one message per kind, at its next wake).
    case voipSocketChanged(VoIPSocketChanged)
    /// The keep-alive time: maintain the service connection, then `keepAliveDone`.
    case keepAlive(KeepAlive)
    /// The session is locking or was unlocked (protected data).
    case protectedData(ProtectedData)
    /// Answer to `protectedFile`.
    case protectedFileReply(ProtectedFileReply)
    /// The user clicked a notification of the handler or chose one of its actions.
    case notificationResponse(NotificationResponse)
    /// Answer to `listNotifications` and `scheduleNotification`.
    case notificationsReply(NotificationsReply)
    /// Memory is short (a PSI trigger fired): free what can be rebuilt.
    case memoryWarning(MemoryWarning)
    /// The agent is about to stop the handler: finish up within `seconds`, then exit (iOS's `applicationWillTerminate`).
    case willTerminate(WillTerminate)
    /// The wall clock stepped or the time zone changed (coalesced while suspended).
    case timeChanged(TimeChanged)
    /// A success answer (`deactivate`, admin requests).
    case ok(OK)
    /// Something was wrong. A protocol error closes the connection after it.
    case error(Failure)

    /// A `type` this version does not know.
    case unknown(type: String)

    /// The `type`s this version knows.
    package enum Kind: String, CaseIterable {
        case registered, credentials, push, taskBegun, taskExpiring, lifecycle, reachability, statusReply
        case activation, sessionsReply, preserveRequest, preserved, restoration, ok, error
        case transferTask, transferSessionReply, transferSessionDone, fetch
        case voipSocket, voipSocketWake, voipSocketChanged, keepAlive
        case protectedData, protectedFileReply
        case notificationResponse, notificationsReply
        case memoryWarning, willTerminate, timeChanged
    }

    /// The `type` member.
    public var type: String {
        let kind: Kind
        switch self {
        case .registered: kind = .registered
        case .credentials: kind = .credentials
        case .push: kind = .push
        case .taskBegun: kind = .taskBegun
        case .taskExpiring: kind = .taskExpiring
        case .lifecycle: kind = .lifecycle
        case .reachability: kind = .reachability
        case .statusReply: kind = .statusReply
        case .activation: kind = .activation
        case .sessionsReply: kind = .sessionsReply
        case .preserveRequest: kind = .preserveRequest
        case .preserved: kind = .preserved
        case .restoration: kind = .restoration
        case .ok: kind = .ok
        case .error: kind = .error
        case .transferTask: kind = .transferTask
        case .transferSessionReply: kind = .transferSessionReply
        case .transferSessionDone: kind = .transferSessionDone
        case .fetch: kind = .fetch
        case .voipSocket: kind = .voipSocket
        case .voipSocketWake: kind = .voipSocketWake
        case .voipSocketChanged: kind = .voipSocketChanged
        case .keepAlive: kind = .keepAlive
        case .protectedData: kind = .protectedData
        case .protectedFileReply: kind = .protectedFileReply
        case .notificationResponse: kind = .notificationResponse
        case .notificationsReply: kind = .notificationsReply
        case .memoryWarning: kind = .memoryWarning
        case .willTerminate: kind = .willTerminate
        case .timeChanged: kind = .timeChanged
        case .unknown(let type): return type
        }
        return kind.rawValue
    }

    private enum TypeKey: String, CodingKey { case type }

    /// Decodes the message from the frame's object.
    public init(from decoder: any Decoder) throws {
        let type = try decoder.container(keyedBy: TypeKey.self).decode(String.self, forKey: .type)
        guard let kind = Kind(rawValue: type) else {
            self = .unknown(type: type)
            return
        }
        switch kind {
        case .registered: self = .registered(try Registered(from: decoder))
        case .credentials: self = .credentials(try Credentials(from: decoder))
        case .push: self = .push(try Push(from: decoder))
        case .taskBegun: self = .taskBegun(try TaskBegun(from: decoder))
        case .taskExpiring: self = .taskExpiring(try TaskExpiring(from: decoder))
        case .lifecycle: self = .lifecycle(try Lifecycle(from: decoder))
        case .reachability: self = .reachability(try Reachability(from: decoder))
        case .statusReply: self = .statusReply(try StatusReply(from: decoder))
        case .activation: self = .activation(try Activation(from: decoder))
        case .sessionsReply: self = .sessionsReply(try SessionsReply(from: decoder))
        case .preserveRequest: self = .preserveRequest(try PreserveRequest(from: decoder))
        case .preserved: self = .preserved(try Preserved(from: decoder))
        case .restoration: self = .restoration(try Restoration(from: decoder))
        case .ok: self = .ok(try OK(from: decoder))
        case .error: self = .error(try Failure(from: decoder))
        case .transferTask: self = .transferTask(try TransferTask(from: decoder))
        case .transferSessionReply: self = .transferSessionReply(try TransferSessionReply(from: decoder))
        case .transferSessionDone: self = .transferSessionDone(try TransferSessionDone(from: decoder))
        case .fetch: self = .fetch(try Fetch(from: decoder))
        case .voipSocket: self = .voipSocket(try VoIPSocket(from: decoder))
        case .voipSocketWake: self = .voipSocketWake(try VoIPSocketWake(from: decoder))
        case .voipSocketChanged: self = .voipSocketChanged(try VoIPSocketChanged(from: decoder))
        case .keepAlive: self = .keepAlive(try KeepAlive(from: decoder))
        case .protectedData: self = .protectedData(try ProtectedData(from: decoder))
        case .protectedFileReply: self = .protectedFileReply(try ProtectedFileReply(from: decoder))
        case .notificationResponse: self = .notificationResponse(try NotificationResponse(from: decoder))
        case .notificationsReply: self = .notificationsReply(try NotificationsReply(from: decoder))
        case .memoryWarning: self = .memoryWarning(try MemoryWarning(from: decoder))
        case .willTerminate: self = .willTerminate(try WillTerminate(from: decoder))
        case .timeChanged: self = .timeChanged(try TimeChanged(from: decoder))
        }
    }

    /// Encodes `type` and the payload's members into the frame's object.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TypeKey.self)
        try container.encode(type, forKey: .type)
        switch self {
        case .registered(let payload): try payload.encode(to: encoder)
        case .credentials(let payload): try payload.encode(to: encoder)
        case .push(let payload): try payload.encode(to: encoder)
        case .taskBegun(let payload): try payload.encode(to: encoder)
        case .taskExpiring(let payload): try payload.encode(to: encoder)
        case .lifecycle(let payload): try payload.encode(to: encoder)
        case .reachability(let payload): try payload.encode(to: encoder)
        case .statusReply(let payload): try payload.encode(to: encoder)
        case .activation(let payload): try payload.encode(to: encoder)
        case .sessionsReply(let payload): try payload.encode(to: encoder)
        case .preserveRequest(let payload): try payload.encode(to: encoder)
        case .preserved(let payload): try payload.encode(to: encoder)
        case .restoration(let payload): try payload.encode(to: encoder)
        case .ok(let payload): try payload.encode(to: encoder)
        case .error(let payload): try payload.encode(to: encoder)
        case .transferTask(let payload): try payload.encode(to: encoder)
        case .transferSessionReply(let payload): try payload.encode(to: encoder)
        case .transferSessionDone(let payload): try payload.encode(to: encoder)
        case .fetch(let payload): try payload.encode(to: encoder)
        case .voipSocket(let payload): try payload.encode(to: encoder)
        case .voipSocketWake(let payload): try payload.encode(to: encoder)
        case .voipSocketChanged(let payload): try payload.encode(to: encoder)
        case .keepAlive(let payload): try payload.encode(to: encoder)
        case .protectedData(let payload): try payload.encode(to: encoder)
        case .protectedFileReply(let payload): try payload.encode(to: encoder)
        case .notificationResponse(let payload): try payload.encode(to: encoder)
        case .notificationsReply(let payload): try payload.encode(to: encoder)
        case .memoryWarning(let payload): try payload.encode(to: encoder)
        case .willTerminate(let payload): try payload.encode(to: encoder)
        case .timeChanged(let payload): try payload.encode(to: encoder)
        case .unknown: break
        }
    }
}
