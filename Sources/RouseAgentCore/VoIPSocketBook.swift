/// The watched VoIP sockets of every handler (iOS: "configure one of the app's sockets for VoIP usage"), as a value:
/// which sockets each handler declared, the budgets, what happened to them while their handler slept (told at its
/// next wake, one notice per kind), the wakes they caused, and the counters. The descriptors themselves, epoll and
/// the handlers' processes are the shell's (`VoIPSockets` in RouseAgent); nothing here touches them.
package struct VoIPSocketBook: Sendable, Equatable {
    /// How many sockets may be watched.
    package struct Limits: Sendable, Equatable {
        /// Per handler (a softphone has one or two signalling connections).
        package var perHandler = 8
        /// For all handlers together.
        package var total = 64

        /// The defaults.
        package init() {}
    }

    /// A socket's type (`SO_TYPE`).
    package enum Kind: String, Sendable, Equatable, Codable {
        case stream, datagram, seqpacket
    }

    /// What can happen to a watched socket while its handler sleeps (besides data, which wakes it).
    package enum ChangeKind: String, Sendable, Equatable, CaseIterable {
        /// The peer closed or hung up: the socket is no longer watched.
        case closed
        /// A socket error (`SO_ERROR`).
        case error
    }

    /// One socket's change, told at the handler's next wake.
    package struct Change: Sendable, Equatable {
        package var socketID: Int
        /// For ``ChangeKind/error``: the error's text.
        package var error: String?

        /// A change.
        package init(socketID: Int, error: String? = nil) {
            self.socketID = socketID
            self.error = error
        }
    }

    /// Why a socket is refused.
    package enum Refusal: String, Error, Sendable, Equatable {
        /// The handler's budget (``Limits/perHandler``) is used up.
        case handlerFull
        /// The agent-wide budget (``Limits/total``) is used up.
        case agentFull
    }

    /// What happened, for status and metrics.
    package struct Counters: Sendable, Equatable, Codable {
        /// Sockets accepted.
        package var added = 0
        /// Refused for a budget (`tooManySockets`).
        package var refusedTooMany = 0
        /// Refused for what was passed (`badDescriptor`: not a connected socket).
        package var refusedBadDescriptor = 0
        /// Wakes (data on a watched socket).
        package var wakes = 0
        /// Sockets found closed while watched.
        package var closed = 0
        /// Socket errors found while watched.
        package var errors = 0
        /// Wakes dropped because the handler's VoIP launches are stopped (strikes).
        package var wakesDropped = 0

        /// Zero.
        package init() {}
    }

    /// The budgets.
    package var limits: Limits
    /// The counters.
    package private(set) var counters = Counters()
    private var sockets: [String: [Int: Kind]] = [:]
    private var nextSocketID: [String: Int] = [:]
    private var changes: [String: [ChangeKind: [Int: String?]]] = [:]
    private var nextWake = 1

    /// No sockets yet.
    package init(limits: Limits = Limits()) { self.limits = limits }

    /// Whether a handler in `lifecycle` has its sockets watched by the agent: while it cannot read them itself
    /// (suspended, or not running). A launching handler has been woken already; a running one reads its own.
    package static func watches(_ lifecycle: HandlerLifecycle) -> Bool {
        lifecycle == .suspended || lifecycle == .notRunning
    }

    /// Sockets watched for all handlers.
    package var total: Int { sockets.values.reduce(0) { $0 + $1.count } }

    /// `handler`'s sockets, by id.
    package func sockets(of handler: String) -> [(id: Int, kind: Kind)] {
        (sockets[handler] ?? [:]).sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Whether `handler` has socket `id`.
    package func contains(_ handler: String, _ id: Int) -> Bool { sockets[handler]?[id] != nil }

    /// A socket of `kind` for `handler`: its id, or why it is refused (counted).
    package mutating func add(_ handler: String, kind: Kind) -> Result<Int, Refusal> {
        if (sockets[handler]?.count ?? 0) >= limits.perHandler {
            counters.refusedTooMany += 1
            return .failure(.handlerFull)
        }
        if total >= limits.total {
            counters.refusedTooMany += 1
            return .failure(.agentFull)
        }
        let id = nextSocketID[handler] ?? 1
        nextSocketID[handler] = id + 1
        sockets[handler, default: [:]][id] = kind
        counters.added += 1
        return .success(id)
    }

    /// A descriptor that is no connected socket was refused.
    package mutating func refusedDescriptor() { counters.refusedBadDescriptor += 1 }

    /// `handler` no longer wants socket `id` watched; false when it has no such socket.
    package mutating func remove(_ handler: String, _ id: Int) -> Bool {
        guard sockets[handler]?.removeValue(forKey: id) != nil else { return false }
        for kind in ChangeKind.allCases { changes[handler]?[kind]?[id] = nil }
        return true
    }

    /// Every socket of `handler` is dropped (the user stopped it, or it is no longer configured): their ids.
    package mutating func removeAll(_ handler: String) -> [Int] {
        let ids = sockets(of: handler).map(\.id)
        sockets[handler] = nil
        changes[handler] = nil
        return ids
    }

    /// Socket `id` of `handler` was found closed: no longer watched, told at the next wake.
    package mutating func closed(_ handler: String, _ id: Int) {
        guard sockets[handler]?.removeValue(forKey: id) != nil else { return }
        counters.closed += 1
        changes[handler, default: [:]][.closed, default: [:]][id] = .some(nil)
    }

    /// Socket `id` of `handler` has error `text`; `keep`: it stays watched (a datagram socket). Told at the next wake.
    package mutating func failed(_ handler: String, _ id: Int, error text: String, keep: Bool) {
        guard sockets[handler]?[id] != nil else { return }
        if !keep { sockets[handler]?[id] = nil }
        counters.errors += 1
        changes[handler, default: [:]][.error, default: [:]][id] = .some(text)
    }

    /// What happened to `handler`'s sockets since its last wake, one entry per kind (closed first), taken.
    package mutating func takeChanges(_ handler: String) -> [(kind: ChangeKind, sockets: [Change])] {
        guard let pending = changes.removeValue(forKey: handler) else { return [] }
        return ChangeKind.allCases.compactMap { kind in
            guard let entries = pending[kind], !entries.isEmpty else { return nil }
            let list = entries.sorted { $0.key < $1.key }.map { Change(socketID: $0.key, error: $0.value) }
            return (kind, list)
        }
    }

    /// A wake of `handler` by data on its sockets: the wake's id (`wake-N`).
    package mutating func wake() -> String {
        defer { nextWake += 1 }
        counters.wakes += 1
        return "wake-\(nextWake)"
    }

    /// A wake that was dropped (VoIP launches stopped): `handler`'s sockets are closed as well.
    package mutating func wakeDropped(_ handler: String) -> [Int] {
        counters.wakesDropped += 1
        return removeAll(handler)
    }
}

extension VoIPSocketBook.Change: Codable {}
