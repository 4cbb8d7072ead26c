import CRouseSys
import Glibc

/// The only file of RouseChildProcess that calls libc: pipes, descriptors, posix_spawn, waiting, signals, /proc.
///
/// Errno policy: `EINTR` is retried here; `ESRCH` from `kill` or a pidfd means the process (group) is already gone
/// and is ignored; a `/proc` file that cannot be read (the process is gone, or belongs to another user and we are
/// not root) means the process is not ours; a failed read or write ends that stream; everything else from pipe2,
/// open, fcntl and posix_spawn (`EMFILE`, `ENOENT`, `EACCES`, `EAGAIN` from a full process table) is thrown as a
/// ``ChildProcess/Failure`` naming the call.
enum ChildSyscalls {
    /// A close-on-exec pipe: no child spawned meanwhile by another thread inherits either end.
    static func pipe() throws(ChildProcess.Failure) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        guard rouse_pipe_cloexec(&fds) == 0 else { throw .system("pipe2", errno) }
        return (fds[0], fds[1])
    }

    /// A close-on-exec descriptor for `path`: `/dev/null` to read or write, or a log file (created, truncated).
    static func open(_ path: String, writing: Bool) throws(ChildProcess.Failure) -> Int32 {
        let flags = writing ? O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC : O_RDONLY | O_CLOEXEC
        while true {
            let fd = Glibc.open(path, flags, 0o644)
            if fd >= 0 { return fd }
            if errno != EINTR { throw .system("open \(path)", errno) }
        }
    }

    /// A close-on-exec copy of `fd` above 2 (a child's fd 0-2 are always `dup2` targets of a higher descriptor).
    static func duplicate(_ fd: Int32) throws(ChildProcess.Failure) -> Int32 {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 3)
        guard copy >= 0 else { throw .system("fcntl F_DUPFD_CLOEXEC", errno) }
        return copy
    }

    static func close(_ fd: Int32) { _ = Glibc.close(fd) }

    /// posix_spawn of `path` in a new process group with `stdin`, `stdout`, `stderr` as its fds 0-2, every other
    /// descriptor closed, default signal dispositions and an empty signal mask (see `rouse_spawn_piped`).
    static func spawn(
        _ path: String, _ arguments: [String], environment: [String], stdin: Int32, stdout: Int32, stderr: Int32
    ) throws(ChildProcess.Failure) -> pid_t {
        var pid: pid_t = 0
        let rc = withCStrings([path] + arguments) { argv in
            withCStrings(environment) { envp in rouse_spawn_piped(path, argv, envp, stdin, stdout, stderr, &pid) }
        }
        guard rc == 0 else { throw .system("posix_spawn \(path)", rc) }
        return pid
    }

    /// Blocks until `pid` has exited, without reaping it: the pid (and its process group number) stays ours until
    /// ``reap(_:)``, so a signal sent before that cannot reach another process.
    static func waitForExit(_ pid: pid_t) {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
    }

    /// Reaps an exited child; its raw wait status.
    static func reap(_ pid: pid_t) -> Int32 {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        return raw
    }

    /// Sends `signal` to `pid`, or with `group` to its whole process group; a process already gone is no error.
    static func send(_ signal: Int32, to pid: pid_t, group: Bool) {
        _ = Glibc.kill(group ? -pid : pid, signal)
    }

    /// The pids (ours excepted) whose environment, `/proc/PID/environ`, holds `entry` (`KEY=value`) exactly.
    /// Processes of other users are skipped unless we are root; zombies have no environment left.
    static func processes(withEnvironmentEntry entry: [UInt8]) -> [pid_t] {
        guard let directory = opendir("/proc") else { return [] }
        defer { closedir(directory) }
        var found: [pid_t] = []
        let ours = getpid()
        while let item = readdir(directory) {
            let name = withUnsafeBytes(of: item.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let pid = pid_t(name), pid != ours, environment(of: pid, holds: entry) else { continue }
            found.append(pid)
        }
        return found
    }

    /// SIGKILL to `pid` if it (still) holds `entry` in its environment, through a pidfd opened before the check:
    /// a pid reused meanwhile by another process cannot be hit. True when the signal went out.
    static func kill(_ pid: pid_t, ifItStillCarries entry: [UInt8]) -> Bool {
        let pidfd = rouse_pidfd_open(pid)
        guard pidfd >= 0 else { return false }
        defer { close(pidfd) }
        guard environment(of: pid, holds: entry) else { return false }
        return rouse_pidfd_send_signal(pidfd, SIGKILL) == 0
    }

    private static func environment(of pid: pid_t, holds entry: [UInt8]) -> Bool {
        let fd = Glibc.open("/proc/\(pid)/environ", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var contents: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, into: $0) }
            if count == 0 { break }
            contents += buffer[..<count]
        }
        return contents.split(separator: 0).contains { $0.elementsEqual(entry) }
    }

    /// Reads up to `buffer.count` bytes; 0 at the end of the stream (or on an error: the reader stops either way).
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n >= 0 { return n }
            if errno != EINTR { return 0 }
        }
    }

    /// Writes all of `bytes`; false when the reader went away (`EPIPE`) or on another error. Call it on a thread
    /// of its own: SIGPIPE is blocked on the calling thread first, so a child that exits without reading its
    /// input cannot kill us (the signal stays pending on that thread and ends with it).
    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// `body` with `strings` as a NULL-terminated C array.
    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }
}
