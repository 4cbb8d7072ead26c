import Foundation
import Glibc
import Logging
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseChildProcess
import RouseTestSupport
import RouseWire
import Synchronization
import Testing

/// `Tests/Interop/range_server.py`: an HTTPS file server on Python's standard library (Range, ETag/If-Range,
/// uploads), logging each request as a JSON line. Stopped by the test's scope (and `stop()`).
final class RangeServer: Sendable {
    let root: String
    let logPath: String
    let port: UInt16
    let process: RunningChild

    init(directory: String, arguments: [String] = []) async throws {
        root = directory + "/served"
        logPath = directory + "/server.log"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        process = try ChildProcess.start(
            "/usr/bin/python3",
            [
                Repository.root + "/Tests/Interop/range_server.py", "--root", root, "--cert",
                Repository.cert("server.pem"),
                "--key", Repository.cert("server.key"), "--log", logPath,
            ] + arguments, stdout: .lines, stderr: .inherit)
        guard let line = await process.lines.first(timeout: .seconds(20), where: { $0.hasPrefix("PORT ") }),
            let port = UInt16(line.dropFirst(5))
        else {
            process.kill()
            throw FixtureError("range_server.py did not start")
        }
        self.port = port
    }

    /// `https://127.0.0.1:PORT/files/NAME`.
    func url(_ name: String) -> String { "https://127.0.0.1:\(port)/files/\(name)" }
    func uploadURL(_ name: String) -> String { "https://127.0.0.1:\(port)/upload/\(name)" }

    /// Writes `size` pseudo-random bytes as `<root>/NAME`; returns its `SIZE:FNV` fingerprint.
    func serve(_ name: String, size: Int, seed: UInt64 = 1) throws -> String {
        // Words of SplitMix64 (little-endian), written through a pointer: debug builds are slow per element.
        var random = SplitMix64(seed: seed)
        var words = [UInt64](repeating: 0, count: (size + 7) / 8)
        words.withUnsafeMutableBufferPointer { buffer in
            for index in buffer.indices { buffer[index] = random.next().littleEndian }
        }
        let bytes = words.withUnsafeBytes { Array($0.prefix(size)) }
        try Data(bytes).write(to: URL(fileURLWithPath: root + "/" + name))
        return Self.fingerprint(bytes)
    }

    static func fingerprint(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        bytes.withUnsafeBufferPointer { buffer in
            for byte in buffer { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        }
        return "\(bytes.count):" + String(hash, radix: 16)
    }

    /// The requests logged so far (one JSON object each).
    func requests() -> [[String: Any]] {
        ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    func stop() {
        process.kill()
        process.waitUntilExit()
    }
}

extension AgentHarness {
    /// One handler `name` with a command pipe and `--transfer-session s1`, and an agent whose transfers trust the test
    /// CA and spool in `<directory>/spool`.
    static func transferHarness(
        _ name: String = "fetcher", extra: [String] = [], limits: TransferBook.Limits = TransferBook.Limits(),
        suspendAfter: Duration = .seconds(120), allowPrivateDestinations: Bool = true,
        capture: @escaping (AgentConfiguration) -> Void = { _ in },
        store: (_ path: String) -> any AgentStateStore = { JSONFileAgentStateStore(path: $0) }
    ) async throws -> AgentHarness {
        try await AgentHarness(
            handlers: { directory in
                let fifo = "\(directory)/\(name).fifo"
                guard mkfifo(fifo, 0o600) == 0 else { throw FixtureError("mkfifo: errno \(errno)") }
                // The test servers are on loopback: allowed unless the test is about that.
                var handler = try handler(
                    name, mode: "report", directory: directory,
                    arguments: ["--commands", fifo, "--transfer-session", "s1"] + extra
                ) { $0.suspendAfter = suspendAfter }
                handler.allowPrivateDestinations = allowPrivateDestinations
                return [
                    handler
                ]
            },
            configure: { directory, configuration in
                configuration.transferSpool = directory + "/spool"
                configuration.transferCAFile = Repository.cert("ca.pem")
                configuration.transferLimits = limits
                capture(configuration)
            }, store: store)
    }

    /// The admin `transfers` document.
    func transfers() async throws -> [String: Any] {
        let client = try AgentClient(socketPath: socketPath)
        defer { client.close() }
        guard case .statusReply(let reply) = try await client.request(.transfers) else {
            throw FixtureError("transfers: no statusReply")
        }
        return try JSONSerialization.jsonObject(with: Data(reply.detail.utf8)) as? [String: Any] ?? [:]
    }

    /// Files left in the handler's spool directory.
    func spoolFiles(_ name: String = "fetcher") -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: directory + "/spool/" + name)) ?? []
    }

    /// Waits until the handler logged progress of `task` at `atLeast` bytes or more.
    func waitForProgress(task: Int, atLeast bytes: Int64, _ name: String = "fetcher") async throws {
        let prefix = "transfer task=\(task) state=running bytes="
        try await eventually("\(name): task \(task) at \(bytes) bytes") {
            self.lines(name, prefix).contains { Int64($0.dropFirst(prefix.count)) ?? 0 >= bytes }
        }
    }

    /// The pid of the handler's latest registration (its log lines end in ` pid=N`).
    func handlerPID(_ name: String) throws -> pid_t {
        guard let line = log(name).last(where: { $0.hasPrefix("registered") }),
            let range = line.range(of: " pid="), let pid = pid_t(line[range.upperBound...])
        else { throw FixtureError("no registration of \(name)") }
        return pid
    }
}

