/// A message to the agent (IPC protocol version 1): from a handler, or from an admin tool (`rouse agent …`).
/// On the wire it is the frame's flat JSON object (``IPCFrame``): `"type"` names the case and the payload's
/// members sit beside it (docs/agent.md). Members a peer may leave out are optional: the agent answers their
/// absence with a precise `error` frame, as version 1 always did. A `type` this version does not know decodes
/// as ``unknown(type:)``.
public enum AgentRequest: IPCMessage {
    // Handler → agent.
    /// First message on a connection: who the handler is.
    case register(Register)
    /// The incoming call for a VoIP push is reported (or an outgoing call, with no push).
    case reportCall(ReportCall)
    /// A call ended.
    case callEnded(CallEnded)
    /// A background push is processed.
    case complete(Complete)
    /// Begin a background task; answered with `taskBegun`.
    case beginTask(BeginTask)
    /// End a background task.
    case endTask(EndTask)
    /// The handler declares its state (foreground or background).
    case setState(SetState)
    /// Activate an audio session; answered with `activation` (`granted`, `denied`, `delayed`).
    case activate(Activate)
    /// Deactivate an audio session; answered with `ok`.
    case deactivate(Deactivate)
    /// State to preserve (answer to `preserveRequest`, or at any time); answered with `preserved`.
    case preserve(Preserve)
    /// Answer to `restoration`.
    case restoreReply(RestoreReply)
    /// Create or reattach a background-transfer session; answered with `transferSessionReply`.
    case transferSession(TransferSession)
    /// Add a download or upload task to a session; answered with `transferTask`.
    case addTransfer(AddTransfer)
    /// Cancel a task; answered with `transferTask`.
    case cancelTransfer(CancelTransfer)
    /// A session's events are handled (its completion); answered with `ok`.
    case transfersHandled(TransfersHandled)
    /// A background fetch ended.
    case fetchComplete(FetchComplete)
    /// Watch a connected socket (passed with the frame) while the handler sleeps; answered with `voipSocket`.
    case addVoIPSocket(AddVoIPSocket)
    /// Stop watching a socket; answered with `ok`.
    case removeVoIPSocket(RemoveVoIPSocket)
    /// A socket wake carried no call: nothing owed for it; answered with `ok`.
    case voipWakeHandled(VoIPWakeHandled)
    /// Wake the handler at an interval (≥ 600 s) to keep its service connection; answered with `ok`.
    case setKeepAlive(SetKeepAlive)
    /// No more keep-alive wakes; answered with `ok`.
    case clearKeepAlive
    /// A keep-alive's work is done; answered with `ok`.
    case keepAliveDone(KeepAliveDone)
    /// Write, read, re-class or remove a protected file; answered with `protectedFileReply`.
    case protectedFile(ProtectedFile)
    /// Schedule a local notification; answered with `notificationsReply`.
    case scheduleNotification(LocalNotification)
    /// The pending local notifications; answered with `notificationsReply`.
    case listNotifications(ListNotifications)
    /// Cancel pending local notifications; answered with `ok`.
    case cancelNotifications(CancelNotifications)
    /// Restoration is over for this launch (the handler is up with its state): a crash from now on keeps the state.
    case restorationFinished

    // Admin → agent.
    /// The agent's status; answered with `statusReply`.
    case status
    /// Who holds which audio session; answered with `sessionsReply`.
    case sessions
    /// Re-seal every file the agent stores under a new data key; answered with `ok` (`detail`: the key id).
    case rotateKey
    /// Register a handler again (clears its strikes); answered with `ok`.
    case reregister(Reregister)
    /// The user starts or stops a handler; answered with `ok`.
    case userControl(UserControl)
    /// The audio route changed (an external route source); answered with `ok`.
    case routeChanged(RouteChange)
    /// Every handler's transfer sessions and tasks; answered with `statusReply` (`detail`: JSON).
    case transfers

    /// A `type` this version does not know.
    case unknown(type: String)

    /// The `type`s this version knows.
    package enum Kind: String, CaseIterable {
        case register, reportCall, callEnded, complete, beginTask, endTask, setState, activate, deactivate
        case preserve, restoreReply, status, sessions, rotateKey, reregister, userControl, routeChanged
        case transferSession, addTransfer, cancelTransfer, transfersHandled, transfers, fetchComplete
        case addVoIPSocket, removeVoIPSocket, voipWakeHandled, setKeepAlive, clearKeepAlive, keepAliveDone
        case protectedFile
        case scheduleNotification, listNotifications, cancelNotifications
        case restorationFinished
    }

