import Foundation
import RouseAgent
import RouseAgentClient
import RouseChildProcess
import RouseGateway

/// The network parts of `rouse-bench transfers` (root only): the built `rouse-agent` in a network namespace behind a
/// veth pair (its inside end declared expensive, `--expensive-interface`), a `rouse-gateway`, two handlers
/// (`rouse-example-handler`, command pipes) and `Tests/Interop/range_server.py` (plain HTTP, rate-limited, a JSON
/// line per request with the bytes it wrote) on the outside address.
///
/// - `--link-drop`: a download is cut by taking the link down for 2 s; figures: link down → task waiting, link up →
///   the ranged GET at the server, link up → completed, and the bytes the server wrote twice (both GETs' bytes minus
///   the file's size) against what the agent had spooled when it stopped.
/// - `--discretionary-idle SECONDS`: 100 discretionary downloads queued (50 per handler: the per-handler budget is
///   64) while the only path is expensive; the agent's wake-ups (voluntary context switches of its threads) per
///   minute over the window, after it settled.
extension TransferBench {
    struct NetworkRig {
        let namespace: String
        let outside: String
        let inside: String
        let outsideAddress = "10.203.1.1"
        let directory: String
        var socket: String { directory + "/agent.sock" }

        func log(_ handler: String) -> [String] {
            ((try? String(contentsOfFile: directory + "/\(handler).log", encoding: .utf8)) ?? "")
                .split(separator: "\n").map(String.init)
        }

        func command(_ handler: String, _ lines: [String]) throws {
            let pipe = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/\(handler).fifo"))
            defer { try? pipe.close() }
            try pipe.write(contentsOf: Data(lines.map { $0 + "\n" }.joined().utf8))
        }

        /// The agent's `transfers` document: its tasks.
        func tasks() async throws -> [[String: Any]] {
            let client = try AgentClient(socketPath: socket)
            defer { client.close() }
            guard case .statusReply(let reply) = try await client.request(.transfers),
                let object = try JSONSerialization.jsonObject(with: Data(reply.detail.utf8)) as? [String: Any]
            else { throw Bench.Failure(description: "transfers: no answer") }
            return object["tasks"] as? [[String: Any]] ?? []
        }

        func link(up: Bool) throws {
            try AgentNetworkBench.ip(["-n", namespace, "link", "set", inside, up ? "up" : "down"])
        }
    }

