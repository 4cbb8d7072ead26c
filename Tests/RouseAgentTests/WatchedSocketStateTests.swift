import Glibc
import RouseSystem
import Testing

/// `Sys.watchedSocketState` on real socket pairs, with the events a real epoll set reports.
@Suite("Watched socket state: what readiness means for each socket type")
struct WatchedSocketStateTests {
    /// A connected `AF_UNIX` pair of `type`, close-on-exec.
    static func pair(_ type: Int32) throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        let result = socketpair(AF_UNIX, type | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        try #require(result == 0, "socketpair: errno \(errno)")
        return (fds[0], fds[1])
    }

    /// The events one `epoll_wait` reports for `fd` registered as a watched socket is.
    static func reportedEvents(_ fd: Int32) throws -> UInt32 {
        let epfd = try Sys.epollCreate()
        defer { close(epfd) }
        try Sys.epollControl(epfd, .add, fd, events: Sys.watchedSocketEvents, data: 1)
        let events = try Sys.epollWait(epfd, capacity: 1, timeoutMS: 5000)
        let event = try #require(events.first, "no readiness reported")
        return event.events
    }

    @Test func aSeqpacketSocketWhosePeerClosedIsClosedNotData() throws {
        let (watched, peer) = try Self.pair(Int32(SOCK_SEQPACKET.rawValue))
        defer { close(watched) }
        close(peer)
        let events = try Self.reportedEvents(watched)
        #expect(Sys.watchedSocketState(watched, type: Int32(SOCK_SEQPACKET.rawValue), events: events) == .closed)
    }

    @Test func anEmptySeqpacketRecordFromAnOpenPeerIsData() throws {
        let (watched, peer) = try Self.pair(Int32(SOCK_SEQPACKET.rawValue))
        defer {
            close(watched)
            close(peer)
        }
        #expect(send(peer, nil, 0, 0) == 0)
        let events = try Self.reportedEvents(watched)
        #expect(Sys.watchedSocketState(watched, type: Int32(SOCK_SEQPACKET.rawValue), events: events) == .data)
    }

    @Test func anEmptyDatagramIsData() throws {
        let (watched, peer) = try Self.pair(Int32(SOCK_DGRAM.rawValue))
        defer {
            close(watched)
            close(peer)
        }
        #expect(send(peer, nil, 0, 0) == 0)
        let events = try Self.reportedEvents(watched)
        #expect(Sys.watchedSocketState(watched, type: Int32(SOCK_DGRAM.rawValue), events: events) == .data)
    }
}
