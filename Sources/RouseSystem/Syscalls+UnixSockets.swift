import CRouseSys
import Glibc

// Blocking `AF_UNIX` stream sockets: the agent's IPC listener and connections, the client library's connection,
// descriptors passed with `SCM_RIGHTS`. Errno policy as in `Syscalls.swift`.

extension Sys {
    /// A listening `AF_UNIX` stream socket at `path`, bound by ``bindUnix(_:path:mode:)`` (the one policy for socket
    /// files). Blocking, close-on-exec. ENAMETOOLONG when the path does not fit; EADDRINUSE when another process
    /// listens there or the path is another kind of file.
    package static func listen(path: String, mode: mode_t, backlog: Int32 = 64) throws(SystemError) -> Int32 {
        let fd = try socket(family: AF_UNIX, type: Int32(SOCK_STREAM.rawValue), nonBlocking: false)
        do throws(SystemError) {
            _ = try bindUnix(fd, path: path, mode: mode)
            try listen(fd, backlog: backlog)
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    /// A socket file this process bound, by identity (device and inode): removed at the end only if the path still
    /// names it (another process may have taken the path meanwhile).
    package struct UnixSocketFile: Sendable, Equatable {
        /// The path bound.
        package let path: String
        let device: UInt
        let inode: UInt
    }

    /// Binds the `AF_UNIX` socket `fd` to `path`, the one policy of every Unix-domain listener (the agent's IPC
    /// socket, a Unix-socket HTTP/2 server):
    /// - a socket file nobody accepts on (its process died: connect is refused) is replaced; a live one, or any other
    ///   kind of file, is left alone and bind reports EADDRINUSE;
    /// - the socket gets `mode` before bind (Linux creates the file with the socket's mode less the umask), so the file
    ///   never exists with a wider one, and again after bind, so a umask (the units' `UMask=0077`) does not narrow it;
    /// - the file's identity is returned, for ``removeSocketFile(_:)`` at the end.
    /// ENAMETOOLONG when the path does not fit.
    package static func bindUnix(_ fd: Int32, path: String, mode: mode_t) throws(SystemError) -> UnixSocketFile {
        guard let address = SocketAddress(unixPath: path, relative: true) else {
            throw SystemError(call: "bind", code: .nameTooLong, path: path)
        }
        var status = stat()
        if lstat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK && !someoneAccepts(on: address) {
            unlink(path)
        }
        _ = try check("fchmod", fchmod(fd, mode), path: path)
        try bind(fd, address)
        _ = try check("chmod", chmod(path, mode), path: path)
        _ = try check("lstat", lstat(path, &status), path: path)
        return UnixSocketFile(path: path, device: UInt(status.st_dev), inode: UInt(status.st_ino))
    }

    /// Removes a socket file bound by ``bindUnix(_:path:mode:)`` if its path still names it.
    package static func removeSocketFile(_ file: UnixSocketFile) {
        var status = stat()
        guard lstat(file.path, &status) == 0, UInt(status.st_dev) == file.device, UInt(status.st_ino) == file.inode
        else { return }
        unlink(file.path)
    }

    /// Whether a process accepts connections on the Unix socket `address` (a refused connect means a stale file).
    private static func someoneAccepts(on address: SocketAddress) -> Bool {
        guard let fd = try? socket(family: address.family, type: Int32(SOCK_STREAM.rawValue)) else { return true }
        defer { close(fd) }
        do {
            _ = try connect(fd, address)
            return true
        } catch {
            return error.errno != ECONNREFUSED
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
            let fd = rouse_accept4(listener, nil, nil, Int32(SOCK_CLOEXEC.rawValue))
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

extension Sys {
    /// Sends `text` as one datagram to the `AF_UNIX` datagram socket at `path` ("@name" is an abstract socket)
    /// without waiting (`MSG_DONTWAIT`): a receiver that stops reading costs a dropped datagram, never a blocked
    /// caller. Returns whether the datagram was queued; nothing is thrown (a notification has no one to report to).
    @discardableResult
    package static func sendDatagram(_ text: String, toUnixPath path: String) -> Bool {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        // "@name" is an abstract socket: a leading NUL byte.
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let sent = text.withCString { text in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    retrying {
                        sendto(fd, text, strlen(text), Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), socketAddress, length)
                    }
                }
            }
        }
        return sent >= 0
    }
}
