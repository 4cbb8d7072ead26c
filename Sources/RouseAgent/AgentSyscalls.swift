import CRouseSys
import Glibc

/// The only file of RouseAgent that calls libc for sockets, processes, pidfds and cgroup files.
///
/// Errno policy: `EINTR` is retried in place; `EAGAIN` does not occur (blocking descriptors, each read on
/// its own thread); `ESRCH` from a pidfd means the process is gone and is a value (`false`); `EBADF` on our
/// own descriptor would be a bug, but is thrown rather than trapped since descriptors cross threads;
/// everything a peer or the kernel can cause (`ECONNRESET`, `EPIPE`, `ENOENT`, `EACCES`, `EBUSY`) is thrown
/// as ``AgentError`` with the call named.
enum AgentSyscalls {
    /// What the agent needs of a passwd entry.
    struct Account: Sendable, Equatable {
        var name: String
        var uid: UInt32
        var gid: UInt32
        var home: String

        init(_ entry: UnsafeMutablePointer<passwd>) {
            name = String(cString: entry.pointee.pw_name)
            uid = entry.pointee.pw_uid
            gid = entry.pointee.pw_gid
            home = entry.pointee.pw_dir.map { String(cString: $0) } ?? "/"
        }
    }

    /// What the agent needs of a `stat`.
    struct FileStatus: Sendable, Equatable {
        var uid: UInt32
        var gid: UInt32
        var mode: UInt32

