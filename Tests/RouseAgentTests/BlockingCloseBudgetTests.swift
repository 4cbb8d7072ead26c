import Foundation
import Glibc
import RouseSystem
import RouseTestSupport
import RouseWire
import Synchronization
import Testing

@testable import RouseAgent

/// The budgets on closing descriptors peers pass, with a close made to block as a FUSE file's flush that never
/// answers can: the agent's close queue is capped, and a connection whose descriptors wait to be closed is not read.
@Suite("Peer descriptor closes: queue cap and per-connection budget (a blocking close injected)")
struct BlockingCloseBudgetTests {
    /// A close that blocks until `gate` is signalled, recording what it closed.
    final class Gate: Sendable {
        let gate = DispatchSemaphore(value: 0)
        let closed = Mutex<[Int32]>([])
        func close(_ fd: Int32) {
            gate.wait()
            Sys.close(fd)
            closed.withLock { $0.append(fd) }
        }
    }

    static func pipeEnd() throws -> Int32 {
        let (read, write) = try Sys.pipe()
        Sys.close(write)
        return read
    }

    @Test func closesBeyondTheQueueLimitAreRefusedYetAllAreClosedOnceUnblocked() async throws {
        let gate = Gate()
        let work = BlockingWork(threads: 1, closeQueueLimit: 2) { gate.close($0) }
        let fds = try (0..<5).map { _ in try Self.pipeEnd() }
        let done = Mutex(0)
        var accepted: [Bool] = []
        for fd in fds { accepted.append(work.closePeerDescriptor(fd) { done.withLock { $0 += 1 } }) }
        // One may be running (blocked), the rest wait: at most two waiting are within the limit.
        #expect(accepted.filter { !$0 }.count >= 2)
        #expect(Array(accepted.prefix(2)) == [true, true])
        for _ in fds { gate.gate.signal() }
        try await eventually("all closed") { done.withLock { $0 } == fds.count }
        #expect(Set(gate.closed.withLock { $0 }) == Set(fds))
        #expect(work.counters.closesQueued == 0)
    }

    @Test func aConnectionWhoseDescriptorsWaitToBeClosedIsNotRead() async throws {
        var pair: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        let (agentEnd, peerEnd) = (pair[0], pair[1])
        defer { Sys.close(peerEnd) }
        let meter = IPCMeter()
        let connection = IPCConnection(id: 1, fd: agentEnd, peer: nil, launchedFor: nil, meter: meter)
        connection.start()
        defer { connection.close() }
        let frame = FrameCodec.encode(AgentRequest.addVoIPSocket(.init()))
        var received: [Int32] = []
        var iterator = connection.inbound.makeAsyncIterator()
        func send() throws {
            let fd = try Self.pipeEnd()
            try Sys.sendAll(peerEnd, frame, descriptor: fd)
            Sys.close(fd)
        }
        func receive() async {
            guard case .messageWithDescriptor(_, let descriptor) = await iterator.next() else {
                Issue.record("no frame with a descriptor")
                return
            }
            received.append(descriptor)
            connection.handled()
        }
        // Two of its descriptors are held (handled by nobody here, as closes that never end): the reader stops
        // before its next read.
        for _ in 1...2 {
            try send()
            await receive()
        }
        try send()
        try await eventually("reader paused") { meter.snapshot.closesPending >= 1 }
        connection.descriptorReleased()
        connection.descriptorReleased()
        await receive()
        connection.descriptorReleased()
        #expect(received.count == 3)
        for fd in received { Sys.close(fd) }
    }

    /// A connection's slot in its uid's quota is given back when the last descriptor its peer passed is closed, not
    /// when the connection ends: at once with none held, else from the release of the last one.
    @Test func whatWaitsForTheDescriptorsRunsWhenTheLastIsReleased() throws {
        let connection = IPCConnection(id: 1, fd: -1, peer: nil, launchedFor: nil, meter: IPCMeter())
        let runs = Mutex(0)
        #expect(connection.whenDescriptorsReleased { runs.withLock { $0 += 1 } })
        #expect(runs.withLock { $0 } == 1)
        connection.descriptorHeld()
        connection.descriptorHeld()
        #expect(!connection.whenDescriptorsReleased { runs.withLock { $0 += 10 } })
        connection.descriptorReleased()
        #expect(runs.withLock { $0 } == 1, "one descriptor still waits to be closed")
        connection.descriptorReleased()
        #expect(runs.withLock { $0 } == 11)
        connection.descriptorHeld()
        connection.descriptorReleased()
        #expect(runs.withLock { $0 } == 11, "it runs once")
    }
}

/// Upload copies run on one thread per handler: a copy that never ends stalls its handler's next copy, never
/// another handler's.
@Suite("Upload copies: one thread per handler")
struct UploadCopiesTests {
    @Test func aStuckCopyHoldsOnlyItsOwnHandlersUploads() async throws {
        let copies = UploadCopies()
        let gate = DispatchSemaphore(value: 0)
        let stuck = Task { await copies.pool(for: "a").run { gate.wait() } }
        try await eventually("a's copy running") { copies.counters.running == 1 }
        let second = Task { await copies.pool(for: "a").run { 2 } }
        try await eventually("a's second copy waiting") { copies.pool(for: "a").counters.queued == 1 }
        // Another handler's upload is copied meanwhile.
        let other = await copies.pool(for: "b").run { 7 }
        #expect(other == 7)
        #expect(copies.pool(for: "a").counters.queued == 1)
        gate.signal()
        await stuck.value
        #expect(await second.value == 2)
    }
}
