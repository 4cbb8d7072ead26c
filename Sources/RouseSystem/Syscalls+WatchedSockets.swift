import CRouseSys
import Glibc

// Sockets a handler hands the agent to watch (its VoIP service connection): what they are, and what happened on them,
// without taking their data. Errno policy as in `Syscalls.swift`.

extension Sys {
    /// What a descriptor handed over as a socket to watch is.
    package enum WatchedSocketCheck: Equatable, Sendable {
        /// A connected socket of `type` (`SOCK_STREAM`, `SOCK_DGRAM`, `SOCK_SEQPACKET`).
        case connected(type: Int32)
        /// Why it may not be watched.
        case refused(String)
    }

    /// Whether `fd` is a connected socket (`fstat` `S_ISSOCK`, `SO_TYPE`, not listening, `getpeername` succeeds):
    /// only such a descriptor can be a service connection whose traffic wakes a handler.
    package static func checkWatchedSocket(_ fd: Int32) -> WatchedSocketCheck {
        guard let status = try? status(fd) else { return .refused("fstat failed") }
        guard status.mode & UInt32(S_IFMT) == UInt32(S_IFSOCK) else {
            return .refused("not a socket (mode \(String(status.mode & UInt32(S_IFMT), radix: 8)))")
        }
        guard let type = try? option(fd, SOL_SOCKET, SO_TYPE) else { return .refused("getsockopt SO_TYPE failed") }
        guard [Int32(SOCK_STREAM.rawValue), Int32(SOCK_DGRAM.rawValue), Int32(SOCK_SEQPACKET.rawValue)].contains(type)
        else { return .refused("socket type \(type) is not stream, datagram or seqpacket") }
        if (try? option(fd, SOL_SOCKET, SO_ACCEPTCONN)) == 1 { return .refused("a listening socket") }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard result == 0 else {
            let code = Errno(rawValue: Glibc.errno)
            return .refused("not connected (getpeername: \(code))")
        }
        return .connected(type: type)
    }

    /// What readiness on a watched socket means, found without consuming anything.
    package enum WatchedSocketState: Equatable, Sendable {
        /// Bytes or a datagram wait to be read.
        case data
        /// The peer closed (end of file on a stream) or hung up.
        case closed
        /// A pending socket error (`SO_ERROR`, read and so cleared), with its text.
        case error(String)
        /// Nothing after all (a spurious readiness).
        case idle
    }

    /// Whether bytes wait to be read on socket `fd` (one byte peeked, `MSG_PEEK | MSG_DONTWAIT`: nothing is taken).
    package static func inputQueued(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let peeked = withUnsafeMutableBytes(of: &byte) { buffer in
            retrying { Glibc.recv(fd, buffer.baseAddress, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        }
        return peeked > 0
    }

    /// Blocks until bytes wait on socket `fd`, its peer closed, or it failed (one byte peeked, `MSG_PEEK`: nothing is
    /// taken, descriptors passed with the bytes included); true when bytes wait.
    @discardableResult
    package static func awaitInput(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let peeked = withUnsafeMutableBytes(of: &byte) { buffer in
            retrying { Glibc.recv(fd, buffer.baseAddress, 1, Int32(MSG_PEEK)) }
        }
        return peeked > 0
    }

    /// The state of watched socket `fd` of `type` after epoll reported `events`: a pending error first (`SO_ERROR`),
    /// then one byte peeked (`MSG_PEEK | MSG_DONTWAIT`, the data stays for the handler), then a hang-up.
    package static func watchedSocketState(_ fd: Int32, type: Int32, events: UInt32) -> WatchedSocketState {
        let pending = socketError(fd)
        if pending != 0 { return .error("\(Errno(rawValue: pending)) (errno \(pending))") }
        var byte: UInt8 = 0
        let peeked = withUnsafeMutableBytes(of: &byte) { buffer in
            retrying { Glibc.recv(fd, buffer.baseAddress, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) }
        }
        if peeked > 0 { return .data }
        if peeked == 0 {
            // A stream's end of file; a datagram socket reads 0 for an empty datagram, which is data. A seqpacket
            // socket reads 0 for an empty record too, but also once its peer closed: closed when hung up.
            if type == Int32(SOCK_STREAM.rawValue) { return .closed }
            let hungUp = events & (EPOLLHUP.rawValue | EPOLLRDHUP.rawValue) != 0
            return type != Int32(SOCK_DGRAM.rawValue) && hungUp ? .closed : .data
        }
        let code = Glibc.errno
        if code != EAGAIN && code != EWOULDBLOCK {
            return .error("\(Errno(rawValue: code)) (errno \(code))")
        }
        if events & (EPOLLHUP.rawValue | EPOLLRDHUP.rawValue) != 0 { return .closed }
        return .idle
    }

    /// `EPOLLIN | EPOLLRDHUP | EPOLLONESHOT`: what a watched socket is registered for (errors and hang-ups always
    /// are); one report, then it is armed again only when its handler sleeps again.
    package static var watchedSocketEvents: UInt32 {
        EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLONESHOT.rawValue
    }

    /// What to do with a descriptor in an epoll set (`EPOLL_CTL_*`), for users that import no epoll header.
    package enum EpollOperation: Sendable {
        case add, modify, delete
    }

    /// `epoll_ctl(2)` with `operation`.
    package static func epollControl(
        _ epfd: Int32, _ operation: EpollOperation, _ fd: Int32, events: UInt32, data: UInt64
    ) throws(SystemError) {
        let op =
            switch operation {
            case .add: EPOLL_CTL_ADD
            case .modify: EPOLL_CTL_MOD
            case .delete: EPOLL_CTL_DEL
            }
        try epollControl(epfd, op, fd, events: events, data: data)
    }

    /// `EPOLLIN`.
    package static var epollIn: UInt32 { EPOLLIN.rawValue }

    /// One `epoll_wait(2)` for at most `capacity` events, blocking (`timeoutMS` -1) until one comes: each event's data
    /// and flags (empty after `EINTR`).
    package static func epollWait(_ epfd: Int32, capacity: Int, timeoutMS: Int32 = -1) throws(SystemError) -> [(
        data: UInt64, events: UInt32
    )] {
        let buffer = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { buffer.deallocate() }
        let count = try epollWait(epfd, buffer, Int32(capacity), timeoutMS: timeoutMS)
        return (0..<Int(count)).map { (buffer[$0].data.u64, buffer[$0].events) }
    }
}
