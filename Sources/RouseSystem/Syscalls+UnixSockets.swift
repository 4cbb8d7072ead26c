import CRouseSys
import Glibc

// Blocking `AF_UNIX` stream sockets: the agent's IPC listener and connections, the client library's connection,
// descriptors passed with `SCM_RIGHTS`. Errno policy as in `Syscalls.swift`.

extension Sys {
    /// A listening `AF_UNIX` stream socket at `path` (an old socket file is replaced), given `mode` after bind (the
    /// unit's `UMask=0077` made it 0600). Blocking, close-on-exec. ENAMETOOLONG when the path does not fit.
    package static func listen(path: String, mode: mode_t, backlog: Int32 = 64) throws(SystemError) -> Int32 {
        guard let address = SocketAddress(unixPath: path, relative: true) else {
            throw SystemError(call: "bind", code: .nameTooLong, path: path)
        }
        let fd = try socket(family: AF_UNIX, type: Int32(SOCK_STREAM.rawValue), nonBlocking: false)
        do throws(SystemError) {
            unlink(path)
            try bind(fd, address)
            chmod(path, mode)
            try listen(fd, backlog: backlog)
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// A blocking, close-on-exec connection to the `AF_UNIX` stream socket at `path`. ENAMETOOLONG when the path
    /// does not fit.
    package static func connect(unixPath path: String) throws(SystemError) -> Int32 {
        guard let address = SocketAddress(unixPath: path, relative: true) else {
            throw SystemError(call: "connect", code: .nameTooLong, path: path)
        }
        let fd = try socket(family: AF_UNIX, type: Int32(SOCK_STREAM.rawValue), nonBlocking: false)
        do throws(SystemError) {
            _ = try connect(fd, address)
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// What one blocking `accept4` gave.
    package enum Accepted: Sendable, Equatable {
        /// A connection (close-on-exec).
        case connection(Int32)
        /// A shortage that passes (`EMFILE`, `ENFILE`, `ENOMEM`, `ENOBUFS`, `EPERM` from a firewall): back off and
        /// accept again; the pending connection waits in the backlog meanwhile.
        case shortage(SystemError)
        /// The listener was shut down or closed (`EINVAL`, `EBADF`, …): stop accepting.
        case closed
    }

    /// Accepts one connection, blocking. `EINTR` and `ECONNABORTED` (the peer gave up) are retried.
    package static func acceptConnection(_ listener: Int32) -> Accepted {
        while true {
            let fd = rouse_accept(listener)
            if fd >= 0 { return .connection(fd) }
            let code = Glibc.errno
            switch code {
            case EINTR, ECONNABORTED: continue
            case EMFILE, ENFILE, ENOMEM, ENOBUFS, EPERM: return .shortage(SystemError(call: "accept4", errno: code))
            default: return .closed
            }
        }
    }

    /// A connected pair of blocking, close-on-exec stream sockets.
    package static func socketPair() throws(SystemError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        let type = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        _ = try check("socketpair", socketpair(AF_UNIX, type, 0, &fds))
        return (fds[0], fds[1])
    }

    /// `SO_PEERCRED` alone (no descriptor opened): who is connected; nil when it cannot be read.
    package static func peerCredentials(_ fd: Int32) -> (pid: Int32, uid: UInt32, gid: UInt32)? {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        guard rouse_peer_credentials(fd, &pid, &uid, &gid) == 0 else { return nil }
        return (pid, uid, gid)
    }

    /// `SO_PEERGROUPS`: the peer's supplementary groups at connect time (empty when they cannot be read).
    package static func peerGroups(_ fd: Int32) -> [UInt32] {
        var capacity: Int32 = 64
        while capacity <= 65536 {
            var groups = [gid_t](repeating: 0, count: Int(capacity))
            var count = capacity
            if rouse_peer_groups(fd, &groups, &count) == 0 { return Array(groups.prefix(Int(count))) }
            guard Glibc.errno == ERANGE else { return [] }
            capacity *= 4
        }
        return []
    }

    /// The peer's pidfd where the kernel offers one (`SO_PEERPIDFD`, Linux 6.5+), else a pidfd opened from `pid`
    /// (its `SO_PEERCRED` pid, read by the caller; such a pidfd is checked against pid reuse by the caller).
    package static func peerPidfd(_ fd: Int32, pid: Int32) throws(SystemError) -> (pidfd: Int32, kernel: Bool) {
        let kernel = rouse_peer_pidfd(fd)
        if kernel >= 0 { return (kernel, true) }
        return (try check("pidfd_open", rouse_pidfd_open(pid)), false)
    }

    /// Sends all of `bytes` (never raising SIGPIPE); `nonBlocking`: throw `EAGAIN` instead of waiting for room in
    /// a full socket buffer (the bytes written before it stay written).
    package static func sendAll(_ fd: Int32, _ bytes: [UInt8], nonBlocking: Bool = false) throws(SystemError) {
        let flags = Int32(MSG_NOSIGNAL) | (nonBlocking ? Int32(MSG_DONTWAIT) : 0)
        var offset = 0
        while offset < bytes.count {
            let n = retrying { bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, flags) } }
            offset += try check("send", n)
        }
    }
}
