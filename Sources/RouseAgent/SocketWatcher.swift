import FoundationEssentials
import RouseSystem

/// The epoll set of the watched VoIP sockets and the one thread that sleeps in `epoll_wait` on it: it wakes only when
/// a watched socket becomes readable, hangs up or fails, and hands `(token, events)` to the agent through ``events``.
/// Sockets are registered one-shot (`EPOLLONESHOT`): after one report a socket stays quiet until the agent arms it
/// again (when its handler sleeps again), so data the handler has not read yet cannot spin the thread.
///
/// `epoll_ctl` is safe beside a thread in `epoll_wait`; the agent calls ``arm(_:token:)`` and ``disarm(_:)`` on its
/// isolation. A registration belongs to the open file description, which the handler shares (`SCM_RIGHTS`): a socket
/// is always disarmed before the agent closes its copy, or epoll would keep reporting it.
final class SocketWatcher: Sendable {
    /// `(token, epoll events)` for each report.
    let events: AsyncStream<(token: UInt64, events: UInt32)>
    private let continuation: AsyncStream<(token: UInt64, events: UInt32)>.Continuation
    private let epfd: Int32
    private let stopFD: Int32
    private static let stopToken = UInt64.max

    /// An epoll set and its thread.
    init() throws {
        epfd = try AgentError.wrapping(try Sys.epollCreate())
        do {
            stopFD = try AgentError.wrapping(try Sys.eventFD())
        } catch {
            Sys.close(epfd)
            throw error
        }
        try? Sys.epollControl(epfd, .add, stopFD, events: Sys.epollIn, data: Self.stopToken)
        (events, continuation) = AsyncStream.makeStream()
        Sys.detachedThread(name: "rouse-agent-voip-sockets") { [epfd, continuation] in
            loop: while true {
                guard let reports = try? Sys.epollWait(epfd, capacity: 16) else { break }
                for report in reports {
                    if report.data == Self.stopToken { break loop }
                    continuation.yield((report.data, report.events))
                }
            }
            continuation.finish()
        }
    }

    /// Watches `fd` (registered as `token`) for one report; `registered`: it is in the set already (one-shot
    /// registrations stay, disabled, after their report).
    func arm(_ fd: Int32, token: UInt64, registered: Bool) -> Bool {
        let operation: Sys.EpollOperation = registered ? .modify : .add
        return (try? Sys.epollControl(epfd, operation, fd, events: Sys.watchedSocketEvents, data: token)) != nil
    }

    /// Stops watching `fd`.
    func disarm(_ fd: Int32) {
        try? Sys.epollControl(epfd, .delete, fd, events: 0, data: 0)
    }

    /// Ends the thread; the set and the stop descriptor are closed when the thread has gone (``events`` finishes).
    func stop() {
        Sys.eventFDSignal(stopFD)
    }

    deinit {
        Sys.close(stopFD)
        Sys.close(epfd)
    }
}