        var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }
        var isRegular: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }
        var isSymbolicLink: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFLNK) }
        /// Writable by the group or by others.
        var writableByOthers: Bool { mode & 0o022 != 0 }
        /// The sticky bit: in such a directory only an entry's owner (or root) may rename or remove it.
        var sticky: Bool { mode & UInt32(S_ISVTX) != 0 }
        /// Permission bits in octal, e.g. `0755`.
        var octal: String { "0" + String(mode & 0o7777, radix: 8) }
    }

    // MARK: Unix sockets

    /// A listening `AF_UNIX` stream socket at `path` (an old socket file is replaced), given `mode` after bind (the
    /// unit's `UMask=0077` made it 0600): the system agent's 0666 lets every local user connect (who they are is
    /// decided per connection from `SO_PEERCRED`), the per-user agent's 0600 its user only.
    static func listen(path: String, mode: mode_t) throws(AgentError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", errno) }
        unlink(path)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw .configuration("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw .system("bind \(path)", code)
        }
        chmod(path, mode)
        guard Glibc.listen(fd, 64) == 0 else {
            let code = errno
            close(fd)
            throw .system("listen", code)
        }
        return fd
    }

    /// What one `accept4` gave.
    enum Accepted {
        /// A connection.
        case connection(Int32)
        /// A shortage that passes (`EMFILE`, `ENFILE`, `ENOMEM`, `ENOBUFS`, `EPERM` from a firewall): back off and
        /// accept again; the pending connection waits in the backlog meanwhile.
        case shortage(Int32)
        /// The listener was shut down (or a bug closed it): stop accepting.
        case closed
    }

    /// Accepts one connection (blocking). `EINTR` and `ECONNABORTED` (the peer gave up) are retried.
    static func accept(_ listener: Int32) -> Accepted {
        while true {
            let fd = rouse_accept(listener)
            if fd >= 0 { return .connection(fd) }
            let code = errno
            switch code {
            case EINTR, ECONNABORTED: continue
            case EMFILE, ENFILE, ENOMEM, ENOBUFS, EPERM: return .shortage(code)
            default: return .closed
            }
        }
    }

    /// `SO_PEERCRED` alone (no descriptor opened): who is connecting, for the admission check.
    static func peerCredentials(_ fd: Int32) -> (pid: Int32, uid: UInt32, gid: UInt32)? {
        var pid: pid_t = 0
        var uid: uid_t = 0
        var gid: gid_t = 0
        guard rouse_peer_credentials(fd, &pid, &uid, &gid) == 0 else { return nil }
        return (pid, uid, gid)
    }

    /// `SO_PEERGROUPS`: the peer's supplementary groups at connect time (empty when they cannot be read).
    static func peerGroups(_ fd: Int32) -> [UInt32] {
        var capacity: Int32 = 64
        while capacity <= 65536 {
            var groups = [gid_t](repeating: 0, count: Int(capacity))
            var count = capacity
            if rouse_peer_groups(fd, &groups, &count) == 0 { return Array(groups.prefix(Int(count))) }
            guard errno == ERANGE else { return [] }
            capacity *= 4
        }
        return []
    }

    /// The cgroup v2 path of a process (`0::…` of `/proc/PID/cgroup`), nil when it is gone.
    static func cgroupPath(pid: Int32) -> String? {
        guard let text = readFile("/proc/\(pid)/cgroup"),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") })
        else { return nil }
        return String(line.dropFirst(3))
    }

    /// Field 5 of `/proc/<pid>/stat`: the process group.
    static func processGroup(pid: Int32) -> Int32? {
        guard let stat = readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 2 ? Int32(fields[2]) : nil
    }

    /// A connected pair (agent end, handler end), both close-on-exec.
    static func socketPair() throws(AgentError) -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        let rc = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        guard rc == 0 else { throw .system("socketpair", errno) }
        return (fds[0], fds[1])
    }

    /// Reads up to 64 KiB; empty when the peer closed; throws on errors.
    static func read(_ fd: Int32) throws(AgentError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count >= 0 { return Array(buffer.prefix(count)) }
            if errno == EINTR { continue }
            throw .system("recv", errno)
        }
    }

    /// Writes all bytes (never raises SIGPIPE).
    static func write(_ fd: Int32, _ bytes: [UInt8], nonBlocking: Bool = false) throws(AgentError) {
        let flags = Int32(MSG_NOSIGNAL) | (nonBlocking ? Int32(MSG_DONTWAIT) : 0)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, flags) }
            if written < 0 {
                if errno == EINTR { continue }
                throw .system("send", errno)
            }
            offset += written
        }
    }

    /// Shuts a socket down both ways (wakes its reader).
    static func shutdown(_ fd: Int32) { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    /// Closes a descriptor we own.
    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// The peer's pidfd where the kernel offers one (`SO_PEERPIDFD`, Linux 6.5+), else a pidfd opened from `pid`
    /// (its `SO_PEERCRED` pid, read by the caller; such a pidfd is checked against pid reuse by the caller).
    static func peerPidfd(_ fd: Int32, pid: Int32) throws(AgentError) -> (pidfd: Int32, kernel: Bool) {
        let kernel = rouse_peer_pidfd(fd)
        if kernel >= 0 { return (kernel, true) }
        let opened = rouse_pidfd_open(pid)
        guard opened >= 0 else { throw .system("pidfd_open", errno) }
        return (opened, false)
    }

    // MARK: Processes

    /// posix_spawn in a new process group with `channel` as fd 3 (-1: none) and no other descriptor above 2;
    /// returns the pid and its pidfd. With `identity`, the child switches to that uid, gid and supplementary
    /// groups first (fork + exec: posix_spawn cannot).
    static func spawn(
        path: String, arguments: [String], environment: [String], channel: Int32,
        identity: (uid: UInt32, gid: UInt32, groups: [UInt32])? = nil
    ) throws(AgentError) -> (pid: Int32, pidfd: Int32) {
        var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var cEnvironment: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer {
            for pointer in cArguments { free(pointer) }
            for pointer in cEnvironment { free(pointer) }
        }
        var pid: pid_t = 0
        let rc: Int32
        if let identity {
            rc = identity.groups.withUnsafeBufferPointer { groups in
                rouse_spawn_as(
                    path, &cArguments, &cEnvironment, channel, identity.uid, identity.gid, groups.baseAddress,
                    Int32(groups.count), &pid)
            }
        } else {
            rc = rouse_spawn(path, &cArguments, &cEnvironment, channel, &pid)
        }
        guard rc == 0 else { throw .system(identity == nil ? "posix_spawn \(path)" : "fork \(path)", rc) }
        let pidfd = rouse_pidfd_open(pid)
        guard pidfd >= 0 else {
            // Out of descriptors: a child we cannot track must not live on. It is ours and not reaped yet, so its
            // pid cannot have been reused.
            let code = errno
            _ = kill(pid, SIGKILL)
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            throw .system("pidfd_open", code)
        }
        return (pid, pidfd)
    }

    /// Signals the process behind `pidfd`; false when it is already gone (`ESRCH`).
    @discardableResult
    static func signal(pidfd: Int32, _ signal: Int32) -> Bool {
        rouse_pidfd_send_signal(pidfd, signal) == 0
    }

    /// Signals a whole process group (the handler's; used only while its leader's pidfd is alive, so the
    /// group id cannot have been reused).
    static func signalGroup(_ pgid: Int32, _ signal: Int32) {
        _ = kill(-pgid, signal)
    }

    /// Blocks until the child behind `pidfd` exits and reaps it; its exit status (128+signal when killed).
    static func wait(pidfd: Int32) -> Int32 {
        var status: Int32 = -1
        _ = rouse_pidfd_wait(pidfd, &status)
        return status
    }

    /// A pidfd for an existing process (not our child: a handler a previous agent launched), nil when it is
    /// gone (`ESRCH`) or not ours to open.
    static func openPidfd(pid: Int32) -> Int32? {
        let fd = rouse_pidfd_open(pid)
        return fd >= 0 ? fd : nil
    }

    /// Blocks until the process behind `pidfd` exits (a process that is not our child: it cannot be reaped
    /// here, only watched; `poll` reports the pidfd readable at exit). Returns -1: the status is its parent's.
    static func waitForExit(pidfd: Int32) -> Int32 {
        var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        while true {
            let result = poll(&entry, 1, -1)
            if result > 0 { return -1 }
            if result < 0 && errno != EINTR { return -1 }
        }
    }

    /// Field 22 of `/proc/<pid>/stat` (start time, clock ticks since boot); with the pid it names one process
    /// for the life of the system. Nil when the process is gone.
    static func startTime(pid: Int32) -> UInt64? {
        guard let stat = readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        // After "(comm)" come fields 3, 4, …: field 22 is the 20th of them.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    /// The pid behind a pidfd, nil once the process exited.
    static func pid(ofPidfd pidfd: Int32) -> Int32? {
        let pid = rouse_pidfd_pid(pidfd)
        return pid > 0 ? pid : nil
    }

    /// `/proc/<pid>/exe` resolved.
    static func executable(pid: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/\(pid)/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `realpath(3)`.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Current real uid.
    static var uid: UInt32 { getuid() }

    /// Current real gid.
    static var gid: UInt32 { getgid() }

    /// A user's account (passwd entry) by name or by uid.
    static func account(named name: String) -> Account? {
        getpwnam(name).map(Account.init)
    }

    /// A user's account by uid.
    static func account(uid: UInt32) -> Account? {
        getpwuid(uid).map(Account.init)
    }

    /// Every group `user` is a member of, with `gid` (getgrouplist(3)); just `gid` when it cannot be read.
    static func groups(of user: String, gid: UInt32) -> [UInt32] {
        var count: Int32 = 32
        while true {
            var groups = [gid_t](repeating: 0, count: Int(count))
            let previous = count
            if getgrouplist(user, gid, &groups, &count) >= 0 { return Array(groups.prefix(Int(count))) }
            guard count > previous, count <= 65536 else { return [gid] }
        }
    }

    /// `stat(2)` (`follow`) or `lstat(2)` of a path: owner, group, mode; nil when it does not exist.
    static func status(_ path: String, follow: Bool = true) -> FileStatus? {
        var info = stat()
        let rc = follow ? stat(path, &info) : lstat(path, &info)
        guard rc == 0 else { return nil }
        return FileStatus(uid: info.st_uid, gid: info.st_gid, mode: UInt32(info.st_mode))
    }

    /// gid of a group name.
    static func group(named name: String) -> UInt32? {
        guard let entry = getgrnam(name) else { return nil }
        return entry.pointee.gr_gid
    }

    // MARK: Files (cgroups, state)

    /// Writes `text` to an existing file (cgroup control files).
    static func writeFile(_ path: String, _ text: String) throws(AgentError) {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .system("open \(path)", errno) }
        defer { Glibc.close(fd) }
        let bytes = Array(text.utf8)
        while true {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written >= 0 { return }
            if errno == EINTR { continue }
            throw .system("write \(path)", errno)
        }
    }

    /// Reads a small file, nil if it cannot be read.
    static func readFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { Glibc.close(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            result += buffer.prefix(count)
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// `mkdir` (an existing directory is fine).
    static func makeDirectory(_ path: String) throws(AgentError) {
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw .system("mkdir \(path)", errno) }
    }

    /// Names in a directory (empty when it cannot be read).
    static func directoryEntries(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Whether a live process has this pid (`/proc/PID/stat` exists and its state is not zombie or dead).
    static func processExists(_ pid: Int32) -> Bool {
        guard let stat = readFile("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
        return state != "Z" && state != "X"
    }

    /// Sleeps the calling thread (start-up clean-up only).
    static func pause(milliseconds: Int) { usleep(useconds_t(milliseconds * 1000)) }

    /// `rmdir` (errors ignored: a cgroup still populated stays).
    static func removeDirectory(_ path: String) { _ = rmdir(path) }

    /// Whether `path` is writable by us.
    static func writable(_ path: String) -> Bool { access(path, W_OK) == 0 }

    /// Durable replace: write a temp file, fsync, rename over `path`, fsync the directory.
    static func writeAtomically(path: String, bytes: [UInt8]) throws(AgentError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .system("open \(temporary)", errno) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                let code = errno
                Glibc.close(fd)
                throw .system("write \(temporary)", code)
            }
            offset += written
        }
        guard fsync(fd) == 0 else {
            let code = errno
            Glibc.close(fd)
            throw .system("fsync \(temporary)", code)
        }
        Glibc.close(fd)
        guard rename(temporary, path) == 0 else { throw .system("rename \(path)", errno) }
        let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        let dirfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dirfd >= 0 {
            _ = fsync(dirfd)
            Glibc.close(dirfd)
        }
    }
}