@Suite(
    "Background transfers: real handlers, a real HTTPS server, libcurl in the agent", .serialized,
    .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentTransferTests {
    @Test func downloadIsHandedOverAsADescriptorAndUploadsComeFromOne() async throws {
        let harness = try await AgentHarness.transferHarness()
        let server = try await RangeServer(directory: harness.directory)
        defer { server.stop() }
        let expected = try server.serve("big.bin", size: 3 << 20)
        try await harness.startHandler("fetcher", foreground: true)
        try await harness.waitForLine("fetcher", "session name=s1")

        try harness.command("fetcher", "download s1 \(server.url("big.bin"))")
        try await harness.waitForLine("fetcher", "transfer task=1 state=completed", timeout: .seconds(30))
        let done = harness.lines("fetcher", "transfer task=1 state=completed")
        #expect(done == ["transfer task=1 state=completed bytes=\(3 << 20) status=200 file=\(expected)"])
        // Progress came while it ran (every MiB), and the session's end after the result.
        #expect(harness.lines("fetcher", "transfer task=1 state=running").count >= 2)
        try await harness.waitForLine("fetcher", "handled session=s1")

        // An upload from a descriptor: the agent's copy in its spool is sent, byte for byte.
        let upload = harness.directory + "/up.bin"
        let uploadBytes = (0..<(1 << 20) + 17).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try Data(uploadBytes).write(to: URL(fileURLWithPath: upload))
        try harness.command("fetcher", "upload s1 \(server.uploadURL("up.bin")) \(upload)")
        try await harness.waitForLine("fetcher", "transfer task=2 state=completed", timeout: .seconds(30))
        #expect(
            harness.lines("fetcher", "transfer task=2 state=completed") == [
                "transfer task=2 state=completed bytes=\(uploadBytes.count) status=201"
            ])
        let stored = try Data(contentsOf: URL(fileURLWithPath: server.root + "/uploads/up.bin"))
        #expect(Array(stored) == uploadBytes)

        // A descriptor that is not a regular file, a URL that is not http(s): precise refusals.
        try harness.command("fetcher", "uploadpipe s1 \(server.uploadURL("pipe.bin"))")
        try await harness.waitForLine("fetcher", "addFailed")
        try harness.command("fetcher", "download s1 file:///etc/passwd")
        try await harness.waitForLine("fetcher", "addFailed", count: 2)
        #expect(
            harness.lines("fetcher", "addFailed") == ["addFailed error=badDescriptor", "addFailed error=badRequest"])
        // A redirect is followed; its own body does not end up in the file.
        try harness.command("fetcher", "download s1 https://127.0.0.1:\(server.port)/redirect/big.bin")
        try await harness.waitForLine("fetcher", "transfer task=3 state=completed", timeout: .seconds(30))
        #expect(
            harness.lines("fetcher", "transfer task=3 state=completed") == [
                "transfer task=3 state=completed bytes=\(3 << 20) status=200 file=\(expected)"
            ])
        // Handed over: nothing left in the agent's spool, no task left in its book.
        #expect(harness.spoolFiles() == [])
        #expect((try await harness.transfers()["tasks"] as? [Any])?.count == 0)
    }

    @Test func aDownloadContinuesAfterTheHandlerIsKilledAndRelaunchesItWithTheFile() async throws {
        let harness = try await AgentHarness.transferHarness()
        let server = try await RangeServer(directory: harness.directory, arguments: ["--rate", "\(2 << 20)"])
        defer { server.stop() }
        let expected = try server.serve("voicemail.bin", size: 4 << 20, seed: 2)
        try await harness.startHandler("fetcher", foreground: true)
        try await harness.waitForLine("fetcher", "session name=s1")
        try harness.command("fetcher", "download s1 \(server.url("voicemail.bin"))")
        try await harness.waitForLine("fetcher", "transfer task=1 state=running bytes=")
        let first = try harness.handlerPID("fetcher")
        #expect(kill(first, SIGKILL) == 0)

        // The agent carries on, then launches the handler for the finished session and hands it the file.
        try await harness.waitForLine(
            "fetcher", "registered launchReason=backgroundTransfer", timeout: .seconds(30))
        try await harness.waitForLine("fetcher", "transfer task=1 state=completed", timeout: .seconds(30))
        #expect(try harness.handlerPID("fetcher") != first)
        #expect(
            harness.lines("fetcher", "transfer task=1 state=completed") == [
                "transfer task=1 state=completed bytes=\(4 << 20) status=200 file=\(expected)"
            ])
        try await harness.waitForLine("fetcher", "handled session=s1")
        // One GET, complete: the handler's death cost no byte.
        let gets = server.requests().filter { $0["method"] as? String == "GET" }
        #expect(gets.count == 1)
        #expect(gets.first?["complete"] as? Bool == true)
        #expect(harness.spoolFiles() == [])
    }

    /// iOS's "using push notifications to initiate a download": a content-available push through the gateway
    /// launches the handler, which starts a download and exits; the agent carries the download on and launches it
    /// again with `backgroundTransfer` and the file.
    @Test func aBackgroundPushStartsADownloadAndTheHandlerIsRelaunchedWithTheFile() async throws {
        let harness = try await AgentHarness.transferHarness(extra: ["--exit-after-push"])
        let server = try await RangeServer(directory: harness.directory, arguments: ["--rate", "\(2 << 20)"])
        defer { server.stop() }
        let size = 4 << 20
        let expected = try server.serve("voicemail.bin", size: size, seed: 10)
        // Not running: the push (sent by a provider through the gateway) launches it.
        try await harness.push(
            "fetcher", type: "background",
            payload: #"{"aps":{"content-available":1},"download":"\#(server.url("voicemail.bin"))"}"#)
        try await harness.waitForLine("fetcher", "exiting", timeout: .seconds(30))
        try await harness.waitForLine(
            "fetcher", "registered launchReason=backgroundTransfer", timeout: .seconds(30))
        try await harness.waitForLine("fetcher", "transfer task=1 state=completed", timeout: .seconds(30))
        try await harness.waitForLine("fetcher", "handled session=s1")

        let log = harness.log("fetcher")
        #expect(
            log.filter { $0.hasPrefix("registered") }.map { $0.split(separator: " ")[1] } == [
                "launchReason=backgroundPush", "launchReason=backgroundTransfer",
            ])
        #expect(harness.lines("fetcher", "added") == ["added task=1 kind=download state=running"])
        #expect(
            harness.lines("fetcher", "transfer task=1 state=completed") == [
                "transfer task=1 state=completed bytes=\(size) status=200 file=\(expected)"
            ])
        // The first process exited before the download ended: the file came to the relaunched one.
        let exited = log.firstIndex { $0.hasPrefix("exiting") } ?? Int.max
        let relaunched = log.firstIndex { $0.hasPrefix("registered launchReason=backgroundTransfer") } ?? -1
        #expect(exited < relaunched)
        // The push was completed (acknowledged at the gateway); one GET, whole; nothing left in the spool.
        try await eventually("gateway saw the ack") { try harness.pending() == 0 }
        let gets = server.requests().filter { $0["method"] as? String == "GET" }
        #expect(gets.count == 1)
        #expect(gets.first?["complete"] as? Bool == true)
        #expect(harness.spoolFiles() == [])
    }

    @Test func aUserStopCancelsTheHandlersTasks() async throws {
        let harness = try await AgentHarness.transferHarness()
        let server = try await RangeServer(directory: harness.directory, arguments: ["--rate", "\(1 << 20)"])
        defer { server.stop() }
        _ = try server.serve("slow.bin", size: 8 << 20, seed: 3)
        try await harness.startHandler("fetcher", foreground: true)
        try await harness.waitForLine("fetcher", "session name=s1")
        try harness.command("fetcher", "download s1 \(server.url("slow.bin"))")
        try await harness.waitForProgress(task: 1, atLeast: 1 << 20)
        #expect(harness.spoolFiles() == ["1.download"])

        try await harness.admin(.userControl(.init(handler: "fetcher", state: "stopped")))
        try await eventually("the task is gone") {
            (try await harness.transfers()["tasks"] as? [Any])?.count == 0
        }
        #expect(harness.spoolFiles() == [])
        // The transfer was cut: the server saw its response end incomplete, and nothing relaunched the handler.
        try await eventually("the server logged the cut GET") { server.requests().count == 1 }
        #expect(server.requests().first?["complete"] as? Bool == false)
        #expect(harness.lines("fetcher", "registered launchReason=backgroundTransfer") == [])
    }

    @Test func budgetsRefuseWithPreciseErrors() async throws {
        var limits = TransferBook.Limits()
        limits.tasksPerHandler = 2
        limits.spoolBytesPerHandler = 1 << 20
        limits.concurrent = 1
        let harness = try await AgentHarness.transferHarness(limits: limits)
        let server = try await RangeServer(directory: harness.directory, arguments: ["--rate", "\(256 << 10)"])
        defer { server.stop() }
        _ = try server.serve("large.bin", size: 2 << 20, seed: 4)
        _ = try server.serve("small.bin", size: 1000, seed: 5)
        try await harness.startHandler("fetcher", foreground: true)
        try await harness.waitForLine("fetcher", "session name=s1")
        // Task 1 runs (one at a time), task 2 queues, task 3 is one too many.
        try harness.command("fetcher", "download s1 \(server.url("large.bin"))")
        try await harness.waitForLine("fetcher", "added task=1")
        try harness.command("fetcher", "download s1 \(server.url("small.bin"))")
        try await harness.waitForLine("fetcher", "added task=2")
        try harness.command("fetcher", "download s1 \(server.url("small.bin"))")
        try await harness.waitForLine("fetcher", "addFailed")
        #expect(
            harness.lines("fetcher", "added") == [
                "added task=1 kind=download state=running", "added task=2 kind=download state=queued",
            ])
        #expect(harness.lines("fetcher", "addFailed") == ["addFailed error=tooManyTasks"])
        // Task 1 outgrows the 1 MiB spool budget: it fails precisely, then task 2 runs and completes.
        try await harness.waitForLine("fetcher", "transfer task=1 state=failed", timeout: .seconds(30))
        #expect(harness.lines("fetcher", "transfer task=1 state=failed").first?.hasSuffix("error=spoolFull") == true)
        try await harness.waitForLine("fetcher", "transfer task=2 state=completed", timeout: .seconds(30))
        let metrics = try await harness.transfers()["metrics"] as? [String: Int] ?? [:]
        #expect(metrics["refused-tooManyTasks"] == 1)
        #expect(metrics["transfers-failed"] == 1)
    }

    /// The `Range` resume seen from the server: the second GET asks for exactly the bytes the spool lacks, with the
    /// first answer's ETag in `If-Range`, and gets 206; the two answers together are the file once.
    static func expectResumed(_ server: RangeServer, spooled: Int64, size: Int) {
        let gets = server.requests().filter { $0["method"] as? String == "GET" }
        #expect(gets.count == 2)
        guard gets.count == 2 else { return }
        #expect(gets[0]["complete"] as? Bool == false)
        #expect(gets[1]["range"] as? String == "bytes=\(spooled)-")
        #expect((gets[1]["ifRange"] as? String)?.hasPrefix("\"\(size)-") == true)
        #expect(gets[1]["status"] as? Int == 206)
        #expect(gets[1]["sent"] as? Int == size - Int(spooled))
    }

    @Test func aDownloadWaitsForTheNetworkAndResumesWithRange() async throws {
        let harness = try await AgentHarness.transferHarness()
        let server = try await RangeServer(directory: harness.directory, arguments: ["--rate", "\(1 << 20)"])
        defer { server.stop() }
        let size = 3 << 20
        let expected = try server.serve("calls.bin", size: size, seed: 6)
        try await harness.startHandler("fetcher", foreground: true)
        try await harness.waitForLine("fetcher", "session name=s1")
        try harness.command("fetcher", "download s1 \(server.url("calls.bin"))")
        try await harness.waitForProgress(task: 1, atLeast: 1 << 20)

        // The agent's reachability says the network is gone: the transfer stops and waits.
        await harness.agent.reachabilityChanged(false)
        try await harness.waitForLine("fetcher", "transfer task=1 state=waitingForNetwork")
        try await eventually("the server saw the GET end") { server.requests().count == 1 }
        let spooled = Int64(
            (try FileManager.default.attributesOfItem(
                atPath: harness.directory + "/spool/fetcher/1.download")[.size] as? NSNumber)?.int64Value ?? -1)
        #expect(spooled >= 1 << 20 && spooled < Int64(size))

        await harness.agent.reachabilityChanged(true)
        try await harness.waitForLine("fetcher", "transfer task=1 state=completed", timeout: .seconds(30))
        #expect(
            harness.lines("fetcher", "transfer task=1 state=completed") == [
                "transfer task=1 state=completed bytes=\(size) status=206 file=\(expected)"
            ])
        Self.expectResumed(server, spooled: spooled, size: size)
    }

    @Test func aNewAgentOnTheStateOfAStoppedOneResumesTheDownload() async throws {
        let saved = Mutex<AgentConfiguration?>(nil)
        let harness = try await AgentHarness.transferHarness(capture: { configuration in
            saved.withLock { $0 = configuration }
        })
        let server = try await RangeServer(directory: harness.directory, arguments: ["--rate", "\(1 << 20)"])
        defer { server.stop() }
        let size = 3 << 20
        let expected = try server.serve("logs.bin", size: size, seed: 7)
        try await harness.startHandler("fetcher", foreground: true)
        try await harness.waitForLine("fetcher", "session name=s1")
        try harness.command("fetcher", "download s1 \(server.url("logs.bin"))")
        try await harness.waitForProgress(task: 1, atLeast: 1 << 20)

        // The agent stops mid-transfer (its handler dies with it); the task is in its state file.
        await harness.agent.shutdown()
        let spooled = Int64(
            (try FileManager.default.attributesOfItem(
                atPath: harness.directory + "/spool/fetcher/1.download")[.size] as? NSNumber)?.int64Value ?? -1)
        #expect(spooled >= 1 << 20 && spooled < Int64(size))
        guard let configuration = saved.withLock({ $0 }) else { throw FixtureError("no configuration captured") }
        var logger = Logger(label: "rouse.agent.test.second")
        logger.logLevel = .critical
        let second = try Agent(
            configuration: configuration, store: JSONFileAgentStateStore(path: harness.directory + "/state.json"),
            logger: logger)
        TestScope.current?.onEnd { await second.shutdown() }
        try await second.start()

        // The new agent resumes it, then launches the handler for the finished session with the file.
        try await harness.waitForLine(
            "fetcher", "registered launchReason=backgroundTransfer", timeout: .seconds(45))
        try await harness.waitForLine("fetcher", "transfer task=1 state=completed", timeout: .seconds(30))
        #expect(
            harness.lines("fetcher", "transfer task=1 state=completed") == [
                "transfer task=1 state=completed bytes=\(size) status=206 file=\(expected)"
            ])
        Self.expectResumed(server, spooled: spooled, size: size)
    }

    @Test func aServerThatIgnoresRangeGetsTheFileFromTheStart() async throws {
        let harness = try await AgentHarness.transferHarness()
        let server = try await RangeServer(
            directory: harness.directory, arguments: ["--rate", "\(1 << 20)", "--no-range"])
        defer { server.stop() }
        let size = 3 << 20
        let expected = try server.serve("plain.bin", size: size, seed: 8)
        try await harness.startHandler("fetcher", foreground: true)
        try await harness.waitForLine("fetcher", "session name=s1")
        try harness.command("fetcher", "download s1 \(server.url("plain.bin"))")
        try await harness.waitForProgress(task: 1, atLeast: 1 << 20)
        await harness.agent.reachabilityChanged(false)
        try await harness.waitForLine("fetcher", "transfer task=1 state=waitingForNetwork")
        try await eventually("the server saw the GET end") { server.requests().count == 1 }
        await harness.agent.reachabilityChanged(true)
        try await harness.waitForLine("fetcher", "transfer task=1 state=completed", timeout: .seconds(30))
        // The 200 replaced what was spooled: the file is whole, not the old prefix plus the whole file.
        #expect(
            harness.lines("fetcher", "transfer task=1 state=completed") == [
                "transfer task=1 state=completed bytes=\(size) status=200 file=\(expected)"
            ])
        let gets = server.requests().filter { $0["method"] as? String == "GET" }
        #expect(gets.count == 2)
        #expect(gets.last?["range"] as? String != nil)
        #expect(gets.last?["status"] as? Int == 200)
        #expect(gets.last?["sent"] as? Int == size)
    }

    @Test func aHandlerDeclaringFetchIsLaunchedForItAndItsHistoryShows() async throws {
        let harness = try await AgentHarness(handlers: { directory in
            var handler = try AgentHarness.handler(
                "fetcher", mode: "report", directory: directory, arguments: ["--fetch-result", "noData"])
            handler.fetchMinimum = .seconds(1)
            return [handler]
        })
        // Not running: the agent launches it for the fetch (after twice the minimum, its first factor).
        try await harness.waitForLine("fetcher", "registered launchReason=backgroundFetch", timeout: .seconds(20))
        try await harness.waitForLine("fetcher", "fetched id=fetch-1 result=noData")
        try await eventually("the history shows the fetch") {
            await harness.handlerStatus("fetcher")?.fetch?.history.count == 1
        }
        let fetch = await harness.handlerStatus("fetcher")?.fetch
        #expect(fetch?.history.first?.outcome == .noData)
        #expect(fetch?.factor == 2.5)  // noData: a quarter more between fetches
        #expect(fetch?.minimumSeconds == 1)
    }

    @Test func failuresGivePreciseResultsAndACancelStopsTheTransfer() async throws {
        let harness = try await AgentHarness.transferHarness()
        let server = try await RangeServer(directory: harness.directory, arguments: ["--rate", "\(1 << 20)"])
        defer { server.stop() }
        // Plain HTTP on this port: an https:// URL to it fails the TLS handshake.
        let plain = try await RangeServer(directory: harness.directory + "/plain", arguments: ["--plain"])
        defer { plain.stop() }
        _ = try server.serve("long.bin", size: 8 << 20, seed: 9)
        try await harness.startHandler("fetcher", foreground: true)
        try await harness.waitForLine("fetcher", "session name=s1")

        try harness.command("fetcher", "download s1 https://127.0.0.1:\(server.port)/status/404")
        try await harness.waitForLine("fetcher", "transfer task=1 state=completed")
        try harness.command("fetcher", "download s1 \(plain.url("any.bin"))")
        try await harness.waitForLine("fetcher", "transfer task=2 state=failed", timeout: .seconds(30))
        // A port nobody listens on (the plain server's, once it is gone): refused, retried, then reported.
        plain.stop()
        try harness.command("fetcher", "download s1 \(plain.url("gone.bin"))")
        try await harness.waitForLine("fetcher", "transfer task=3 state=failed", timeout: .seconds(30))
        #expect(
            harness.lines("fetcher", "transfer task=1 state=completed") == [
                "transfer task=1 state=completed bytes=11 status=404 file=11:\(RangeServer.fingerprint(Array("status 404\n".utf8)).split(separator: ":")[1])"
            ])
        #expect(harness.lines("fetcher", "transfer task=2 state=failed").first?.hasSuffix("error=tls") == true)
        #expect(harness.lines("fetcher", "transfer task=3 state=failed").first?.hasSuffix("error=unreachable") == true)

        // A cancel: the answer says cancelled, the server sees its response cut, the spool file goes.
        try harness.command("fetcher", "download s1 \(server.url("long.bin"))")
        try await harness.waitForProgress(task: 4, atLeast: 1 << 20)
        try harness.command("fetcher", "cancel s1 4")
        try await harness.waitForLine("fetcher", "cancelled task=4")
        #expect(harness.lines("fetcher", "cancelled task=4") == ["cancelled task=4 state=cancelled"])
        try await eventually("the server saw the GET cut") {
            server.requests().contains { $0["path"] as? String == "/files/long.bin" }
        }
        #expect(server.requests().first { $0["path"] as? String == "/files/long.bin" }?["complete"] as? Bool == false)
        #expect(harness.spoolFiles() == [])
    }

    /// Without `allow-private-destinations`, a handler's transfers reach no internal address: a literal is refused
    /// at once (`forbiddenDestination`), and a name the agent only learns is internal when libcurl resolves it
    /// (`127.1`) fails at connect, before a byte is sent; the server sees no request.
    @Test func transfersToInternalAddressesAreRefusedUnlessTheHandlerFileAllowsThem() async throws {
        let harness = try await AgentHarness.transferHarness(allowPrivateDestinations: false)
        let server = try await RangeServer(directory: harness.directory)
        defer { server.stop() }
        _ = try server.serve("a.bin", size: 1024)
        try await harness.startHandler("fetcher", foreground: true)
        try await harness.waitForLine("fetcher", "session name=s1")
        for url in [server.url("a.bin"), "http://169.254.169.254/latest/meta-data/", "https://[::1]:1/x"] {
            try harness.command("fetcher", "download s1 \(url)")
        }
        try await harness.waitForLine("fetcher", "addFailed", count: 3)
        #expect(
            harness.lines("fetcher", "addFailed") == Array(repeating: "addFailed error=forbiddenDestination", count: 3))
        try harness.command("fetcher", "download s1 https://127.1:\(server.port)/files/a.bin")
        try await harness.waitForLine("fetcher", "transfer task=1 state=failed", timeout: .seconds(30))
        let failed = harness.lines("fetcher", "transfer task=1 state=failed")
        #expect(failed.first?.contains("error=unreachable") == true, "\(failed)")
        #expect(server.requests().isEmpty, "\(server.requests())")
    }

    /// An upload descriptor larger than an upload may be (a 1 GiB sparse file) is refused without being copied;
    /// one within the limit is copied off the agent's executor (counted in the status's `ipc.uploadCopies`).
    @Test func aHugeUploadDescriptorIsRefusedAndCopiesRunOffTheExecutor() async throws {
        let harness = try await AgentHarness.transferHarness()
        let server = try await RangeServer(directory: harness.directory)
        defer { server.stop() }
        try await harness.startHandler("fetcher", foreground: true)
        try await harness.waitForLine("fetcher", "session name=s1")
        let huge = harness.directory + "/huge.bin"
        #expect(FileManager.default.createFile(atPath: huge, contents: nil))
        #expect(truncate(huge, 1 << 30) == 0)
        try harness.command("fetcher", "upload s1 \(server.uploadURL("huge.bin")) \(huge)")
        try await harness.waitForLine("fetcher", "addFailed")
        #expect(harness.lines("fetcher", "addFailed") == ["addFailed error=tooLarge"])
        #expect(harness.spoolFiles() == [])
        let small = harness.directory + "/small.bin"
        try Data(repeating: 7, count: 4096).write(to: URL(fileURLWithPath: small))
        try harness.command("fetcher", "upload s1 \(server.uploadURL("small.bin")) \(small)")
        try await harness.waitForLine("fetcher", "transfer task=1 state=completed", timeout: .seconds(30))
        let ipc = await harness.agent.status().ipc
        #expect(ipc?.uploadCopies == 2, "\(String(describing: ipc))")
        #expect(ipc?.peerDescriptorsClosed == 2, "\(String(describing: ipc))")
    }
}
