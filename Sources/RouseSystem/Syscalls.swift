import CRouseSys
import Glibc

// The package's one syscall layer: `Sys`, in this file and its `Syscalls+*.swift` extensions, holds the libc calls
// of every target (deploy/check-rules.sh fails on one elsewhere; rouse-bench's helpers and rouse-example-handler
// call libc themselves, the latter on purpose: it is the model of a handler, which links RouseAgentClient alone).
// Each wrapper reads `errno` at once and either returns its result or throws a `SystemError` naming the call (and the
// path), with its `Errno`.
//
// errno policy (one for the whole package):
// - EINTR: retried here, callers never see it (`epoll_wait` and `poll` return "nothing ready" instead, so a loop
//   re-checks its deadline);
// - EAGAIN/EWOULDBLOCK on a non-blocking descriptor the caller waits on: a value (`nil`, `.wouldBlock`), not an
//   error; where the caller wanted the whole write at once (`sendAll(nonBlocking: true)`) it is thrown;
// - absence where absence is the answer: a value, said on each call (ENOENT from `readFile`, `status`,
//   `remove`; EEXIST from `makeDirectory`; ESRCH from a signal or a pidfd; a `/proc` file of a process that is
//   gone or not ours; a passwd entry that does not exist);
// - EBADF: thrown like any other error, never a trap. Descriptors cross threads here (an IPC reader thread, the
//   agent's accept thread, an actor that shuts them down and closes them), so a call that races a close must end
//   that thread's loop, not the daemon. `close` reports nothing: Linux releases the descriptor whatever it
//   returns, and a retry could close a descriptor another thread has just opened;
// - everything else a peer, the kernel or the disk can cause (ECONNRESET, EPIPE, ENOBUFS, EMFILE, EACCES,
//   ENOSPC, EIO, …): thrown as `SystemError`.

