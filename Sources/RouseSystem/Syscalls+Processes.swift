import CRouseSys
import Glibc

// Processes: spawning (the agent's handlers and hooks, the state store's short children, the child processes of
// tests and benchmarks), pidfds, signals, waiting, /proc. Errno policy as in `Syscalls.swift`; here ESRCH (the
// process is gone) and a /proc file that cannot be read (gone, or another user's) are values.

extension Sys {
    // MARK: Spawning

    /// posix_spawn in a new process group with `channel` as fd 3 (-1: none) and no other descriptor above 2;
    /// returns the pid and its pidfd. With `identity`, the child switches to that uid, gid and supplementary
    /// groups first (fork + exec: posix_spawn cannot). A child whose pidfd cannot be opened is killed and reaped.
    package static func spawn(
        path: String, arguments: [String], environment: [String], channel: Int32,
        identity: (uid: UInt32, gid: UInt32, groups: [UInt32])? = nil
    ) throws(SystemError) -> (pid: Int32, pidfd: Int32) {
        var pid: pid_t = 0
        let rc = withCStrings(arguments) { argv in
            withCStrings(environment) { envp in
                if let identity {
                    return identity.groups.withUnsafeBufferPointer { groups in
                        rouse_spawn_as(
                            path, argv, envp, channel, identity.uid, identity.gid, groups.baseAddress,
                            Int32(groups.count), &pid)
                    }
                }
                return rouse_spawn(path, argv, envp, channel, &pid)
            }
        }
        guard rc == 0 else { throw SystemError(call: identity == nil ? "posix_spawn" : "fork", errno: rc, path: path) }
        let pidfd = rouse_pidfd_open(pid)
        guard pidfd >= 0 else {
            // Out of descriptors: a child we cannot track must not live on. It is ours and not reaped yet, so its
            // pid cannot have been reused.
            let error = SystemError(call: "pidfd_open", code: .current)
            _ = Glibc.kill(pid, SIGKILL)
            _ = reap(pid)
            throw error
        }
        return (pid, pidfd)
    }

    /// A handler's spawn (`rouse_spawn_handler`): the child joins each cgroup whose `cgroup.procs` is open in
    /// `cgroupProcs` (none: empty; its v2 group and, on a hybrid host, its v1 pids and memory groups) before it runs
    /// anything, gets `output` (-1: ours) as its fds 1 and 2 and `channel` as
    /// fd 3, nothing else, and switches to `identity` when given. Returns the pid and its pidfd (a child whose pidfd
    /// cannot be opened is killed and reaped). `oomScoreAdjust`: its `oom_score_adj`, set before it runs (nil: ours).
    package static func spawnHandler(
        path: String, arguments: [String], environment: [String], channel: Int32, output: Int32, cgroupProcs: [Int32],
        identity: (uid: UInt32, gid: UInt32, groups: [UInt32])?, oomScoreAdjust: Int32? = nil
    ) throws(SystemError) -> (pid: Int32, pidfd: Int32) {
        var pid: pid_t = 0
        let groups = identity?.groups ?? []
        let rc = withCStrings(arguments) { argv in
            withCStrings(environment) { envp in
                groups.withUnsafeBufferPointer { groups in
                    cgroupProcs.withUnsafeBufferPointer { procs in
                        rouse_spawn_handler(
                            path, argv, envp, channel, output, procs.baseAddress, Int32(procs.count),
                            identity == nil ? 0 : 1, identity?.uid ?? 0, identity?.gid ?? 0, groups.baseAddress,
                            Int32(groups.count), oomScoreAdjust ?? Int32.min, &pid)
                    }
                }
            }
        }
        guard rc == 0 else { throw SystemError(call: "fork", errno: rc, path: path) }
        let pidfd = rouse_pidfd_open(pid)
        guard pidfd >= 0 else {
            let error = SystemError(call: "pidfd_open", code: .current)
            _ = Glibc.kill(pid, SIGKILL)
            _ = reap(pid)
            throw error
        }
        return (pid, pidfd)
    }