    /// The `type` member.
    public var type: String {
        let kind: Kind
        switch self {
        case .register: kind = .register
        case .reportCall: kind = .reportCall
        case .callEnded: kind = .callEnded
        case .complete: kind = .complete
        case .beginTask: kind = .beginTask
        case .endTask: kind = .endTask
        case .setState: kind = .setState
        case .activate: kind = .activate
        case .deactivate: kind = .deactivate
        case .preserve: kind = .preserve
        case .restoreReply: kind = .restoreReply
        case .status: kind = .status
        case .sessions: kind = .sessions
        case .rotateKey: kind = .rotateKey
        case .reregister: kind = .reregister
        case .userControl: kind = .userControl
        case .routeChanged: kind = .routeChanged
        case .transferSession: kind = .transferSession
        case .addTransfer: kind = .addTransfer
        case .cancelTransfer: kind = .cancelTransfer
        case .transfersHandled: kind = .transfersHandled
        case .transfers: kind = .transfers
        case .fetchComplete: kind = .fetchComplete
        case .addVoIPSocket: kind = .addVoIPSocket
        case .removeVoIPSocket: kind = .removeVoIPSocket
        case .voipWakeHandled: kind = .voipWakeHandled
        case .setKeepAlive: kind = .setKeepAlive
        case .clearKeepAlive: kind = .clearKeepAlive
        case .restorationFinished: kind = .restorationFinished
        case .keepAliveDone: kind = .keepAliveDone
        case .protectedFile: kind = .protectedFile
        case .scheduleNotification: kind = .scheduleNotification
        case .listNotifications: kind = .listNotifications
        case .cancelNotifications: kind = .cancelNotifications
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
        case .register: self = .register(try Register(from: decoder))
        case .reportCall: self = .reportCall(try ReportCall(from: decoder))
        case .callEnded: self = .callEnded(try CallEnded(from: decoder))
        case .complete: self = .complete(try Complete(from: decoder))
        case .beginTask: self = .beginTask(try BeginTask(from: decoder))
        case .endTask: self = .endTask(try EndTask(from: decoder))
        case .setState: self = .setState(try SetState(from: decoder))
        case .activate: self = .activate(try Activate(from: decoder))
        case .deactivate: self = .deactivate(try Deactivate(from: decoder))
        case .preserve: self = .preserve(try Preserve(from: decoder))
        case .restoreReply: self = .restoreReply(try RestoreReply(from: decoder))
        case .status: self = .status
        case .sessions: self = .sessions
        case .rotateKey: self = .rotateKey
        case .reregister: self = .reregister(try Reregister(from: decoder))
        case .userControl: self = .userControl(try UserControl(from: decoder))
        case .routeChanged: self = .routeChanged(try RouteChange(from: decoder))
        case .transferSession: self = .transferSession(try TransferSession(from: decoder))
        case .addTransfer: self = .addTransfer(try AddTransfer(from: decoder))
        case .cancelTransfer: self = .cancelTransfer(try CancelTransfer(from: decoder))
        case .transfersHandled: self = .transfersHandled(try TransfersHandled(from: decoder))
        case .transfers: self = .transfers
        case .fetchComplete: self = .fetchComplete(try FetchComplete(from: decoder))
        case .addVoIPSocket: self = .addVoIPSocket(try AddVoIPSocket(from: decoder))
        case .removeVoIPSocket: self = .removeVoIPSocket(try RemoveVoIPSocket(from: decoder))
        case .voipWakeHandled: self = .voipWakeHandled(try VoIPWakeHandled(from: decoder))
        case .setKeepAlive: self = .setKeepAlive(try SetKeepAlive(from: decoder))
        case .clearKeepAlive: self = .clearKeepAlive
        case .restorationFinished: self = .restorationFinished
        case .keepAliveDone: self = .keepAliveDone(try KeepAliveDone(from: decoder))
        case .protectedFile: self = .protectedFile(try ProtectedFile(from: decoder))
        case .scheduleNotification: self = .scheduleNotification(try LocalNotification(from: decoder))
        case .listNotifications: self = .listNotifications(try ListNotifications(from: decoder))
        case .cancelNotifications: self = .cancelNotifications(try CancelNotifications(from: decoder))
        }
    }

    /// Encodes `type` and the payload's members into the frame's object.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: TypeKey.self)
        try container.encode(type, forKey: .type)
        switch self {
        case .register(let payload): try payload.encode(to: encoder)
        case .reportCall(let payload): try payload.encode(to: encoder)
        case .callEnded(let payload): try payload.encode(to: encoder)
        case .complete(let payload): try payload.encode(to: encoder)
        case .beginTask(let payload): try payload.encode(to: encoder)
        case .endTask(let payload): try payload.encode(to: encoder)
        case .setState(let payload): try payload.encode(to: encoder)
        case .activate(let payload): try payload.encode(to: encoder)
        case .deactivate(let payload): try payload.encode(to: encoder)
        case .preserve(let payload): try payload.encode(to: encoder)
        case .restoreReply(let payload): try payload.encode(to: encoder)
        case .reregister(let payload): try payload.encode(to: encoder)
        case .userControl(let payload): try payload.encode(to: encoder)
        case .routeChanged(let payload): try payload.encode(to: encoder)
        case .transferSession(let payload): try payload.encode(to: encoder)
        case .addTransfer(let payload): try payload.encode(to: encoder)
        case .cancelTransfer(let payload): try payload.encode(to: encoder)
        case .transfersHandled(let payload): try payload.encode(to: encoder)
        case .fetchComplete(let payload): try payload.encode(to: encoder)
        case .addVoIPSocket(let payload): try payload.encode(to: encoder)
        case .removeVoIPSocket(let payload): try payload.encode(to: encoder)
        case .voipWakeHandled(let payload): try payload.encode(to: encoder)
        case .setKeepAlive(let payload): try payload.encode(to: encoder)
        case .keepAliveDone(let payload): try payload.encode(to: encoder)
        case .protectedFile(let payload): try payload.encode(to: encoder)
        case .scheduleNotification(let payload): try payload.encode(to: encoder)
        case .listNotifications(let payload): try payload.encode(to: encoder)
        case .cancelNotifications(let payload): try payload.encode(to: encoder)
        case .status, .sessions, .rotateKey, .transfers, .clearKeepAlive, .restorationFinished, .unknown: break
        }
    }
}
