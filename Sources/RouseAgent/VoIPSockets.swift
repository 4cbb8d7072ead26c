import Glibc
import RouseAgentCore
import RouseSystem

/// Watched VoIP sockets' state: the ``VoIPSocketBook`` (which sockets, budgets, changes, counters), the agent's copy
/// of each socket's descriptor, the epoll set that watches them (``SocketWatcher``, made at the first socket), which
/// process holds each handler's sockets, and the sockets whose data woke a handler. Owned by the ``Agent`` and touched
/// only on its isolation; its steps are in `Agent+VoIP.swift`.
final class VoIPSockets {
    /// One watched socket.
    struct Socket {
        let handler: String
        let id: Int
        /// The agent's copy (owned: closed when the socket is dropped).
        let fd: Int32
        /// `SO_TYPE`.
        let type: Int32
        /// In the epoll set (armed, or disarmed by its one report).
        var registered = false
        /// Armed: the next readiness is reported.
        var armed = false
    }

    /// The rules' side: sockets per handler, budgets, changes, counters.
    private(set) var book: VoIPSocketBook
    private var sockets: [UInt64: Socket] = [:]
    private var tokens: [String: [Int: UInt64]] = [:]
    private var nextToken: UInt64 = 1
    private(set) var watcher: SocketWatcher?
    /// The process that holds each handler's sockets (the one that passed them, or was handed them back).
    private var holders: [String: Int32] = [:]
    /// Sockets whose data woke each handler, until its `voipSocketWake` is sent.
    private var woke: [String: Set<Int>] = [:]

    /// No sockets yet; `limits`: the budgets.
    /// Closes the agent's copy of a dropped socket off the executor: the handler may have closed its own copy and set
    /// `SO_LINGER`, making ours the last close, which then waits on the peer.
    private let closeOffExecutor: @Sendable (Int32) -> Void

    init(limits: VoIPSocketBook.Limits, close: @escaping @Sendable (Int32) -> Void) {
        book = VoIPSocketBook(limits: limits)
        self.closeOffExecutor = close
    }

    /// The watcher, made at the first use; nil when epoll cannot be had (the socket is then refused).
    func makeWatcher() -> SocketWatcher? {
        if let watcher { return watcher }
        watcher = try? SocketWatcher()
        return watcher
    }

    /// Takes `fd` (a checked connected socket of `type`) as `handler`'s socket, held by process `holder`: its id, or
    /// why not (the caller then closes `fd`).
    func add(_ handler: String, fd: Int32, type: Int32, holder: Int32?) -> Result<Int, VoIPSocketBook.Refusal> {
        let kind: VoIPSocketBook.Kind =
            type == Int32(SOCK_DGRAM.rawValue)
            ? .datagram : type == Int32(SOCK_SEQPACKET.rawValue) ? .seqpacket : .stream
        let result = book.add(handler, kind: kind)
        guard case .success(let id) = result else { return result }
        let token = nextToken
        nextToken += 1
        sockets[token] = Socket(handler: handler, id: id, fd: fd, type: type)
        tokens[handler, default: [:]][id] = token
        if let holder { holders[handler] = holder }
        return result
    }

    /// A descriptor that is no connected socket was refused.
    func refusedDescriptor() { book.refusedDescriptor() }

    /// Drops `handler`'s socket `id` (disarmed, closed); false when there is none.
    func remove(_ handler: String, _ id: Int) -> Bool {
        guard book.remove(handler, id) else { return false }
        drop(handler, id)
        return true
    }

    /// Drops every socket of `handler`.
    func removeAll(_ handler: String) {
        for id in book.removeAll(handler) { drop(handler, id) }
        holders[handler] = nil
        woke[handler] = nil
    }

    /// The socket `token` names (nil: dropped since its report).
    func socket(_ token: UInt64) -> Socket? { sockets[token] }