    /// posix_spawn of `path` in a new process group with `stdin`, `stdout`, `stderr` as its fds 0-2, every other
    /// descriptor closed, default signal dispositions and an empty signal mask (see `rouse_spawn_piped`).
    /// `arguments` starts with the program's name (`argv[0]`); `environment` nil: this process's.
    package static func spawnPiped(
        _ path: String, arguments: [String], environment: [String]?, stdin: Int32, stdout: Int32, stderr: Int32
    ) throws(SystemError) -> pid_t {
        var pid: pid_t = 0
        let rc = withCStrings(arguments) { argv in
            guard let environment else { return rouse_spawn_piped(path, argv, environ, stdin, stdout, stderr, &pid) }
            return withCStrings(environment) { envp in
                rouse_spawn_piped(path, argv, envp, stdin, stdout, stderr, &pid)
            }
        }
        guard rc == 0 else { throw SystemError(call: "posix_spawn", errno: rc, path: path) }
        return pid
    }

    /// A close-on-exec pipe (`pipe2`): no child spawned meanwhile by another thread inherits either end.
    package static func pipe() throws(SystemError) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        _ = try check("pipe2", rouse_pipe_cloexec(&fds))
        return (fds[0], fds[1])
    }

    /// A close-on-exec copy of `fd` above 2 (a child's fd 0-2 are always `dup2` targets of a higher descriptor).
    package static func duplicate(_ fd: Int32) throws(SystemError) -> Int32 {
        try check("fcntl F_DUPFD_CLOEXEC", fcntl(fd, F_DUPFD_CLOEXEC, 3))
    }

    /// Marks `fd` close-on-exec (best effort: a descriptor that is not open stays as it is).
    package static func setCloseOnExec(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFD)
        if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
    }

    /// Writes all of `bytes` to a pipe; false when the reader went away (`EPIPE`) or on another error. Call it on
    /// a thread of its own: SIGPIPE is blocked on the calling thread first, so a child that exits without reading
    /// its input cannot kill us (the signal stays pending on that thread and ends with it).
    package static func writeToChild(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
        return (try? writeAll(fd, bytes, path: nil)) != nil
    }

    /// Reads up to `buffer.count` bytes of a child's output; 0 at the end of the stream, or on an error (the
    /// reader stops either way).
    package static func readFromChild(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        (try? read(fd, into: buffer)) ?? 0
    }

    /// `body` with `strings` as a NULL-terminated C array.
    static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return body(pointers)
    }

    // MARK: Waiting and signals

    /// Blocks until the child behind `pidfd` exits and reaps it; its exit status (128+signal when killed), -1 when
    /// it cannot be waited for.
    package static func wait(pidfd: Int32) -> Int32 {
        var status: Int32 = -1
        _ = rouse_pidfd_wait(pidfd, &status)
        return status
    }

    /// Blocks until the process behind `pidfd` exits (a process that is not our child: it cannot be reaped
    /// here, only watched; `poll` reports the pidfd readable at exit). Returns -1: the status is its parent's.
    package static func waitForExit(pidfd: Int32) -> Int32 {
        var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
        while true {
            let result = Glibc.poll(&entry, 1, -1)
            if result > 0 { return -1 }
            if result < 0 && Glibc.errno != EINTR { return -1 }
        }
    }

    /// Waits up to `milliseconds` for the process behind `pidfd` to exit: true when it did.
    package static func waitForExit(pidfd: Int32, milliseconds: Int32) -> Bool {
        rouse_pidfd_poll(pidfd, milliseconds) > 0
    }

    /// Blocks until child `pid` has exited, without reaping it: the pid (and its process group number) stays ours
    /// until ``reap(_:)``, so a signal sent before that cannot reach another process.
    package static func waitForExit(pid: pid_t) {
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && Glibc.errno == EINTR {}
    }

    /// Reaps an exited child; its raw wait status.
    @discardableResult
    package static func reap(_ pid: pid_t) -> Int32 {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && Glibc.errno == EINTR {}
        return raw
    }

    /// Signals the process behind `pidfd`; false when it is already gone (`ESRCH`).
    @discardableResult
    package static func signal(pidfd: Int32, _ signal: Int32) -> Bool {
        rouse_pidfd_send_signal(pidfd, signal) == 0
    }

    /// Signals a whole process group (only while its leader's pidfd is alive or its leader is our unreaped child,
    /// so the group id cannot have been reused); false when the group is gone.
    @discardableResult
    package static func signalGroup(_ pgid: Int32, _ signal: Int32) -> Bool {
        Glibc.kill(-pgid, signal) == 0
    }

    /// Signals one process; false when it is gone.
    @discardableResult
    package static func signal(pid: Int32, _ signal: Int32) -> Bool {
        Glibc.kill(pid, signal) == 0
    }

    /// A pidfd for an existing process, nil when it is gone (`ESRCH`) or not ours to open.
    package static func openPidfd(pid: Int32) -> Int32? {
        let fd = rouse_pidfd_open(pid)
        return fd >= 0 ? fd : nil
    }

    /// The pid behind a pidfd, nil once the process exited.
    package static func pid(ofPidfd pidfd: Int32) -> Int32? {
        let pid = rouse_pidfd_pid(pidfd)
        return pid > 0 ? pid : nil
    }

    /// This process's pid.
    package static var processID: Int32 { getpid() }

    /// Sleeps the calling thread (start-up clean-up, accept back-off).
    package static func pause(milliseconds: Int) { usleep(useconds_t(milliseconds * 1000)) }

    // MARK: /proc

    /// The cgroup v2 path of a process (`0::…` of `/proc/PID/cgroup`), nil when it is gone.
    package static func cgroupPath(pid: Int32) -> String? {
        guard let text = readText("/proc/\(pid)/cgroup"),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") })
        else { return nil }
        return String(line.dropFirst(3))
    }

    /// The fields of `/proc/<pid>/stat` after `(comm)`: field 3 first.
    private static func statFields(pid: Int32) -> [Substring]? {
        guard let stat = readText("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    /// Field 5 of `/proc/<pid>/stat`: the process group.
    package static func processGroup(pid: Int32) -> Int32? {
        guard let fields = statFields(pid: pid), fields.count > 2 else { return nil }
        return Int32(fields[2])
    }

    /// Field 22 of `/proc/<pid>/stat` (start time, clock ticks since boot); with the pid it names one process
    /// for the life of the system. Nil when the process is gone.
    package static func startTime(pid: Int32) -> UInt64? {
        // After "(comm)" come fields 3, 4, …: field 22 is the 20th of them.
        guard let fields = statFields(pid: pid), fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    /// Whether a live process has this pid (`/proc/PID/stat` exists and its state is not zombie or dead).
    package static func processExists(_ pid: Int32) -> Bool {
        guard let stat = readText("/proc/\(pid)/stat"), let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(after: close)...].drop { $0 == " " }.first
        return state != "Z" && state != "X"
    }

    /// `/proc/<pid>/exe` resolved.
    package static func executable(pid: Int32) -> String? { readLink("/proc/\(pid)/exe") }

    /// The pids (ours excepted) whose environment, `/proc/PID/environ`, holds `entry` (`KEY=value`) exactly.
    /// Processes of other users are skipped unless we are root; zombies have no environment left.
    package static func processes(withEnvironmentEntry entry: [UInt8]) -> [pid_t] {
        let ours = getpid()
        return ((try? directoryEntries("/proc")) ?? []).compactMap { name in
            guard let pid = pid_t(name), pid != ours, environment(of: pid, holds: entry) else { return nil }
            return pid
        }
    }

    /// SIGKILL to `pid` if it (still) holds `entry` in its environment, through a pidfd opened before the check:
    /// a pid reused meanwhile by another process cannot be hit. True when the signal went out.
    package static func kill(_ pid: pid_t, ifItStillCarries entry: [UInt8]) -> Bool {
        guard let pidfd = openPidfd(pid: pid) else { return false }
        defer { close(pidfd) }
        guard environment(of: pid, holds: entry) else { return false }
        return signal(pidfd: pidfd, SIGKILL)
    }

    private static func environment(of pid: pid_t, holds entry: [UInt8]) -> Bool {
        guard let contents = try? readFile("/proc/\(pid)/environ") else { return false }
        return contents.split(separator: 0).contains { $0.elementsEqual(entry) }
    }
}
