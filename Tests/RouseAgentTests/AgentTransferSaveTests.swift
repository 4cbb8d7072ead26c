import Foundation
import Glibc
import RouseAgentCore
import RouseSystem
import RouseTestSupport
import RouseWire
import Synchronization
import Testing

@testable import RouseAgent

/// The agent's state store, counting its saves and the transfer tasks each held; `failing` makes every save throw (a
/// full or broken disk).
final class CountingStateStore: AgentStateStore {
    struct Counts {
        var saves = 0
        /// The task ids in the last save.
        var savedTasks: Set<Int> = []
        var failing = false
    }

    let file: JSONFileAgentStateStore
    let counts = Mutex(Counts())

    init(path: String) { file = JSONFileAgentStateStore(path: path) }

    func load() throws -> AgentState { try file.load() }

    func save(_ state: AgentState) throws {
        if counts.withLock({ $0.failing }) { throw FixtureError("injected: the state cannot be written") }
        try file.save(state)
        counts.withLock {
            $0.saves += 1
            $0.savedTasks = Set((state.transfers ?? []).map(\.id))
        }
    }

    var snapshot: Counts { counts.withLock { $0 } }
}

/// A handler as a raw IPC client: the peer end of a socketpair whose other end the agent took as handler `name`'s
/// launch connection. Writes whole runs of frames at once and collects what the agent answers (non-blocking reads).
final class RawHandlerPeer: Sendable {
    let fd: Int32
    private let inbound = Mutex((decoder: FrameDecoder<AgentEvent>(), frames: [IPCFrame<AgentEvent>]()))

    init(agent: Agent, as name: String) async throws {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw FixtureError("socketpair: errno \(errno)")
        }
        fd = pair[1]
        _ = await agent.makeConnection(fd: pair[0], peer: nil, launchedFor: name)
        try write([(.register(.init(handler: name)), nil)])
        _ = try await event("registered") { if case .registered = $0.message { true } else { false } }
    }

    /// Every frame in ONE write.
    func write(_ requests: [(AgentRequest, Int?)]) throws {
        try Sys.sendAll(fd, requests.flatMap { FrameCodec.encode($0.0, requestID: $0.1) })
    }

    /// Reads what is there without waiting.
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            guard count > 0 else { return }
            inbound.withLock { state in
                state.decoder.append(buffer[..<count])
                while let frame = try? state.decoder.next() { state.frames.append(frame) }
            }
        }
    }

    /// The first frame received that matches.
    func event(_ what: String, _ matches: @escaping @Sendable (IPCFrame<AgentEvent>) -> Bool) async throws
        -> IPCFrame<AgentEvent>
    {
        try await eventually(what) {
            self.drain()
            return self.inbound.withLock { $0.frames.contains(where: matches) }
        }
        return try #require(inbound.withLock { $0.frames.first(where: matches) })
    }

    /// The answers to `ids`, by request id (all of them, or a timeout).
    func replies(_ ids: [Int]) async throws -> [Int: AgentEvent] {
        try await eventually("the replies to \(ids.count) requests", timeout: .seconds(30)) {
            self.drain()
            let answered = self.inbound.withLock { Set($0.frames.compactMap(\.requestID)) }
            return Set(ids).isSubset(of: answered)
        }
        var replies: [Int: AgentEvent] = [:]
        for frame in inbound.withLock({ $0.frames }) {
            if let id = frame.requestID, ids.contains(id) { replies[id] = frame.message }
        }
        return replies
    }

    func close() { Sys.close(fd) }
}

/// A TCP listener on loopback that never accepts: a transfer to it stays connecting (no save of its own).
func silentListener() throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw FixtureError("socket: errno \(errno)") }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
            bind(fd, address, length) == 0 && listen(fd, 64) == 0 && getsockname(fd, address, &length) == 0
        }
    }
    guard bound else {
        Sys.close(fd)
        throw FixtureError("listen: errno \(errno)")
    }
    return (fd, UInt16(bigEndian: address.sin_port))
}