    static func network(
        certs: String, handlerPath: String, linkDrop: Bool, idleSeconds: Int?, json: Bool
    ) async throws {
        guard getuid() == 0 else { throw Bench.Failure(description: "--link-drop and --discretionary-idle need root") }
        let root = (certs as NSString).deletingLastPathComponent
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-bench-transfers-net-\(getpid())"
        ).path
        try FileManager.default.createDirectory(atPath: directory + "/handlers", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let pid = getpid()
        let rig = NetworkRig(
            namespace: "rt-\(pid)", outside: "rto\(pid % 100_000)", inside: "rti\(pid % 100_000)",
            directory: directory)
        try AgentNetworkBench.ip(["netns", "add", rig.namespace])
        defer {
            try? AgentNetworkBench.ip(["link", "del", rig.outside])
            try? AgentNetworkBench.ip(["netns", "del", rig.namespace])
        }
        try AgentNetworkBench.ip([
            "link", "add", rig.outside, "type", "veth", "peer", "name", rig.inside, "netns", rig.namespace,
        ])
        try AgentNetworkBench.ip(["addr", "add", "\(rig.outsideAddress)/24", "dev", rig.outside])
        try AgentNetworkBench.ip(["link", "set", rig.outside, "up"])
        try AgentNetworkBench.ip(["-n", rig.namespace, "link", "set", "lo", "up"])
        try AgentNetworkBench.ip(["-n", rig.namespace, "addr", "add", "10.203.1.2/24", "dev", rig.inside])
        try AgentNetworkBench.ip(["-n", rig.namespace, "link", "set", rig.inside, "up"])

        let database = directory + "/gateway.sqlite"
        let secret = try Gateway.makeEnrollmentSecret(
            store: try SQLiteGatewayStore(path: database), now: Gateway.systemMilliseconds(),
            validity: .seconds(3600))
        let (gateway, port) = try await AgentNetworkBench.startGateway(
            on: rig.outsideAddress, directory: directory, certs: certs, database: database, name: "gateway")
        defer {
            gateway.terminate()
            gateway.waitUntilExit()
        }

        // The file server on the outside address: 4 MiB/s, so that a download is still running when the link goes.
        try FileManager.default.createDirectory(atPath: directory + "/served", withIntermediateDirectories: true)
        let size = 16 << 20
        let block = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255) }
        _ = FileManager.default.createFile(atPath: directory + "/served/drop.bin", contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/served/drop.bin"))
        for _ in 0..<(size >> 20) { try out.write(contentsOf: Data(block)) }
        try out.close()
        _ = FileManager.default.createFile(atPath: directory + "/served/idle.bin", contents: Data(block.prefix(1024)))
        let serverLog = directory + "/server.log"
        let server = try ChildProcess.start(
            "/usr/bin/python3",
            [
                root + "/Tests/Interop/range_server.py", "--root", directory + "/served", "--cert",
                certs + "/server.pem", "--key", certs + "/server.key", "--log", serverLog, "--plain", "--host",
                rig.outsideAddress, "--rate", "\(4 << 20)",
            ], stdout: .lines, stderr: .inherit)
        defer { server.kill() }
        guard let portLine = await server.lines.first(timeout: .seconds(20), where: { $0.hasPrefix("PORT ") }),
            let serverPort = UInt16(portLine.dropFirst(5))
        else { throw Bench.Failure(description: "range_server.py did not start") }
        let base = "http://\(rig.outsideAddress):\(serverPort)/files/"
        func requests() -> [[String: Any]] {
            ((try? String(contentsOfFile: serverLog, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
        }

        // Two handlers with command pipes, and the agent in the namespace, its veth end expensive.
        for name in ["fetcher", "fetcher2"] {
            guard mkfifo(directory + "/\(name).fifo", 0o600) == 0 else {
                throw Bench.Failure(description: "mkfifo: errno \(errno)")
            }
            let file = """
                topic = "com.example.\(name)"
                command = ["\(handlerPath)", "--quiet", "--commands", "\(directory)/\(name).fifo", "--log", \
                "\(directory)/\(name).log", "--transfer-session", "s1"]
                push-types = ["background"]
                allow-root = true
                [limits]
                suspend-after-seconds = 3600
                """
            try Data(file.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/\(name).toml"))
        }
        let agent = try ChildProcess.start(
            "/usr/sbin/ip",
            [
                "netns", "exec", rig.namespace, try GatewayBench.sibling("rouse-agent"), "--gateway",
                "https://\(rig.outsideAddress):\(port)", "--ca", certs + "/ca.pem", "--enroll-secret", secret,
                "--handlers", directory + "/handlers", "--state-dir", directory + "/state", "--socket", rig.socket,
                "--expensive-interface", rig.inside, "--log-level", "error",
            ], stdout: .lines, stderr: .inherit)
        defer {
            agent.terminate()
            agent.waitUntilExit()
        }
        guard await agent.lines.first(timeout: .seconds(20), where: { $0.hasPrefix("rouse-agent ready") }) != nil
        else { throw Bench.Failure(description: "rouse-agent did not start") }
        try await asyncUntil("channel open", timeout: .seconds(60)) { await Self.channel(rig.socket) == "open" }
        for name in ["fetcher", "fetcher2"] {
            let client = try AgentClient(socketPath: rig.socket)
            _ = try await client.request(.userControl(.init(handler: name, state: "started")))
            client.close()
            try await until("\(name) reattached its session") { rig.log(name).contains { $0.hasPrefix("session") } }
        }

        var lines: [String] = []
        var fields: [String] = []
        if linkDrop {
            try rig.command("fetcher", ["download s1 \(base)drop.bin"])
            let spool = directory + "/state/spool/fetcher/1.download"
            func spooled() -> Int {
                (try? FileManager.default.attributesOfItem(atPath: spool)[.size] as? Int) ?? 0
            }
            try await until("4 MiB spooled") { spooled() >= 4 << 20 }
            let down = ContinuousClock.now
            try rig.link(up: false)
            try await asyncUntil("the task waiting for the network") {
                try await rig.tasks().first?["state"] as? String == "waitingForNetwork"
            }
            let detected = ContinuousClock.now - down
            let atPause = spooled()
            // The link stays down for 2 s (the drop is the stimulus, not a wait for an event).
            try await Task.sleep(until: down + .seconds(2))
            let up = ContinuousClock.now
            try rig.link(up: true)
            // The server logs a request when it ends: the resumed GET is seen by its first byte in the spool.
            try await until("the first resumed byte spooled") { spooled() > atPause }
            let resumedRequest = ContinuousClock.now - up
            try await until("completed", timeout: .seconds(60)) {
                rig.log("fetcher").contains { $0.hasPrefix("transfer task=1 state=completed bytes=\(size)") }
            }
            let completed = ContinuousClock.now - up
            try await until("both GETs logged") { requests().filter { $0["method"] as? String == "GET" }.count >= 2 }
            let gets = requests().filter { $0["method"] as? String == "GET" }
            let written = gets.reduce(0) { $0 + ($1["sent"] as? Int ?? 0) }
            let rangeStart = (gets.last?["range"] as? String).flatMap { Int($0.dropFirst(6).dropLast()) } ?? -1
            let twice = written - size
            lines.append(
                String(
                    format:
                        "link drop (2 s, %d MiB at 4 MiB/s): down -> waiting %.0f ms; up -> first resumed byte spooled %.0f ms, "
                        + "up -> completed %.0f ms; spooled at the pause %d, Range from %d (%d GETs); the server "
                        + "wrote %d bytes twice (%d GETs' bytes - the file)",
                    size >> 20, detected.seconds * 1000, resumedRequest.seconds * 1000, completed.seconds * 1000,
                    atPause,
                    rangeStart, gets.count, twice, gets.count))
            fields.append(
                String(
                    format:
                        #""linkDrop":{"detectMs":%.1f,"firstResumedByteMs":%.1f,"completedMs":%.1f,"spooledAtPause":%d,"rangeStart":%d,"gets":%d,"serverBytesTwice":%d}"#,
                    detected.seconds * 1000, resumedRequest.seconds * 1000, completed.seconds * 1000, atPause,
                    rangeStart,
                    gets.count, twice))
        }

        if let idleSeconds {
            for name in ["fetcher", "fetcher2"] {
                try rig.command(name, (0..<50).map { _ in "download s1 \(base)idle.bin discretionary=1" })
            }
            try await until("100 discretionary tasks added") {
                rig.log("fetcher").filter { $0.hasPrefix("added task=") }.count
                    + rig.log("fetcher2").filter { $0.hasPrefix("added task=") }.count >= 100 + (linkDrop ? 1 : 0)
            }
            func queued() async throws -> Int {
                try await rig.tasks().filter { $0["state"] as? String == "queued" }.count
            }
            let waiting = try await queued()
            guard waiting >= 100 else {
                throw Bench.Failure(description: "\(waiting) tasks queued, not 100: is the path expensive?")
            }
            let pidAgent = agent.processIdentifier
            try await AgentBench.settle(pid: pidAgent)
            let idle = try await AgentBench.measureIdle(pids: [pidAgent], seconds: idleSeconds)[0]
            let still = try await queued()
            let fetched = requests().filter { $0["path"] as? String == "/files/idle.bin" }.count
            let threads = idle.byThread.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                separator: ", ")
            lines.append(
                "100 discretionary tasks queued on an expensive path, \(idleSeconds) s: agent " + idle.summary
                    + " (threads: \(threads.isEmpty ? "none" : threads)); \(still) still queued, \(fetched) GETs")
            fields.append(
                String(
                    format:
                        #""discretionaryIdle":{"seconds":%d,"wakeupsPerMinute":%.2f,"cpuMs":%.1f,"queued":%d,"gets":%d}"#,
                    idleSeconds, idle.wakeupsPerMinute, idle.cpuMilliseconds, still, fetched))
        }
        if json {
            print("{\"name\":\"transfers-network\"," + fields.joined(separator: ",") + "}")
        } else {
            for line in lines { print(line) }
        }
    }

    /// The agent's channel state (its `status` over IPC), nil while it does not answer.
    static func channel(_ socket: String) async -> String? {
        guard let client = try? AgentClient(socketPath: socket) else { return nil }
        defer { client.close() }
        guard case .statusReply(let answer)? = try? await client.request(.status),
            let status = try? JSONDecoder().decode(AgentStatus.self, from: Data(answer.detail.utf8))
        else { return nil }
        return status.channel
    }

    static func asyncUntil(
        _ what: String, timeout: Duration = .seconds(30), _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw Bench.Failure(description: "timed out waiting for \(what)")
    }
}