    /// `handler`'s sockets with their descriptors, by id.
    func descriptors(of handler: String) -> [(id: Int, kind: VoIPSocketBook.Kind, fd: Int32)] {
        book.sockets(of: handler).compactMap { entry in
            tokens[handler]?[entry.id].flatMap { sockets[$0] }.map { (entry.id, entry.kind, $0.fd) }
        }
    }

    /// Whether `handler` has sockets.
    func has(_ handler: String) -> Bool { !(tokens[handler]?.isEmpty ?? true) }

    /// The process holding `handler`'s sockets.
    func holder(of handler: String) -> Int32? { holders[handler] }

    /// Process `pid` now holds `handler`'s sockets (they were handed back to it).
    func handedBack(_ handler: String, to pid: Int32?) { holders[handler] = pid }

    /// Arms (or, `watch` false, disarms) every socket of `handler`.
    func watch(_ handler: String, _ watch: Bool) {
        guard let ids = tokens[handler], !ids.isEmpty else { return }
        for token in ids.values { set(token, armed: watch) }
    }

    /// Arms or disarms one socket.
    func set(_ token: UInt64, armed: Bool) {
        guard var socket = sockets[token], socket.armed != armed || (armed && !socket.registered) else { return }
        if armed {
            guard let watcher = makeWatcher(), watcher.arm(socket.fd, token: token, registered: socket.registered)
            else { return }
            socket.registered = true
            socket.armed = true
        } else {
            watcher?.disarm(socket.fd)
            socket.registered = false
            socket.armed = false
        }
        sockets[token] = socket
    }

    /// The one-shot report of `token` arrived: the socket is disarmed (its registration stays).
    func reported(_ token: UInt64) { sockets[token]?.armed = false }

    /// Socket `id` of `handler` was found closed: dropped, told at the next wake.
    func closed(_ handler: String, _ id: Int) {
        book.closed(handler, id)
        drop(handler, id)
    }

    /// Socket `id` of `handler` failed with `error`; a stream socket is dropped, a datagram socket kept.
    func failed(_ handler: String, _ id: Int, error: String, keep: Bool) {
        book.failed(handler, id, error: error, keep: keep)
        if !keep { drop(handler, id) }
    }

    /// A wake of `handler` by data on socket `id`: the wake's id.
    func wake(_ handler: String, socket id: Int) -> String {
        woke[handler, default: []].insert(id)
        return book.wake()
    }

    /// More data woke `handler` while its wake is under way.
    func alsoWoke(_ handler: String, socket id: Int) { woke[handler, default: []].insert(id) }

    /// The sockets whose data woke `handler`, taken for its `voipSocketWake`.
    func takeWoken(_ handler: String) -> [Int] { (woke.removeValue(forKey: handler) ?? []).sorted() }

    /// The wake was dropped (VoIP launches stopped): every socket of `handler` is dropped.
    func wakeDropped(_ handler: String) {
        for id in book.wakeDropped(handler) { drop(handler, id) }
        holders[handler] = nil
        woke[handler] = nil
    }

    /// What happened to `handler`'s sockets since its last wake, taken.
    func takeChanges(_ handler: String) -> [(kind: VoIPSocketBook.ChangeKind, sockets: [VoIPSocketBook.Change])] {
        book.takeChanges(handler)
    }

    /// Every socket dropped and the watcher stopped (the agent stops).
    func stop() {
        for token in Array(sockets.keys) {
            guard let socket = sockets[token] else { continue }
            drop(socket.handler, socket.id)
        }
        watcher?.stop()
        watcher = nil
    }

    private func drop(_ handler: String, _ id: Int) {
        guard let token = tokens[handler]?.removeValue(forKey: id), let socket = sockets.removeValue(forKey: token)
        else { return }
        // Disarmed first: the registration belongs to the open file the handler shares, not to our descriptor.
        if socket.registered { watcher?.disarm(socket.fd) }
        closeOffExecutor(socket.fd)
    }
}
