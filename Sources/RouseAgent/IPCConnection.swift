import Dispatch
import FoundationEssentials
import RouseAgentClient
import RouseSystem
import RouseWire
import Synchronization

/// One IPC connection: the socket (owned; closed when the reader ends), who is on the other side, a
/// reader thread that decodes frames into ``inbound``, and serialised writes.
///
/// Both ways are bounded: the reader queues at most ``inboundFrames`` frames (each at most 64 KiB) that the agent has
/// not handled yet and then stops reading until the agent catches up (the peer's writes then block, its socket
/// buffer full), counted as `inboundFull`; a write that would block closes the connection (`outboundFull`).
final class IPCConnection: Sendable {
    /// What the reader produces.
    enum Inbound: Sendable {
        case message(IPCFrame<AgentRequest>)
        /// An `addTransfer` with `descriptor: true` and the descriptor that came with it (owned by the receiver).
        case messageWithDescriptor(IPCFrame<AgentRequest>, Int32)
        case malformed(FrameError)
        case closed
    }

    /// Peer credentials at connect time.
    struct Peer: Sendable {
        var pid: Int32
        var uid: UInt32
        var gid: UInt32
        /// The peer's pidfd (owned here), -1 if none.
        var pidfd: Int32
        /// From `SO_PEERPIDFD` (race-free) rather than `pidfd_open(pid)`.
        var kernelPidfd: Bool
        /// Supplementary groups at connect time (`SO_PEERGROUPS`).
        var groups: [UInt32] = []
    }

    let id: Int
    let fd: Int32
    let peer: Peer?
    /// The handler whose launch created this connection (socketpair), nil for socket-path connections.
    let launchedFor: String?
    let inbound: AsyncStream<Inbound>
    private let continuation: AsyncStream<Inbound>.Continuation
    private let writeLock = Mutex(false)  // true once closed
    /// Set by ``close()``: the reader reads nothing more (frames and descriptors still buffered are not taken).
    private let stopping = Mutex(false)
    private let meter: IPCMeter
    /// Frames yielded and not yet handled, descriptors its peer passed that are yielded and not yet handled or wait to
    /// be closed, whether the reader waits for room, and what runs once no descriptor is held
    /// (``whenDescriptorsReleased(_:)``).
    private let queued = Mutex(
        (frames: 0, descriptors: 0, waiting: false, whenReleased: (@Sendable () -> Void)?.none))
    /// Signalled when the reader may go on.
    private let room = DispatchSemaphore(value: 0)
    /// Frames yielded that the agent has not taken from ``inbound`` yet.
    private let ready = Mutex(0)
    /// The reader is taking bytes from the socket or holds bytes it took and has not yielded all the frames of yet.
    private let decoding = Mutex(false)

    /// Most frames the reader queues for the agent before it stops reading.
    static let inboundFrames = 16
    /// Most descriptors this peer passed that the agent has not handled yet or that wait to be closed (a close can
    /// block for as long as the peer wants: a FUSE file whose flush never answers) before the reader stops reading.
    static let pendingDescriptors = 2

    init(id: Int, fd: Int32, peer: Peer?, launchedFor: String?, meter: IPCMeter) {
        self.id = id
        self.fd = fd
        self.peer = peer
        self.launchedFor = launchedFor
        self.meter = meter
        (inbound, continuation) = AsyncStream.makeStream(of: Inbound.self)
    }

    /// The agent handled one frame of ``inbound``: the reader may queue another.
    func handled() {
        let wake = queued.withLock { queued in
            queued.frames -= 1
            defer { queued.waiting = false }
            return queued.waiting
        }
        if wake { room.signal() }
    }

    /// The agent took `inbound` from ``inbound``.
    func took(_ inbound: Inbound) {
        switch inbound {
        case .message, .messageWithDescriptor: ready.withLock { $0 -= 1 }
        case .malformed, .closed: break
        }
    }

