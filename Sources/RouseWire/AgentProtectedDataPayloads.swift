/// Protected data (issue 27): the lock screen's events, and the handler's protected files, kept by the agent sealed
/// under the class key the handler chose (docs/agent.md, "Session integration").
extension AgentEvent {
    /// `protectedData`: the session is locking (iOS `protectedDataWillBecomeUnavailable`: close `complete` files
    /// within `graceMilliseconds`) or was unlocked (`protectedDataDidBecomeAvailable`).
    public struct ProtectedData: Sendable, Equatable, Codable {
        /// What happened.
        public enum State: String, Sendable, Codable {
            case willBecomeUnavailable
            case didBecomeAvailable
        }

        /// What happened.
        public var state: State
        /// With `willBecomeUnavailable`: how long until the keys of the `complete` class go.
        public var graceMilliseconds: Int?

        /// The event.
        public init(state: State, graceMilliseconds: Int? = nil) {
            self.state = state
            self.graceMilliseconds = graceMilliseconds
        }
    }

    /// `protectedFileReply`: a protected file's answer; `data` (base64) for `read`.
    public struct ProtectedFileReply: Sendable, Equatable, Codable {
        /// The file's name.
        public var name: String
        /// Its class now.
        public var protection: String?
        /// Its content (base64), for a read.
        public var data: String?
        /// The open file's handle, for an `open`.
        public var handle: Int?

        /// A reply.
        public init(name: String, protection: String? = nil, data: String? = nil, handle: Int? = nil) {
            self.name = name
            self.protection = protection
            self.data = data
            self.handle = handle
        }
    }
}

extension AgentRequest {
    /// `protectedFile`: write, read, re-class, remove, open or close one of the handler's protected files; answered with
    /// `protectedFileReply`, or `error` (`protectedDataUnavailable` while its class's key is not held,
    /// `invalidRequest` for a bad name, class or body, `notFound`).
    public struct ProtectedFile: Sendable, Equatable, Codable {
        /// What to do.
        public enum Operation: String, Sendable, Codable {
            /// Replace the file with `data` (base64), sealed under `protection`'s key.
            case write
            /// Read the file.
            case read
            /// Seal the file again under `protection` (needs both classes' keys).
            case reclass
            /// Remove the file.
            case remove
            /// Open a `complete-unless-open` file (created empty when missing and `protection` names that class):
            /// answered with a `handle`. Reads and writes naming the handle go on after the session locks; the
            /// agent keeps the file's key until `close`, or until the handler's connection closes.
            case open
            /// Close the open file `handle`.
            case close
        }

        /// What to do.
        public var op: Operation?
        /// The file's name: 1–64 of `[A-Za-z0-9._-]`, not starting with a dot.
        public var name: String?
        /// `none`, `until-first-unlock`, `complete` or `complete-unless-open` (write, reclass; open, to create).
        public var protection: String?
        /// The content, base64 (write).
        public var data: String?
        /// An open file's handle (read, write, close): the operation goes through the open file.
        public var handle: Int?

        /// A request.
        public init(
            op: Operation, name: String, protection: String? = nil, data: String? = nil, handle: Int? = nil
        ) {
            self.op = op
            self.name = name
            self.protection = protection
            self.data = data
            self.handle = handle
        }
    }
}
