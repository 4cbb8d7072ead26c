import Foundation
import Glibc
import RouseAgent
import RouseAgentClient
import RouseChildProcess
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Synchronization
import Testing

/// Attacks on the real `rouse-agent` process through its 0666 socket, by a local user (`nobody`) who is no handler:
/// while each attack holds, `rouse agent status` answers and a VoIP push reaches its handler.
@Suite("IPC attacks by a local user against rouse-agent", .serialized, .stopsWhatItStarts)
struct AgentIPCAttackTests {
    /// A real `rouse-agent` (a VoIP handler `voip`, run as root with allow-root) on an in-process gateway, its socket
    /// in a directory every user may enter.
    final class Target: Sendable {
        let directory: String
        let gateway: Gateway
        let provider: Provider
        let agent: AgentProcess
        let socket: String
        let token: String
        let log: String

        init(extraArguments: [String] = []) async throws {
            guard getuid() == 0 else { throw FixtureError("an attack as another user needs root (uid \(getuid()))") }
            try ChildProcess.require(AgentIPCAttackTests.python)
            (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
            chmod(directory, 0o755)
            log = directory + "/voip.log"
            let file = """
                topic = "com.example.rouse"
                command = ["\(try Products.path("rouse-example-handler"))", "--mode", "report", "--log", "\(log)"]
                push-types = ["voip"]
                allow-root = true
                """
            try Data(file.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/voip.toml"))
            socket = directory + "/agent.sock"
            provider = try await Provider.connect(port: gateway.providerPort)
            agent = try await AgentProcess(
                arguments: [
                    "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                    "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                    "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
                ] + extraArguments, stderrPath: directory + "/agent.stderr")
            let socket = socket
            try await eventually("channel open", timeout: .seconds(30)) {
                let status = try? await AgentNetworkTests.status(socket: socket)
                return status?.channel == "open" && status?.tokens?.isEmpty == false
            }
            token = try #require(
                try await AgentNetworkTests.status(socket: socket).tokens?["com.example.rouse.voip"])
        }

        /// `rouse agent status --json` as a separate process with a 5 s deadline: its exit code and output.
        func statusCommand() async throws -> (status: Int32, output: String) {
            let output = directory + "/status-\(UUID().uuidString).json"
            let child = try ChildProcess.start(
                "/usr/bin/timeout",
                ["5", try Products.path("rouse"), "agent", "status", "--json", "--socket", socket],
                stdout: .file(output))
            let status = try await child.wait(timeout: .seconds(20))
            return (status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
        }

        /// A VoIP push, then waits (10 s) until the handler reported it.
        func pushReachesHandler(_ count: Int) async throws {
            let status = await provider.push(
                token: token, topic: "com.example.rouse.voip", type: "voip", payload: #"{"n":\#(count)}"#)
            #expect(status == 200)
            let log = log
            try await eventually("push \(count) reported by the handler", timeout: .seconds(10)) {
                ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
                    .split(separator: "\n").filter { $0.hasPrefix("reported id=") }.count >= count
            }
        }

        var stderr: String { (try? String(contentsOfFile: directory + "/agent.stderr", encoding: .utf8)) ?? "" }

        func stop() async {
            agent.kill()
            provider.client.close()
            await gateway.shutdown(gracePeriod: .seconds(1))
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    static let python = "/usr/bin/python3"

    /// Runs `script` (Python, its first argument the agent's socket) as `nobody`; waits for its first stdout line.
    static func attack(_ script: String, _ arguments: [String]) async throws -> (RunningChild, String) {
        let child = try ChildProcess.start(
            "/usr/bin/setpriv",
            ["--reuid=nobody", "--regid=nogroup", "--clear-groups", python, "-c", script] + arguments,
            stdout: .lines)
        guard let line = await child.lines.first(timeout: .seconds(20), where: { _ in true }) else {
            child.kill()
            throw FixtureError("the attacker did not start")
        }
        return (child, line)
    }

    /// The reproduced freeze: an unregistered connection sends `addTransfer` with `descriptor: true` and attaches a
    /// TCP socket whose peer holds a zero window, with `SO_LINGER` of an hour, then closes its own copy: the agent's
    /// close is the last and would wait the hour. The agent answers status and hands over a VoIP push meanwhile.
    @Test(.timeLimit(.minutes(2)))
    func aLingeringSocketPassedByAnUnregisteredPeerDoesNotFreezeTheAgent() async throws {
        let target = try await Target()
        defer { Task { await target.stop() } }
        let script = """
            import json, socket, struct, sys, time
            server = socket.socket()
            server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            tcp = socket.socket()
            tcp.connect(server.getsockname())
            peer, _ = server.accept()  # never reads: its window closes
            tcp.setblocking(False)
            try:
                while True:
                    tcp.send(b"x" * 65536)
            except BlockingIOError:
                pass
            tcp.setblocking(True)
            tcp.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 3600))
            ipc = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            ipc.connect(sys.argv[1])
            body = json.dumps({"type": "addTransfer", "v": 1, "kind": "upload", "url": "https://192.0.2.1/x",
                               "descriptor": True, "session": "s"}).encode()
            frame = struct.pack(">I", len(body)) + body
            # The descriptor rides on the frame's first bytes; the rest follows once our own copy is closed, so
            # that the agent's close is the last one (the one that lingers).
            ipc.sendmsg([frame[:8]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", tcp.fileno()))])
            tcp.close()
            ipc.sendall(frame[8:])
            print("sent", flush=True)
            answer = ipc.recv(65536)
            print("answered", answer[4:].decode(errors="replace"), flush=True)
            time.sleep(3600)
            """
        let (attacker, first) = try await Self.attack(script, [target.socket])
        defer { attacker.kill() }
        #expect(first == "sent")
        let answer = await attacker.lines.first(timeout: .seconds(10)) { $0.hasPrefix("answered") }
        #expect(answer?.contains("notRegistered") == true, "\(answer ?? "no answer")")
        let status = try await target.statusCommand()
        #expect(status.status == 0, "rouse agent status: exit \(status.status)\n\(target.stderr.suffix(2000))")
        #expect(status.output.contains(#""channel""#), "\(status.output)")
        try await target.pushReachesHandler(1)
    }

    /// Eight connections (the most one user may hold) flood unregistered `status` frames and never read the answers.
    /// Each reader queues at most 16 frames for the agent, and a connection the agent cannot write to without
    /// blocking is closed (`ipc.outboundFull`): the agent's memory stays put, status answers, a push gets through.
    @Test(.timeLimit(.minutes(2)))
    func aFloodOfFramesThatNeverReadsItsAnswersIsBounded() async throws {
        let target = try await Target()
        defer { Task { await target.stop() } }
        let pid = target.agent.process.processIdentifier
        @Sendable func residentKiB() -> Int { ProcessProbe.statusKiB(pid, "VmRSS") ?? -1 }
        let before = residentKiB()
        let script = """
            import json, socket, struct, sys, time
            body = json.dumps({"type": "status", "v": 1}).encode()
            burst = (struct.pack(">I", len(body)) + body) * 64
            connections = []
            for _ in range(8):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sys.argv[1])
                s.setblocking(False)
                connections.append(s)
            print("started", flush=True)
            sent = 0
            end = time.time() + 6
            while time.time() < end:
                moved = False
                for s in connections:
                    try:
                        sent += s.send(burst)
                        moved = True
                    except (BlockingIOError, OSError):
                        pass
                if not moved:
                    time.sleep(0.005)
            print("flooded", sent, flush=True)
            time.sleep(3600)
            """
        let (attacker, _) = try await Self.attack(script, [target.socket])
        defer { attacker.kill() }
        let status = try await target.statusCommand()
        #expect(status.status == 0, "rouse agent status during the flood: exit \(status.status)")
        try await target.pushReachesHandler(1)
        let socket = target.socket
        try await eventually("a connection closed for not reading", timeout: .seconds(20)) {
            ((try? await AgentNetworkTests.status(socket: socket))?.ipc?.outboundFull ?? 0) >= 1
        }
        // The 8 attackers' connections and this status request's; the agent takes in a closed connection's end (an
        // earlier status request's, one the agent closed) on its own time: waited for, never above the bound for long.
        let ipc = Mutex<IPCCounters?>(nil)
        do {
            try await eventually("at most 9 unregistered connections", timeout: .seconds(10)) {
                let now = try? await AgentNetworkTests.status(socket: socket).ipc
                ipc.withLock { $0 = now }
                return (now?.unregistered ?? 99) <= 9
            }
        } catch {
            Issue.record("\(error): \(String(describing: ipc.withLock { $0 }))")
        }
        let after = residentKiB()
        #expect(after - before < 64 * 1024, "resident \(before) KiB → \(after) KiB")
    }

    /// A FUSE file system (served by the test, as root) whose `FLUSH` is never answered: every `close()` of its file
    /// blocks until the server dies, whatever `SO_LINGER` says. The server prints `mounted` once its file `f` exists.
    static let neverFlushingFUSE = """
        import ctypes, os, struct, sys
        mnt = sys.argv[1]
        dev = os.open("/dev/fuse", os.O_RDWR)
        libc = ctypes.CDLL(None, use_errno=True)
        opts = f"fd={dev},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
        if libc.mount(b"rousefuse", mnt.encode(), b"fuse.rousefuse", 2 | 4, opts) != 0:
            print("mount failed:", os.strerror(ctypes.get_errno()), flush=True)
            sys.exit(1)
        print("mounted", flush=True)
        def attr(ino, mode):
            return struct.pack("<QQQQQQIIIIIIIIII", ino, 0, 0, 0, 0, 0, 0, 0, 0, mode, 1, 0, 0, 0, 4096, 0)
        def reply(unique, error=0, body=b""):
            os.write(dev, struct.pack("<IiQ", 16 + len(body), -error, unique) + body)
        while True:
            data = os.read(dev, 1 << 20)
            length, opcode, unique, nodeid = struct.unpack_from("<IIQQ", data)
            if opcode == 26:  # INIT
                major, minor, readahead = struct.unpack_from("<III", data, 40)
                reply(unique, 0, struct.pack("<IIIIHHIIHHI", 7, min(minor, 31), readahead, 0, 16, 12, 65536, 1, 16, 0, 0)
                      + bytes(28))
            elif opcode == 1:  # LOOKUP
                reply(unique, 0, struct.pack("<QQQQII", 2, 0, 3600, 3600, 0, 0) + attr(2, 0o100666))
            elif opcode == 3:  # GETATTR
                reply(unique, 0, struct.pack("<QII", 3600, 0, 0) + attr(nodeid, 0o40755 if nodeid == 1 else 0o100666))
            elif opcode == 14:  # OPEN
                reply(unique, 0, struct.pack("<QII", 1, 0, 0))
            elif opcode in (25, 2, 42, 36):  # FLUSH: never answered; FORGET, BATCH_FORGET, INTERRUPT: no answer
                pass
            elif opcode == 18:  # RELEASE
                reply(unique)
            else:
                reply(unique, 38)  # ENOSYS
        """

    /// The close-queue exhaustion: an unregistered peer (`nobody`, 8 connections) passes the same file of a FUSE
    /// mount that never answers `FLUSH` with `addTransfer` frames, and connects again whenever the agent closes a
    /// connection (it does after the first frame: `notRegistered`). `flood`: each connection sends as fast as it
    /// can; `oneAtATime`: each sends one frame and waits for the close; `leftover`: each sends the descriptor with
    /// the first bytes of a frame that never comes, then ends the connection (the reader closes it, as a stray).
    /// Each close blocks (all four close threads are soon held), so every descriptor the agent takes stays open: a
    /// connection's reader stops while 2 of its descriptors wait (`ipc.closesPending`), a connection that ended keeps its slot in the uid's quota while its
    /// descriptors wait (`ipc.slotsKeptForCloses`), the next connections are refused (`ipc.refusedOverQuota`), the
    /// agent's open descriptors (`/proc/PID/fd`) stay bounded, and status answers. (Before a slot was kept,
    /// `oneAtATime` pinned one more descriptor with every connection: 20,000 in 8 s, the agent's limit; before the
    /// leftover was closed ahead of the connection's end, `leftover` pinned a descriptor and a thread with each.)
    @Test(.timeLimit(.minutes(2)), arguments: ["flood", "oneAtATime", "leftover"])
    func descriptorsWhoseCloseNeverEndsAreBoundedPerConnection(_ mode: String) async throws {
        let target = try await Target()
        defer { Task { await target.stop() } }
        guard access("/dev/fuse", R_OK | W_OK) == 0 else { throw FixtureError("needs /dev/fuse (errno \(errno))") }
        let mountpoint = target.directory + "/fuse"
        try #require(mkdir(mountpoint, 0o755) == 0)
        let server = try ChildProcess.start(Self.python, ["-c", Self.neverFlushingFUSE, mountpoint], stdout: .lines)
        var attacker: RunningChild?
        defer {
            server.kill()  // first: the connection is aborted and every blocked close returns
            umount2(mountpoint, Int32(MNT_DETACH))
            attacker?.kill()
        }
        let mounted = await server.lines.first(timeout: .seconds(20)) { _ in true }
        try #require(mounted == "mounted", "FUSE server: \(mounted ?? "no output")")
        let pid = target.agent.process.processIdentifier
        @Sendable func openDescriptors() -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count ?? -1
        }
        // A close that blocks takes the number out of the table first: the thread blocked in it, not the number,
        // is what such a descriptor costs the agent (`Threads:` in /proc/PID/status).
        @Sendable func threads() -> Int { ProcessProbe.statusNumber(pid, "Threads") ?? -1 }
        let before = openDescriptors()
        let threadsBefore = threads()
        let script = """
            import json, os, socket, struct, sys, time
            fd = os.open(sys.argv[2] + "/f", os.O_RDONLY)
            body = json.dumps({"type": "addTransfer", "v": 1, "kind": "upload", "url": "https://192.0.2.1/x",
                               "descriptor": True, "session": "s"}).encode()
            frame = struct.pack(">I", len(body)) + body
            rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", fd))]
            def connect():
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sys.argv[1])
                s.setblocking(False)
                return [s, b"", False]
            connections = [connect() for _ in range(8)]
            print("started", flush=True)
            sent = 0
            end = time.time() + 6
            while time.time() < end:
                moved = False
                for i, c in enumerate(connections):
                    if c is None:  # the agent closed it: connect again, as an attacker would
                        try:
                            connections[i] = c = connect()
                        except OSError:
                            continue
                    try:
                        while True:  # the answers (notRegistered), read so the agent can write
                            if not c[0].recv(65536):
                                raise ConnectionResetError
                    except BlockingIOError:
                        pass
                    except OSError:
                        c[0].close()
                        connections[i] = None
                        continue
                    # oneAtATime: one frame, then the close is waited for (the reader then ends with that one
                    # descriptor still waiting to be closed).
                    if sys.argv[3] == "oneAtATime" and c[2] and not c[1]:
                        continue
                    # leftover: the descriptor with the first 2 bytes of a frame that never comes, then the end.
                    if sys.argv[3] == "leftover":
                        try:
                            c[0].sendmsg([frame[:2]], rights)
                            sent += 1
                            moved = True
                        except OSError:
                            pass
                        c[0].close()
                        connections[i] = None
                        continue
                    try:
                        if c[1]:
                            c[1] = c[1][c[0].send(c[1]):]
                        else:
                            c[1] = frame[c[0].sendmsg([frame], rights):]
                            c[2] = True
                            sent += 1
                        moved = True
                    except BlockingIOError:
                        pass
                    except OSError:
                        c[0].close()
                        connections[i] = None
                if not moved:
                    time.sleep(0.005)
            print("flooded", sent, flush=True)
            time.sleep(3600)
            """
        let (child, first) = try await Self.attack(script, [target.socket, mountpoint, mode])
        attacker = child
        #expect(first == "started")
        let flooded = await child.lines.first(timeout: .seconds(30)) { $0.hasPrefix("flooded") }
        let sent = Int(flooded?.split(separator: " ").last ?? "") ?? 0
        let status = try await target.statusCommand()
        #expect(status.status == 0, "rouse agent status during the attack: exit \(status.status)")
        let ipc = try await AgentNetworkTests.status(socket: target.socket).ipc
        let after = openDescriptors()
        let threadsAfter = threads()
        print(
            "IPC attack, FUSE descriptors (\(mode)): \(sent) frames sent; agent descriptors \(before) → \(after),"
                + " threads \(threadsBefore) → \(threadsAfter);"
                + " refused at accept \(ipc?.refusedOverQuota ?? -1), slots kept for closes"
                + " \(ipc?.slotsKeptForCloses ?? -1), reader stops \(ipc?.closesPending ?? -1)")
        // Per connection: its socket, its peer's pidfd and at most 3 passed descriptors held; status connections.
        // The connections the agent closed keep their slots while their descriptors wait: the uid's 8 in all.
        #expect(after - before <= 8 * 5 + 8, "open descriptors \(before) → \(after) after \(sent) frames sent")
        // A reader per connection of the uid's 8 and the 4 close threads, each may be blocked in a close; the
        // status connections' readers and the agent's own threads started on demand (17-19 in all seen). A leak
        // costs one per connection: 22,409 in the test's 6 s when the leftover was closed after the end.
        #expect(threadsAfter - threadsBefore <= 8 + 4 + 16, "threads \(threadsBefore) → \(threadsAfter)")
        switch mode {
        case "flood":
            #expect((ipc?.blockingRunning ?? 0) >= 1, "no close blocked: \(String(describing: ipc))")
            #expect((ipc?.closesPending ?? 0) >= 1, "\(String(describing: ipc))")
        case "oneAtATime":
            #expect((ipc?.blockingRunning ?? 0) >= 1, "no close blocked: \(String(describing: ipc))")
            #expect((ipc?.slotsKeptForCloses ?? 0) >= 8, "\(String(describing: ipc))")
        default:
            // Each reader is held in the close of its leftover, its connection (and slot) not yet ended.
            #expect((ipc?.strayDescriptors ?? 0) >= 8, "\(String(describing: ipc))")
        }
        // The attack went past the budget: the attacker's later connections were refused at accept while the
        // descriptors its earlier ones passed stayed open.
        #expect((ipc?.refusedOverQuota ?? 0) >= 1, "\(String(describing: ipc))")
        #expect(sent > 8 * 5 + 8, "the attacker sent only \(sent) frames")
    }
}