    /// Frames the reader yielded that the agent has not taken yet: 0 when it has handled the run the peer wrote.
    var framesReady: Int { ready.withLock { $0 } }

    /// Whether what the peer wrote has not all reached the agent: bytes in the socket, bytes the reader is decoding,
    /// or frames yielded and not taken (a frame being handled is not counted: it is on the agent already).
    /// Looked at upstream first (the socket, then the reader's hands, then the frames yielded): bytes move only
    /// downstream, and each step is marked before the last one is cleared, so bytes written before the look are seen
    /// in one of the three.
    var inputWaiting: Bool {
        // Under the write lock: the reader closes the descriptor under it, so the number is still this socket's.
        if writeLock.withLock({ closed in !closed && Sys.inputQueued(fd) }) { return true }
        return decoding.withLock { $0 } || framesReady > 0
    }

    /// One more descriptor of this peer's is on the connection's budget: yielded to the agent (counted by the
    /// reader) or queued to be closed.
    func descriptorHeld() { queued.withLock { $0.descriptors += 1 } }

    /// A descriptor of ``descriptorHeld()`` is off the budget (handled, kept, or closed): the reader may read again.
    func descriptorReleased() {
        var released: (@Sendable () -> Void)?
        let wake = queued.withLock { queued in
            queued.descriptors -= 1
            if queued.descriptors == 0 {
                released = queued.whenReleased
                queued.whenReleased = nil
            }
            defer { queued.waiting = false }
            return queued.waiting
        }
        if wake { room.signal() }
        released?()
    }

    /// Runs `body` once none of the descriptors this peer passed is held any more (at once when none is): on the
    /// calling thread, or on the thread whose close released the last one. For the connection's slot in its uid's
    /// quota, given back only then: a close that never ends (a FUSE file whose `FLUSH` is never answered) keeps its
    /// descriptor open in the agent, and a peer that connected again after each close would otherwise pin one more
    /// every time, until the agent ran out of descriptors. True when `body` ran at once.
    @discardableResult
    func whenDescriptorsReleased(_ body: @escaping @Sendable () -> Void) -> Bool {
        let now = queued.withLock { queued in
            guard queued.descriptors > 0 else { return true }
            queued.whenReleased = body
            return false
        }
        if now { body() }
        return now
    }

    /// Waits, on the reader thread, while ``pendingDescriptors`` of this peer's descriptors are held.
    private func waitForCloses() {
        while true {
            let full = queued.withLock { queued in
                guard queued.descriptors >= Self.pendingDescriptors else { return false }
                queued.waiting = true
                return true
            }
            guard full else { return }
            meter.count(\.closesPending)
            room.wait()
        }
    }

    /// Yields a frame once the queue has room (waits, on the reader thread, while it has none).
    private func yieldFrame(_ inbound: Inbound) {
        while true {
            let full = queued.withLock { queued in
                guard queued.frames >= Self.inboundFrames else {
                    queued.frames += 1
                    return false
                }
                queued.waiting = true
                return true
            }
            guard full else { break }
            meter.count(\.inboundFull)
            room.wait()
        }
        ready.withLock { $0 += 1 }
        continuation.yield(inbound)
    }

