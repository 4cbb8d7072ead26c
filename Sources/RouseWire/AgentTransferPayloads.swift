// The payloads of the background-transfer messages: a handler's sessions of downloads and uploads that
// the agent carries on while the handler sleeps (iOS's background `URLSession`). docs/agent.md, "Background
// transfers", has the rules.

extension AgentRequest {
    /// `transferSession`: creates the session `session` of the sending handler, or reattaches to it (its tasks so
    /// far, finished ones with their results, arrive in the answer `transferSessionReply`; finished downloads'
    /// files follow as `transferTask` events carrying the descriptor).
    public struct TransferSession: Sendable, Equatable, Codable {
        /// The session's identifier (the handler's choice; 1–64 bytes of `A-Za-z0-9._-`).
        public var session: String?

        /// A session request.
        public init(session: String?) { self.session = session }
    }

    /// `addTransfer`: a download (`GET url` into a file of the agent's spool) or an upload (`method url` with the
    /// body from the descriptor passed with this frame, `SCM_RIGHTS`, or from `body`); answered `transferTask`.
    public struct AddTransfer: Sendable, Equatable, Codable {
        /// The session it belongs to (created by `transferSession` first).
        public var session: String?
        /// `download` or `upload`.
        public var kind: String?
        /// `https://…` or `http://…`.
        public var url: String?
        /// Upload method (`PUT` default, `POST`).
        public var method: String?
        /// Request headers, each `Name: value`.
        public var headers: [String]?
        /// An upload's body, base64 (instead of a descriptor).
        public var body: String?
        /// `true`: a regular file's descriptor was passed with this frame; the upload sends its contents.
        public var descriptor: Bool?
        /// `true`: the task may wait for a non-expensive network (iOS's `isDiscretionary`).
        public var discretionary: Bool?

        /// A task request.
        public init(
            session: String?, kind: String?, url: String?, method: String? = nil, headers: [String]? = nil,
            body: String? = nil, descriptor: Bool? = nil, discretionary: Bool? = nil
        ) {
            self.session = session
            self.kind = kind
            self.url = url
            self.method = method
            self.headers = headers
            self.body = body
            self.descriptor = descriptor
            self.discretionary = discretionary
        }
    }

    /// `cancelTransfer`: cancels one task of a session; answered `transferTask` (state `cancelled`).
    public struct CancelTransfer: Sendable, Equatable, Codable {
        /// The task's session.
        public var session: String?
        /// The task.
        public var taskID: Int?

        /// A cancellation.
        public init(session: String?, taskID: Int?) {
            self.session = session
            self.taskID = taskID
        }
    }

    /// `transfersHandled`: the handler has processed a session's events (the completion handler iOS hands to
    /// `handleEventsForBackgroundURLSession`); answered `ok`. Owed, within the bounded time, after
    /// `transferSessionDone`.
    public struct TransfersHandled: Sendable, Equatable, Codable {
        /// The session whose events are handled.
        public var session: String?

        /// A completion.
        public init(session: String?) { self.session = session }
    }
}

extension AgentRequest {
    /// `fetchComplete`: a background fetch ended (`performFetchWithCompletionHandler`'s completion).
    public struct FetchComplete: Sendable, Equatable, Codable {
        /// The `fetch` event's id.
        public var fetchID: String?
        /// `newData`, `noData` or `failed`.
        public var result: String?

        /// A completion.
        public init(fetchID: String?, result: String?) {
            self.fetchID = fetchID
            self.result = result
        }
    }
}

extension AgentEvent {
    /// `fetch`: a background-fetch opportunity (iOS's `performFetchWithCompletionHandler`): fetch, then answer
    /// `fetchComplete` within `seconds`.
    public struct Fetch: Sendable, Equatable, Codable {
        /// Names the fetch in `fetchComplete`.
        public var fetchID: String
        /// Time to complete.
        public var seconds: Double

        /// An opportunity.
        public init(fetchID: String, seconds: Double) {
            self.fetchID = fetchID
            self.seconds = seconds
        }
    }
}

extension AgentEvent {
    /// `transferTask`: one task's state: the answer to `addTransfer` and `cancelTransfer`, progress while it runs,
    /// and its result. A finished download carries `file: true` and the descriptor of the downloaded file
    /// (read-only, `SCM_RIGHTS`); the agent deletes its spool copy once it is handed over.
    public struct TransferTask: Sendable, Equatable, Codable {
        /// The session.
        public var session: String
        /// The task (unique within the handler).
        public var taskID: Int
        /// `download` or `upload`.
        public var kind: String
        /// The URL.
        public var url: String
        /// `queued`, `running`, `waitingForNetwork`, `completed`, `failed` or `cancelled`.
        public var state: String
        /// Bytes transferred so far (the body received, or sent).
        public var bytes: Int64
        /// Expected total bytes when known.
        public var total: Int64?
        /// The final HTTP status (a completed task; 4xx/5xx complete too, as in iOS).
        public var status: Int?
        /// Why it failed: `unreachable`, `tls`, `timeout`, `budget`, `spoolFull`, `badDescriptor`, `cancelled`,
        /// `userStopped`, `transport`.
        public var error: String?
        /// The failure in words.
        public var detail: String?
        /// `true`: this frame carries the downloaded file's descriptor.
        public var file: Bool?

        /// A task's state.
        public init(
            session: String, taskID: Int, kind: String, url: String, state: String, bytes: Int64, total: Int64? = nil,
            status: Int? = nil, error: String? = nil, detail: String? = nil, file: Bool? = nil
        ) {
            self.session = session
            self.taskID = taskID
            self.kind = kind
            self.url = url
            self.state = state
            self.bytes = bytes
            self.total = total
            self.status = status
            self.error = error
            self.detail = detail
            self.file = file
        }
    }

    /// `transferSessionReply`: answer to `transferSession`: the session's tasks.
    public struct TransferSessionReply: Sendable, Equatable, Codable {
        /// The session.
        public var session: String
        /// Its tasks, oldest first.
        public var tasks: [TransferTask]

        /// An answer.
        public init(session: String, tasks: [TransferTask]) {
            self.session = session
            self.tasks = tasks
        }
    }

    /// `transferSessionDone`: every task of the session has finished (or one needs the handler) and its results
    /// were sent (iOS's `urlSessionDidFinishEvents`): answer with `transfersHandled` within `seconds`.
    public struct TransferSessionDone: Sendable, Equatable, Codable {
        /// The session.
        public var session: String
        /// Time left to answer.
        public var seconds: Double

        /// A notice.
        public init(session: String, seconds: Double) {
            self.session = session
            self.seconds = seconds
        }
    }
}