@Suite(
    "Transfer requests: a run of them is saved once, and answered only after that save", .serialized,
    .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentTransferSaveTests {
    static let runLength = 16

    /// The finding: every addTransfer/cancelTransfer re-sealed and fsynced the whole state file (16 frames: 16 saves),
    /// and each reply went out before its save.
    @Test func sixteenAddsAndSixteenCancelsInOneWriteEachAreSavedAFewTimesAndAllAnswered() async throws {
        let store = Mutex<CountingStateStore?>(nil)
        let harness = try await AgentHarness.transferHarness(store: { path in
            let counting = CountingStateStore(path: path)
            store.withLock { $0 = counting }
            return counting
        })
        let counting = try #require(store.withLock { $0 })
        let listener = try silentListener()
        defer { Sys.close(listener.fd) }
        let peer = try await RawHandlerPeer(agent: harness.agent, as: "fetcher")
        defer { peer.close() }
        try peer.write([(AgentRequest.transferSession(.init(session: "s1")), 1)])
        _ = try await peer.replies([1])
        let before = counting.snapshot.saves
        let metricBefore: Int = try await (harness.transfers()["metrics"] as? [String: Int])?["state-saves"] ?? 0

        let adds = Array(100..<(100 + Self.runLength))
        try peer.write(
            adds.map { id in
                (
                    AgentRequest.addTransfer(
                        .init(session: "s1", kind: "download", url: "https://127.0.0.1:\(listener.port)/\(id)")), id
                )
            })
        let added = try await peer.replies(adds)
        // Read before anything else happens: what was acknowledged is in the state file already.
        let afterAdds = counting.snapshot
        var taskIDs: [Int] = []
        for id in adds {
            guard case .transferTask(let task) = added[id] else {
                Issue.record("request \(id) answered \(String(describing: added[id]))")
                continue
            }
            taskIDs.append(task.taskID)
        }
        #expect(taskIDs.count == Self.runLength)
        #expect(Set(taskIDs).isSubset(of: afterAdds.savedTasks), "acknowledged but not saved")
        #expect(afterAdds.saves - before <= 3, "\(afterAdds.saves - before) saves for \(Self.runLength) adds")
        let document = try await harness.transfers()
        #expect((document["tasks"] as? [Any])?.count == Self.runLength)
        // The operator's view counts the same saves.
        let metricAfter: Int = (document["metrics"] as? [String: Int])?["state-saves"] ?? 0
        #expect(metricAfter - metricBefore == afterAdds.saves - before)

        let cancels = taskIDs.map { $0 + 1000 }
        try peer.write(taskIDs.map { (AgentRequest.cancelTransfer(.init(session: "s1", taskID: $0)), $0 + 1000) })
        let cancelled = try await peer.replies(cancels)
        let afterCancels = counting.snapshot
        for id in cancels {
            guard case .transferTask(let task) = cancelled[id] else {
                Issue.record("request \(id) answered \(String(describing: cancelled[id]))")
                continue
            }
            #expect(task.state == "cancelled")
        }
        // Cancelled and handed back: gone from the saved state, in a few saves.
        #expect(afterCancels.savedTasks.isEmpty)
        #expect(
            afterCancels.saves - afterAdds.saves <= 3,
            "\(afterCancels.saves - afterAdds.saves) saves for \(Self.runLength) cancels")
    }

    /// A reply acknowledges a save that happened: when the state cannot be saved, the request is answered with an
    /// error (the old agent answered `transferTask`, then failed to save it).
    @Test func whenTheStateCannotBeSavedTheAddIsAnsweredWithAnError() async throws {
        let store = Mutex<CountingStateStore?>(nil)
        let harness = try await AgentHarness.transferHarness(store: { path in
            let counting = CountingStateStore(path: path)
            store.withLock { $0 = counting }
            return counting
        })
        let counting = try #require(store.withLock { $0 })
        let listener = try silentListener()
        defer { Sys.close(listener.fd) }
        let peer = try await RawHandlerPeer(agent: harness.agent, as: "fetcher")
        defer { peer.close() }
        try peer.write([(AgentRequest.transferSession(.init(session: "s1")), 1)])
        _ = try await peer.replies([1])

        counting.counts.withLock { $0.failing = true }
        try peer.write([
            (
                AgentRequest.addTransfer(
                    .init(session: "s1", kind: "download", url: "https://127.0.0.1:\(listener.port)/a")), 2
            )
        ])
        let reply = try await peer.replies([2])[2]
        guard case .error(let failure) = reply else {
            Issue.record("an unsaved add was answered \(String(describing: reply))")
            return
        }
        #expect(failure.code == "stateNotSaved")
        let metrics = try await harness.transfers()["metrics"] as? [String: Int]
        #expect((metrics?["state-save-failures"] ?? 0) >= 1)

        // The disk is back: the next request is saved and acknowledged.
        counting.counts.withLock { $0.failing = false }
        try peer.write([
            (
                AgentRequest.addTransfer(
                    .init(session: "s1", kind: "download", url: "https://127.0.0.1:\(listener.port)/b")), 3
            )
        ])
        guard case .transferTask(let task) = try await peer.replies([3])[3] else {
            Issue.record("the add after recovery was not acknowledged")
            return
        }
        #expect(counting.snapshot.savedTasks.contains(task.taskID))
    }
}

@Suite("TransferAcks: replies held for one save")
struct TransferAcksTests {
    @Test func repliesAreHeldInOrderUntilTheFlushAndTheBoundForcesOne() {
        var acks = TransferAcks<Int>()
        #expect(acks.isEmpty && !acks.isFull)
        for reply in 1..<TransferAcks<Int>.limit {
            acks.hold(reply)
            #expect(!acks.isFull)
        }
        acks.owe()
        #expect(acks.owed)
        acks.hold(TransferAcks<Int>.limit)
        #expect(acks.isFull)
        let taken = acks.take()
        #expect(taken == Array(1...TransferAcks<Int>.limit), "in order")
        #expect(acks.isEmpty && !acks.isFull)
        #expect(!acks.owed, "the flush paid what was owed")
    }
}