/// Thin, typed wrappers around the system calls Rouse makes.
package enum Sys {
    @inline(__always)
    static func check(_ call: String, _ result: Int32, path: String? = nil) throws(SystemError) -> Int32 {
        if result >= 0 { return result }
        throw SystemError(call: call, code: .current, path: path)
    }

    @inline(__always)
    static func check(_ call: String, _ result: Int, path: String? = nil) throws(SystemError) -> Int {
        if result >= 0 { return result }
        throw SystemError(call: call, code: .current, path: path)
    }

    /// Runs `body` until it does not fail with EINTR.
    @inline(__always)
    static func retrying(_ body: () -> Int32) -> Int32 {
        while true {
            let r = body()
            if r >= 0 || Glibc.errno != EINTR { return r }
        }
    }

    @inline(__always)
    static func retrying(_ body: () -> Int) -> Int {
        while true {
            let r = body()
            if r >= 0 || Glibc.errno != EINTR { return r }
        }
    }

    /// `close(2)`: nothing is reported (the descriptor is released whatever it returns; see the policy above).
    package static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    // MARK: epoll

    package static func epollCreate() throws(SystemError) -> Int32 {
        try check("epoll_create1", epoll_create1(Int32(EPOLL_CLOEXEC)))
    }

    package static func epollControl(_ epfd: Int32, _ op: Int32, _ fd: Int32, events: UInt32, data: UInt64)
        throws(SystemError)
    {
        var event = epoll_event()
        event.events = events
        event.data.u64 = data
        _ = try check("epoll_ctl", epoll_ctl(epfd, op, fd, &event))
    }

    /// `epoll_wait(2)`; returns 0 when interrupted by a signal.
    package static func epollWait(
        _ epfd: Int32, _ events: UnsafeMutablePointer<epoll_event>, _ capacity: Int32, timeoutMS: Int32
    ) throws(SystemError) -> Int32 {
        let n = epoll_wait(epfd, events, capacity, timeoutMS)
        if n < 0 && Glibc.errno == EINTR { return 0 }
        return try check("epoll_wait", n)
    }

    // MARK: eventfd

    package static func eventFD() throws(SystemError) -> Int32 {
        try check("eventfd", eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)))
    }

    /// Adds one to an eventfd counter (wakes its reader).
    package static func eventFDSignal(_ fd: Int32) {
        var one: UInt64 = 1
        _ = retrying { Glibc.write(fd, &one, 8) }
    }

    /// Resets an eventfd counter.
    package static func eventFDDrain(_ fd: Int32) {
        var value: UInt64 = 0
        _ = retrying { Glibc.read(fd, &value, 8) }
    }

    // MARK: sockets

    /// `socket(2)`, close-on-exec, and non-blocking unless `nonBlocking` is false.
    package static func socket(family: Int32, type: Int32, protocol proto: Int32 = 0, nonBlocking: Bool = true)
        throws(SystemError) -> Int32
    {
        let flags = Int32(SOCK_CLOEXEC.rawValue) | (nonBlocking ? Int32(SOCK_NONBLOCK.rawValue) : 0)
        return try check("socket", Glibc.socket(family, type | flags, proto))
    }

    package static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(SystemError) {
        var v = value
        _ = try check("setsockopt", setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size)))
    }

    package static func setLinger(_ fd: Int32, onOff: Int32, seconds: Int32) throws(SystemError) {
        var l = linger(l_onoff: onOff, l_linger: seconds)
        _ = try check("setsockopt", setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size)))
    }

    package static func bind(_ fd: Int32, _ address: SocketAddress) throws(SystemError) {
        var storage = address.storage
        let r = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, address.length) }
        }
        _ = try check("bind", r, path: address.unixPath)
    }

    package static func listen(_ fd: Int32, backlog: Int32) throws(SystemError) {
        _ = try check("listen", Glibc.listen(fd, backlog))
    }

    /// `accept4(2)`; `nil` when no connection is pending.
    package static func accept(_ fd: Int32) throws(SystemError) -> (fd: Int32, peer: SocketAddress)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let r = withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sp in
                retrying { rouse_accept4(fd, sp, &length, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue)) }
            }
        }
        if r < 0 {
            let e = Glibc.errno
            // The connection went away before we took it, or a transient kernel condition: try again later.
            if e == EAGAIN || e == EWOULDBLOCK || e == ECONNABORTED || e == EPROTO { return nil }
        }
        let client = try check("accept4", r)
        return (client, SocketAddress(storage: storage, length: length))
    }

    /// Non-blocking `connect(2)`; returns `true` when connected at once, `false` when in progress.
    package static func connect(_ fd: Int32, _ address: SocketAddress) throws(SystemError) -> Bool {
        var storage = address.storage
        let r = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sp in
                retrying { Glibc.connect(fd, sp, address.length) }
            }
        }
        if r < 0 && Glibc.errno == EINPROGRESS { return false }
        _ = try check("connect", r, path: address.unixPath)
        return true
    }

    /// An integer socket option (`getsockopt(2)`).
    package static func option(_ fd: Int32, _ level: Int32, _ name: Int32) throws(SystemError) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try check("getsockopt", getsockopt(fd, level, name, &value, &length))
        return value
    }

    /// The pending error of a socket (`SO_ERROR`), 0 if none.
    package static func socketError(_ fd: Int32) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &value, &length)
        return value
    }

    package static func localAddress(_ fd: Int32) throws(SystemError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let r = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        _ = try check("getsockname", r)
        return SocketAddress(storage: storage, length: length)
    }

    /// Result of a non-blocking read or write.
    package enum IOResult: Equatable, Sendable {
        case bytes(Int)
        case wouldBlock
        case endOfFile
    }

    /// `recv(2)`; with `MSG_TRUNC` in `flags` on a datagram socket, a count larger than the buffer means the
    /// datagram did not fit.
    package static func recv(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer, flags: Int32 = 0)
        throws(SystemError) -> IOResult
    {
        let n = retrying { Glibc.recv(fd, buffer.baseAddress, buffer.count, flags) }
        if n > 0 { return .bytes(n) }
        if n == 0 { return .endOfFile }
        let e = Glibc.errno
        if e == EAGAIN || e == EWOULDBLOCK { return .wouldBlock }
        throw SystemError(call: "recv", errno: e)
    }

    package static func send(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult {
        let n = retrying { Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) }
        if n >= 0 { return .bytes(n) }
        let e = Glibc.errno
        if e == EAGAIN || e == EWOULDBLOCK { return .wouldBlock }
        throw SystemError(call: "send", errno: e)
    }

    /// `write(2)` of every byte to a blocking descriptor (stdout, a pipe): short writes continue, EINTR
    /// retries; EPIPE and the rest are thrown.
    package static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer) throws(SystemError) {
        var offset = 0
        while offset < buffer.count {
            let n = retrying { Glibc.write(fd, buffer.baseAddress.map { $0 + offset }, buffer.count - offset) }
            if n < 0 { throw SystemError(call: "write", code: .current) }
            offset += n
        }
    }

    /// `shutdown(2)` of the reading direction; errors ignored.
    package static func shutdownRead(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_RD))
    }

    /// `shutdown(2)` of both directions; errors ignored (the peer may be gone).
    package static func shutdownBoth(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}