    /// Starts the reader thread.
    func start() {
        Sys.detachedThread(name: "rouse-agent-ipc-\(id)") { [self] in
            var decoder = FrameDecoder<AgentRequest>()
            // Descriptors passed with frames (SCM_RIGHTS) arrive with the frame's first bytes: at most one can wait
            // for a frame still incomplete; any more were sent without a frame claiming them and are closed.
            var descriptors: [Int32] = []
            while true {
                self.waitForCloses()
                if self.stopping.withLock({ $0 }) { break }
                // Bytes are marked in hand before they leave the socket (a peek waits for them): at every moment what
                // the peer wrote is in the socket, in hand here, or yielded (``inputWaiting``).
                Sys.awaitInput(self.fd)
                self.decoding.withLock { $0 = true }
                defer { self.decoding.withLock { $0 = false } }
                guard let read = try? Sys.receiveWithDescriptors(self.fd) else { break }
                descriptors += read.descriptors
                guard !read.bytes.isEmpty else { break }
                decoder.append(read.bytes)
                do throws(FrameError) {
                    while let frame = try decoder.next() {
                        if frame.message.carriesDescriptor, !descriptors.isEmpty {
                            self.descriptorHeld()  // released by the agent once handled
                            self.yieldFrame(.messageWithDescriptor(frame, descriptors.removeFirst()))
                        } else {
                            self.yieldFrame(.message(frame))
                        }
                    }
                    // Closed here, on this connection's own thread: a close that blocks (SO_LINGER) holds only it.
                    while descriptors.count > 1 {
                        self.meter.count(\.strayDescriptors)
                        Sys.close(descriptors.removeLast())
                    }
                } catch {
                    // Answered here, before the reader closes the socket.
                    self.sendError(error.code, error.detail)
                    self.continuation.yield(.malformed(error))
                    break
                }
            }
            // The reader owns the descriptor's end of life: nothing can read a reused fd number.
            self.writeLock.withLock { closed in
                closed = true
                Sys.close(self.fd)
                if let pidfd = self.peer?.pidfd, pidfd >= 0 { Sys.close(pidfd) }
            }
            // The one left waiting for a frame that never came, closed here like the other strays and before the
            // agent hears of the end: a close that blocks (a FUSE file whose FLUSH is never answered) keeps the
            // connection, and so its slot in its uid's quota, until it returns. Closed after the end was yielded, it
            // would pin one more descriptor and this thread with every connection the peer made again.
            for fd in descriptors {
                self.meter.count(\.strayDescriptors)
                Sys.close(fd)
            }
            self.continuation.yield(.closed)
            self.continuation.finish()
        }
    }

    /// Sends a message; false if the connection is closed or the write failed. Never blocks: the agent's actor
    /// calls it, so a peer that stops reading (its socket buffer full) must not stop the agent. Such a peer, or
    /// one whose frame could only be partly written, is disconnected.
    @discardableResult
    func send(_ frame: IPCFrame<AgentEvent>) -> Bool {
        writeLock.withLock { closed in
            guard !closed else { return false }
            do {
                try Sys.sendAll(fd, FrameCodec.encode(frame), nonBlocking: true)
                return true
            } catch {
                if (error as? SystemError)?.code == .wouldBlock { meter.count(\.outboundFull) }
                Sys.shutdownBoth(fd)
                return false
            }
        }
    }

    /// Sends `message` with `descriptor` attached (`SCM_RIGHTS`; the caller keeps and closes its copy); false if the
    /// connection is closed or the write failed (the peer is then disconnected, as by ``send(_:)``).
    func send(_ message: AgentEvent, descriptor: Int32) -> Bool {
        writeLock.withLock { closed in
            guard !closed else { return false }
            do {
                try Sys.sendAll(fd, FrameCodec.encode(IPCFrame(message)), descriptor: descriptor, nonBlocking: true)
                return true
            } catch {
                if (error as? SystemError)?.code == .wouldBlock { meter.count(\.outboundFull) }
                Sys.shutdownBoth(fd)
                return false
            }
        }
    }

    /// Sends `message`; `requestID`: the request it answers (echoed).
    @discardableResult
    func send(_ message: AgentEvent, requestID: Int? = nil) -> Bool {
        send(IPCFrame(message, requestID: requestID))
    }

    /// Sends an error frame (`requestID`: the request it answers).
    func sendError(_ code: String, _ detail: String, requestID: Int? = nil) {
        send(.error(.init(code: code, detail: detail)), requestID: requestID)
    }

    /// Shuts the socket down and stops the reader taking more (what is still buffered is not read); the reader then
    /// ends and closes it. Idempotent.
    func close() {
        stopping.withLock { $0 = true }
        writeLock.withLock { closed in
            if !closed { Sys.shutdownBoth(fd) }
        }
    }
}
