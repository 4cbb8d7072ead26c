import Foundation
import Glibc
import RouseAgent
import RouseAgentCore
import RouseChildProcess
import RouseSystem
import RouseTestSupport
import Synchronization
import Testing

/// Who a handler is beyond its uid: its launch's cgroup (or process group), its files' owners and modes, its
/// interpreter's script, and a cgroup joined before it runs.
@Suite("Handler identity: launches, files, scripts, cgroups", .serialized, .stopsWhatItStarts)
struct AgentHandlerIdentityTests {
    /// Two handlers with the same uid (root, allow-root) and the same executable (python3): the one that runs opens
    /// the socket path and registers as its idle sibling. Refused: it is part of its own launch, not the sibling's.
    @Test(.timeLimit(.minutes(1)))
    func aHandlerCannotRegisterAsAnIdleSiblingWithTheSameUidAndExecutable() async throws {
        let python = "/usr/bin/python3"
        try ChildProcess.require(python)
        let answerFile = Mutex("")
        let harness = try await AgentHarness { directory in
            let answer = directory + "/answer.json"
            answerFile.withLock { $0 = answer }
            let attack = """
                import json, os, socket, struct, sys
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(os.environ["ROUSE_AGENT_SOCKET"])
                body = json.dumps({"type": "register", "v": 1, "handler": "victim"}).encode()
                s.sendall(struct.pack(">I", len(body)) + body)
                head = s.recv(4)
                data = s.recv(struct.unpack(">I", head)[0]) if len(head) == 4 else b"closed"
                with open(sys.argv[1] + ".tmp", "w") as f:
                    f.write(data.decode())
                os.rename(sys.argv[1] + ".tmp", sys.argv[1])
                """
            return [
                HandlerConfiguration(
                    name: "attacker", topic: "com.example.attacker", command: [python, "-c", attack, answer],
                    pushTypes: ["voip"], allowRoot: true),
                HandlerConfiguration(
                    name: "victim", topic: "com.example.victim",
                    command: [python, "-c", "import time; time.sleep(60)"],
                    pushTypes: ["voip"], allowRoot: true),
            ]
        }
        try await harness.push("attacker", type: "voip")
        let path = answerFile.withLock { $0 }
        try await eventually("the attacker's answer", timeout: .seconds(20)) {
            FileManager.default.fileExists(atPath: path)
        }
        let answer = try String(contentsOfFile: path, encoding: .utf8)
        #expect(answer.contains("notAuthorized") && answer.contains("attacker"), "\(answer)")
        #expect(await harness.handlerStatus("victim")?.connected == false)
    }

    /// An interpreter handler runs its script: a script others may write is refused like an executable would be.
    @Test(.timeLimit(.minutes(1)))
    func anInterpretersScriptOthersCouldWriteIsRefused() async throws {
        let scriptPath = Mutex("")
        let harness = try await AgentHarness { directory in
            let script = directory + "/handler.py"
            scriptPath.withLock { $0 = script }
            try Data("import time\ntime.sleep(30)\n".utf8).write(to: URL(fileURLWithPath: script))
            chmod(script, 0o666)
            return [
                HandlerConfiguration(
                    name: "voip", topic: AgentHarness.bundleID, command: ["/usr/bin/python3", "-u", script],
                    pushTypes: ["voip"], allowRoot: true)
            ]
        }
        try await harness.push("voip", type: "voip")
        try await eventually("launch refused") { await harness.handlerStatus("voip")?.launchRefused != nil }
        let refused = await harness.handlerStatus("voip")?.launchRefused ?? ""
        let script = scriptPath.withLock { $0 }
        #expect(refused.contains("\(script) is writable by group or others (mode 0666)"), "\(refused)")
    }

    /// Handler files grant `user` and `allow-root`: a file or directory another user owns or may write is refused.
    @Test(arguments: ["file-writable", "directory-writable", "file-owned-by-nobody"])
    func handlerFilesOthersCouldWriteAreRefused(_ flaw: String) throws {
        guard getuid() == 0 else { throw FixtureError("chown needs root (uid \(getuid()))") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-hf-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/voip.toml"
        try Data("topic = \"com.example.rouse\"\ncommand = [\"/bin/true\"]\n".utf8).write(
            to: URL(fileURLWithPath: file))
        chmod(directory, 0o755)
        chmod(file, 0o644)
        #expect(try HandlerConfiguration.load(directory: directory).count == 1)
        let nobody = try #require(getpwnam("nobody")).pointee.pw_uid
        let expected: String
        switch flaw {
        case "file-writable":
            chmod(file, 0o646)
            expected = "\(file) is writable by group or others (mode 0646)"
        case "directory-writable":
            chmod(directory, 0o775)
            expected = "\(directory) is writable by group or others (mode 0775)"
        default:
            chown(file, nobody, 0)
            expected = "\(file) is owned by uid \(nobody)"
        }
        do {
            _ = try HandlerConfiguration.load(directory: directory)
            Issue.record("loaded despite \(flaw)")
        } catch {
            #expect("\(error)".contains(expected), "\(error)")
        }
    }

    /// A handler is in its cgroup from its first instruction: the child writes itself into `cgroup.procs` before it
    /// executes the handler, so the handler's own first read of `/proc/self/cgroup` (and anything it forks) is
    /// inside (cgroup v2; the test's cgroup must be writable, as the agent's is).
    @Test func aHandlerRunsInItsCgroupFromItsFirstInstruction() throws {
        guard let (mount, own) = Self.cgroupV2() else {
            throw FixtureError("no writable cgroup v2 hierarchy (/proc/self/mountinfo): the agent needs one")
        }
        let directory = mount + (own == "/" ? "" : own) + "/rouse-placement-\(UUID().uuidString.prefix(8))"
        try Sys.makeDirectory(directory, mode: 0o755)
        defer { Sys.removeDirectory(directory) }
        let procs = try Sys.open(directory + "/cgroup.procs", O_WRONLY | O_CLOEXEC)
        defer { Sys.close(procs) }
        let pipe = try Sys.pipe()
        let spawned = try Sys.spawnHandler(
            path: "/bin/cat", arguments: ["cat", "/proc/self/cgroup"], environment: [], channel: -1, output: pipe.write,
            cgroupProcs: [procs], identity: nil)
        Sys.close(pipe.write)
        var output: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
        defer { buffer.deallocate() }
        while let count = try? Sys.read(pipe.read, into: buffer), count > 0 { output += buffer[..<count] }
        Sys.close(pipe.read)
        _ = Sys.wait(pidfd: spawned.pidfd)
        Sys.close(spawned.pidfd)
        let line = String(decoding: output, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("0::") }
        #expect(line.map { mount + $0.dropFirst(3) } == directory, "\(String(decoding: output, as: UTF8.self))")
    }

    /// The cgroup2 mount and this process's cgroup in it, when its `cgroup.procs` can be written next to.
    static func cgroupV2() -> (String, String)? {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8),
            let cgroup = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
            let own = cgroup.split(separator: "\n").first(where: { $0.hasPrefix("0::") }).map({
                String($0.dropFirst(3))
            })
        else { return nil }
        for line in mounts.split(separator: "\n") where line.contains(" - cgroup2 ") {
            let fields = line.split(separator: " ")
            guard fields.count > 4 else { continue }
            let mount = String(fields[4])
            if access(mount + (own == "/" ? "" : own), W_OK) == 0 { return (mount, own) }
        }
        return nil
    }
}
