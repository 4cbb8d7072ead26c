import Foundation
import RouseAgent
import RouseAgentCore
import RouseChildProcess
import RouseSystem
import RouseTestSupport
import Testing

/// ``HeldResourceProbe`` against real processes: a Python child that listens (TCP, UDP, unix) and takes a lock is
/// seen listening and holding it; one that only has connected sockets and the same file open holds nothing.
@Suite(
    "What a handler holds, read from /proc of real processes", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(2)))
struct HeldResourceProbeTests {
    static let python = "/usr/bin/python3"

    /// `holder.py READY LOCKFILE MODE…`: modes `listen` (TCP and UDP on 127.0.0.1, a unix socket next to READY),
    /// `flock`/`lockf` (that lock on LOCKFILE), `open` (LOCKFILE open, no lock), `client` (a connected TCP and UDP
    /// socket to PORT from `connect=PORT`). Writes `tcp PORT`, `udp PORT` lines into READY (renamed into place),
    /// then sleeps until killed.
    static let holder = """
        import fcntl, os, signal, socket, sys
        ready, lockfile, modes = sys.argv[1], sys.argv[2], sys.argv[3:]
        keep, lines = [], []
        if "listen" in modes:
            t = socket.socket(); t.bind(("127.0.0.1", 0)); t.listen(); keep.append(t)
            u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0)); keep.append(u)
            x = socket.socket(socket.AF_UNIX); x.bind(ready + ".sock"); x.listen(); keep.append(x)
            lines += ["tcp %d" % t.getsockname()[1], "udp %d" % u.getsockname()[1]]
        for m in modes:
            if m.startswith("connect="):
                port = int(m[8:])
                c = socket.create_connection(("127.0.0.1", port)); keep.append(c)
                d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); d.connect(("127.0.0.1", port)); keep.append(d)
        if "flock" in modes or "lockf" in modes or "open" in modes:
            f = open(lockfile, "a"); keep.append(f)
            if "flock" in modes: fcntl.flock(f, fcntl.LOCK_EX)
            if "lockf" in modes: fcntl.lockf(f, fcntl.LOCK_EX)
        with open(ready + ".tmp", "w") as out: out.write("\\n".join(lines) + "\\n")
        os.rename(ready + ".tmp", ready)
        while True: signal.pause()
        """

    /// A directory of its own for one test (removed at the end).
    static func directory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-held-\(UUID())").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try Data(holder.utf8).write(to: URL(fileURLWithPath: path + "/holder.py"))
        return path
    }

    /// Starts the holder with `modes`; waits for its READY file; its lines.
    static func start(_ directory: String, _ name: String, _ modes: [String]) async throws -> (RunningChild, [String]) {
        try ChildProcess.require(python)
        let ready = directory + "/" + name + ".ready"
        let child = try ChildProcess.start(
            python, [directory + "/holder.py", ready, directory + "/data.lock"] + modes,
            stderr: .file(directory + "/" + name + ".stderr"))
        try await eventually("\(name) ready") { FileManager.default.fileExists(atPath: ready) }
        let text = try String(contentsOfFile: ready, encoding: .utf8)
        return (child, text.split(separator: "\n").map(String.init))
    }

    @Test func aListenerAndALockHolderAreSeenAndAClientIsNot() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (listener, ports) = try await Self.start(directory, "listener", ["listen", "flock"])
        defer { listener.kill() }
        let tcpPort = try #require(ports.first { $0.hasPrefix("tcp ") }?.dropFirst(4))
        let udpPort = try #require(ports.first { $0.hasPrefix("udp ") }?.dropFirst(4))
        let (client, _) = try await Self.start(directory, "client", ["connect=\(tcpPort)", "open"])
        defer { client.kill() }

        let files = [directory + "/data.lock", directory + "/other.lock"]
        _ = FileManager.default.createFile(atPath: files[1], contents: nil)
        let held = HeldResourceProbe.read(pids: [listener.processIdentifier], exclusiveFiles: files)
        #expect(
            held.listeningSockets == [
                ListeningSocket(proto: "tcp", local: "127.0.0.1:\(tcpPort)"),
                ListeningSocket(proto: "udp", local: "127.0.0.1:\(udpPort)"),
                ListeningSocket(proto: "unix", local: directory + "/listener.ready.sock"),
            ])
        #expect(held.lockedExclusiveFiles == [files[0]])

        // Connected sockets listen on nothing; the file it has open is locked by the other process, not by it.
        let other = HeldResourceProbe.read(pids: [client.processIdentifier], exclusiveFiles: files)
        #expect(other == HeldResources())
        // A process group's members are found without a cgroup (the SIGSTOP mechanism).
        #expect(
            HeldResourceProbe.pids(cgroup: nil, processGroup: listener.processIdentifier) == [
                listener.processIdentifier
            ])
    }

    @Test func aPOSIXLockIsSeenToo() async throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (holder, _) = try await Self.start(directory, "posix", ["lockf"])
        defer { holder.kill() }
        let held = HeldResourceProbe.read(pids: [holder.processIdentifier], exclusiveFiles: [directory + "/data.lock"])
        #expect(held.lockedExclusiveFiles == [directory + "/data.lock"])
        #expect(held.listeningSockets.isEmpty)
    }
}
