// The payloads of the socket-woken VoIP model (docs/voip-sockets.md): watched VoIP sockets (iOS's "configure one of
// the app's sockets for VoIP usage") and the keep-alive handler (`setKeepAliveTimeout:handler:`).

extension AgentRequest {
    /// `addVoIPSocket`: the connected socket passed with the frame (`SCM_RIGHTS`) is the handler's service connection;
    /// the agent watches it while the handler is suspended or gone. Answered with `voipSocket` (its `socketID`), or
    /// `error`: `badDescriptor` (no descriptor, not a socket, not connected, a listening socket), `tooManySockets`.
    public struct AddVoIPSocket: Sendable, Equatable, Codable {
        /// `true`: a descriptor comes with the frame (it must).
        public var descriptor: Bool?

        /// A socket to watch (its descriptor goes with the frame).
        public init(descriptor: Bool? = true) { self.descriptor = descriptor }
    }

    /// `removeVoIPSocket`: the agent stops watching the socket and closes its copy. Answered with `ok`, or `error
    /// unknownSocket`.
    public struct RemoveVoIPSocket: Sendable, Equatable, Codable {
        /// The id `voipSocket` gave.
        public var socketID: Int?

        /// A socket no longer to watch.
        public init(socketID: Int?) { self.socketID = socketID }
    }

    /// `voipWakeHandled`: the data that woke the handler (`voipSocketWake`) was no incoming call (a SIP OPTIONS, a
    /// NOTIFY, a keep-alive answer): no report is owed for it. Answered with `ok`, or `error unknownWake`.
    public struct VoIPWakeHandled: Sendable, Equatable, Codable {
        /// The wake's id.
        public var wakeID: String?

        /// A wake that carried no call.
        public init(wakeID: String?) { self.wakeID = wakeID }
    }

    /// `setKeepAlive`: wake the handler every `seconds` (at least 600, iOS's `setKeepAliveTimeout`) with a short
    /// budget to maintain its service connection. Answered with `ok`, or `error keepAliveTooShort`/`badRequest`.
    public struct SetKeepAlive: Sendable, Equatable, Codable {
        /// The interval in seconds (600 … 86400).
        public var seconds: Double?

        /// A keep-alive interval.
        public init(seconds: Double?) { self.seconds = seconds }
    }

    /// `keepAliveDone`: the keep-alive work is done before its budget ended; the handler may be suspended.
    /// Answered with `ok`, or `error unknownKeepAlive`.
    public struct KeepAliveDone: Sendable, Equatable, Codable {
        /// The id `keepAlive` gave.
        public var keepAliveID: String?

        /// The end of a keep-alive.
        public init(keepAliveID: String?) { self.keepAliveID = keepAliveID }
    }
}

extension AgentEvent {
    /// `voipSocket`: a watched socket. Answers `addVoIPSocket` (`requestID` echoed, no descriptor), and after a
    /// relaunch hands each watched socket back (`returned: true`, the descriptor with the frame) before the wake.
    public struct VoIPSocket: Sendable, Equatable, Codable {
        /// The agent's id for the socket (per handler).
        public var socketID: Int
        /// `stream`, `datagram` or `seqpacket`.
        public var kind: String
        /// `true`: the socket's descriptor comes with this frame (a relaunched handler gets its sockets back).
        public var returned: Bool?

        /// A watched socket.
        public init(socketID: Int, kind: String, returned: Bool? = nil) {
            self.socketID = socketID
            self.kind = kind
            self.returned = returned
        }
    }

    /// `voipSocketWake`: data arrived on watched sockets while the handler was suspended or gone. With `mustReport`
    /// it owes, within `seconds`, `reportCall` (`pushID`: this `wakeID`) or `voipWakeHandled`, as for a VoIP push.
    public struct VoIPSocketWake: Sendable, Equatable, Codable {
        /// The wake's id (answered by `reportCall` or `voipWakeHandled`).
        public var wakeID: String
        /// The sockets with data waiting (the handler reads them itself: the agent did not).
        public var socketIDs: [Int]
        /// Whether a report is owed (false: foreground, or in a call).
        public var mustReport: Bool
        /// The deadline in seconds (0 when nothing is owed).
        public var seconds: Double

        /// A wake.
        public init(wakeID: String, socketIDs: [Int], mustReport: Bool, seconds: Double) {
            self.wakeID = wakeID
            self.socketIDs = socketIDs
            self.mustReport = mustReport
            self.seconds = seconds
        }
    }

    /// `voipSocketChanged`: what happened to watched sockets while the handler was suspended or gone, told at its
    /// next wake, one message per kind (coalesced). The agent no longer watches the sockets listed as `closed`.
    public struct VoIPSocketChanged: Sendable, Equatable, Codable {
        /// One socket's change.
        public struct Entry: Sendable, Equatable, Codable {
            /// The socket.
            public var socketID: Int
            /// For `error`: the socket's error (`SO_ERROR`), e.g. `Connection reset by peer (errno 104)`.
            public var error: String?

            /// A change.
            public init(socketID: Int, error: String? = nil) {
                self.socketID = socketID
                self.error = error
            }
        }

        /// `closed` (the peer closed or hung up: no longer watched) or `error` (a socket error; a stream socket is
        /// no longer watched, a datagram socket still is).
        public var kind: String
        /// The sockets, by id.
        public var sockets: [Entry]

        /// Changes of one kind.
        public init(kind: String, sockets: [Entry]) {
            self.kind = kind
            self.sockets = sockets
        }
    }

    /// `keepAlive`: the keep-alive time (`setKeepAlive`): maintain the service connection within `seconds`, then
    /// answer `keepAliveDone` (or be suspended when the budget ends).
    public struct KeepAlive: Sendable, Equatable, Codable {
        /// This keep-alive's id.
        public var keepAliveID: String
        /// The budget in seconds.
        public var seconds: Double

        /// A keep-alive.
        public init(keepAliveID: String, seconds: Double) {
            self.keepAliveID = keepAliveID
            self.seconds = seconds
        }
    }
}

extension AgentRequest {
    /// Whether a descriptor comes with this message (`SCM_RIGHTS`): an upload from a file, a VoIP socket.
    package var carriesDescriptor: Bool {
        switch self {
        case .addTransfer(let add): add.descriptor == true
        case .addVoIPSocket: true
        case .register, .reportCall, .callEnded, .complete, .beginTask, .endTask, .setState, .activate, .deactivate,
            .preserve, .restoreReply, .transferSession, .cancelTransfer, .transfersHandled, .fetchComplete,
            .removeVoIPSocket, .voipWakeHandled, .setKeepAlive, .clearKeepAlive, .keepAliveDone, .status, .sessions,
            .rotateKey, .reregister, .userControl, .routeChanged, .transfers, .protectedFile, .scheduleNotification,
            .listNotifications, .cancelNotifications, .restorationFinished, .unknown:
            false
        }
    }
}
