import Foundation
import Glibc
import Logging
import RouseAgent
import RouseAgentClient
import RouseGateway
import RouseTestSupport
import Testing

/// Background transfers through the built `rouse-agent`: SIGKILLed mid-download and started again on its state, and
/// inside a network namespace whose link goes down mid-download. Plain `http://` to the test server (the `rouse-agent`
/// command trusts the system store for transfers).
@Suite(
    "Background transfers through rouse-agent: SIGKILL and restart, a link down in a namespace", .serialized,
    .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentTransferProcessTests {
    /// A gateway (in this process, device API on `address`), a handler file `fetcher` with a command pipe, the
    /// arguments of a `rouse-agent` for them.
    struct Rig {
        let directory: String
        let gateway: Gateway
        let arguments: [String]
        var socket: String { directory + "/agent.sock" }
        var log: String { directory + "/fetcher.log" }

        init(
            address: String = "127.0.0.1", certificate: ((String) async throws -> String)? = nil,
            handlerArguments: [String] = []
        ) async throws {
            directory =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "rouse-agent-\(UUID().uuidString)"
                ).path
            try FileManager.default.createDirectory(atPath: directory + "/handlers", withIntermediateDirectories: true)
            var logger = Logger(label: "rouse.gateway.test")
            logger.logLevel = .critical
            var configuration = try AgentHarness.gatewayConfiguration(database: directory + "/gateway.sqlite")
            configuration.device.listen = "\(address):0"
            if let certificate { configuration.device.certificateFile = try await certificate(directory) }
            gateway = try Gateway(configuration: configuration, logger: logger)
            let directory = directory
            let gateway = gateway
            TestScope.current?.onEnd {
                await gateway.shutdown(gracePeriod: .seconds(1))
                try? FileManager.default.removeItem(atPath: directory)
            }
            let fifo = directory + "/fetcher.fifo"
            guard mkfifo(fifo, 0o600) == 0 else { throw FixtureError("mkfifo: errno \(errno)") }
            let handler = """
                topic = "com.example.fetcher"
                command = ["\(try Products.path("rouse-example-handler"))", "--commands", "\(fifo)", "--log", \
                "\(directory)/fetcher.log", "--transfer-session", "s1"\(handlerArguments.map { ", \"\($0)\"" }.joined())]
                push-types = ["background"]
                allow-root = true
                allow-private-destinations = true
                [limits]
                suspend-after-seconds = 600
                """
            try Data(handler.utf8).write(to: URL(fileURLWithPath: directory + "/handlers/fetcher.toml"))
            arguments = [
                "--gateway", "https://\(address):\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", directory + "/agent.sock", "--log-level", "debug",
            ]
        }

        func lines(_ prefix: String) -> [String] {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
                .filter { $0.hasPrefix(prefix) }
                .map { line in line.range(of: " pid=").map { String(line[..<$0.lowerBound]) } ?? line }
        }

        func waitFor(_ prefix: String, timeout: Duration = .seconds(20)) async throws {
            try await eventually("fetcher log line \(prefix)", timeout: timeout) { !lines(prefix).isEmpty }
        }

        func command(_ line: String) throws {
            guard let handle = FileHandle(forWritingAtPath: directory + "/fetcher.fifo") else {
                throw FixtureError("cannot open the command pipe")
            }
            defer { try? handle.close() }
            try handle.write(contentsOf: Data((line + "\n").utf8))
        }

        /// The user starts the handler; it registers and reattaches session s1.
        func startHandler() async throws {
            let client = try AgentClient(socketPath: socket)
            defer { client.close() }
            _ = try await client.request(.userControl(.init(handler: "fetcher", state: "started")))
            try await waitFor("session name=s1")
        }

        func waitForProgress(atLeast bytes: Int64) async throws {
            let prefix = "transfer task=1 state=running bytes="
            try await eventually("progress to \(bytes)") {
                lines(prefix).contains { Int64($0.dropFirst(prefix.count)) ?? 0 >= bytes }
            }
        }

        var spooled: Int64 {
            Int64(
                (try? FileManager.default.attributesOfItem(atPath: directory + "/state/spool/fetcher/1.download")[.size]
                    as? NSNumber)?.int64Value ?? -1)
        }
    }

    /// The resumed GET: its `Range` start is past the first MiB, and it sent exactly the rest.
    static func expectResumedOnce(_ server: RangeServer, size: Int) {
        let ranged = server.requests().filter { $0["method"] as? String == "GET" && $0["range"] is String }
        #expect(ranged.count == 1)
        guard let resumed = ranged.first, let range = resumed["range"] as? String,
            let start = Int(range.dropFirst("bytes=".count).dropLast())
        else { return }
        #expect(start >= 1 << 20 && start < size)
        #expect(resumed["status"] as? Int == 206)
        #expect(resumed["sent"] as? Int == size - start)
    }

    @Test func aSIGKILLedAgentStartedAgainResumesTheDownloadWithRange() async throws {
        let rig = try await Rig()
        let server = try await RangeServer(directory: rig.directory, arguments: ["--plain", "--rate", "\(1 << 20)"])
        defer { server.stop() }
        let size = 4 << 20
        let expected = try server.serve("voicemail.bin", size: size, seed: 11)
        let first = try await AgentProcess(arguments: rig.arguments, stderrPath: rig.directory + "/agent1.stderr")
        try await eventually("channel open") {
            try await AgentNetworkTests.status(socket: rig.socket).channel == "open"
        }
        try await rig.startHandler()
        try rig.command("download s1 http://127.0.0.1:\(server.port)/files/voicemail.bin")
        try await rig.waitForProgress(atLeast: 1 << 20)

        first.kill()
        let second = try await AgentProcess(arguments: rig.arguments, stderrPath: rig.directory + "/agent2.stderr")
        defer { second.kill() }
        // The handler outlived the agent (re-attached); the resumed download reaches it with the whole file.
        try await rig.waitFor("transfer task=1 state=completed", timeout: .seconds(60))
        #expect(
            rig.lines("transfer task=1 state=completed") == [
                "transfer task=1 state=completed bytes=\(size) status=206 file=\(expected)"
            ])
        try await eventually("the resumed GET logged") {
            server.requests().contains { $0["range"] is String && $0["complete"] as? Bool == true }
        }
        Self.expectResumedOnce(server, size: size)
    }

    @Test func aLinkDownInTheAgentsNamespacePausesTheDownloadAndItResumesWithRange() async throws {
        let network = try await AgentNetwork()
        defer { network.delete() }
        let rig = try await Rig(address: network.gatewayAddress, certificate: network.certificate(in:))
        let server = try await RangeServer(
            directory: rig.directory, arguments: ["--plain", "--rate", "\(1 << 20)", "--host", network.gatewayAddress])
        defer { server.stop() }
        let size = 4 << 20
        let expected = try server.serve("logs.bin", size: size, seed: 12)
        let agent = try await AgentProcess(
            executable: "/usr/sbin/ip",
            arguments: ["netns", "exec", network.name, try Products.path("rouse-agent")] + rig.arguments,
            stderrPath: rig.directory + "/agent.stderr")
        defer { agent.kill() }
        try await eventually("channel open") {
            try await AgentNetworkTests.status(socket: rig.socket).channel == "open"
        }
        try await rig.startHandler()
        try rig.command("download s1 http://\(network.gatewayAddress):\(server.port)/files/logs.bin")
        try await rig.waitForProgress(atLeast: 1 << 20)

        try await network.link(up: false)
        try await rig.waitFor("transfer task=1 state=waitingForNetwork")
        let paused = rig.spooled
        try await network.link(up: true)
        try await rig.waitFor("transfer task=1 state=completed", timeout: .seconds(60))
        #expect(
            rig.lines("transfer task=1 state=completed") == [
                "transfer task=1 state=completed bytes=\(size) status=206 file=\(expected)"
            ])
        #expect(paused >= 1 << 20 && paused < Int64(size))
        try await eventually("the resumed GET logged") {
            server.requests().contains { $0["range"] is String && $0["complete"] as? Bool == true }
        }
        Self.expectResumedOnce(server, size: size)
    }

    /// A full disk: `--spool-dir` on a 1 MiB tmpfs this test mounts, a 3 MiB download. The handler gets
    /// `failed error=disk` with the errno in the detail; the partial file is deleted (the file system is empty again),
    /// the agent holds no descriptor into the spool, and it carries on: a file that fits downloads next.
    @Test func aFullSpoolFileSystemFailsTheDownloadWithDiskAndLeavesNothing() async throws {
        let spool = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-spool-\(UUID().uuidString)")
            .path
        try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
        let mounted = try ChildProcess.runSync("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", spool])
        guard mounted.status == 0 else { throw FixtureError("mount tmpfs: \(mounted.stderr)") }
        TestScope.current?.onEnd {
            _ = try? ChildProcess.runSync("/usr/bin/umount", ["-l", spool])
            rmdir(spool)
        }
        let rig = try await Rig(handlerArguments: ["--transfer-detail"])
        let server = try await RangeServer(directory: rig.directory, arguments: ["--plain"])
        defer { server.stop() }
        _ = try server.serve("big.bin", size: 3 << 20, seed: 13)
        let small = try server.serve("small.bin", size: 100 << 10, seed: 14)
        let agent = try await AgentProcess(
            arguments: rig.arguments + ["--spool-dir", spool], stderrPath: rig.directory + "/agent.stderr")
        defer { agent.kill() }
        try await eventually("channel open") {
            try await AgentNetworkTests.status(socket: rig.socket).channel == "open"
        }
        try await rig.startHandler()
        try rig.command("download s1 http://127.0.0.1:\(server.port)/files/big.bin")
        try await rig.waitFor("transfer task=1 state=failed")
        let failed = rig.lines("transfer task=1 state=failed")
        // What fitted was written (at most the 1 MiB of the file system), then pwrite's ENOSPC.
        #expect(failed.count == 1)
        #expect(
            failed.first?.hasSuffix(" error=disk detail=system: pwrite: No space left on device (errno 28)") == true,
            "\(failed)")
        // Nothing left when the handler has the result: no file in the handler's spool, the file system empty, no
        // descriptor of the agent's into the spool (closed as the transfer ended, not when libcurl lets it go).
        #expect((try? FileManager.default.contentsOfDirectory(atPath: spool + "/fetcher")) == [])
        var usage = statvfs()
        #expect(statvfs(spool, &usage) == 0)
        #expect(usage.f_bfree == usage.f_blocks)
        let pid = agent.process.processIdentifier
        let held = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).filter {
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) ?? "")
                .hasPrefix(spool)
        }
        #expect(held == [])
        // The agent carries on: a file that fits downloads.
        try rig.command("download s1 http://127.0.0.1:\(server.port)/files/small.bin")
        try await rig.waitFor("transfer task=2 state=completed")
        #expect(
            rig.lines("transfer task=2 state=completed") == [
                "transfer task=2 state=completed bytes=\(100 << 10) status=200 file=\(small)"
            ])
    }

    /// iOS's `isDiscretionary` on a real path: the agent's only route to the server is a veth end named by
    /// `--expensive-interface`, so a discretionary download waits (`queued`) while a plain one runs; a second, cheap veth
    /// with a host route to the server (netlink route event → reachability: the path is no longer expensive) lets it
    /// run and complete.
    @Test func aDiscretionaryDownloadWaitsOnAnExpensiveInterfaceAndRunsOnACheapOne() async throws {
        let network = try await AgentNetwork()
        defer { network.delete() }
        let rig = try await Rig(address: network.gatewayAddress, certificate: network.certificate(in:))
        let server = try await RangeServer(
            directory: rig.directory, arguments: ["--plain", "--host", network.gatewayAddress])
        defer { server.stop() }
        let later = try server.serve("later.bin", size: 200 << 10, seed: 15)
        let now = try server.serve("now.bin", size: 100 << 10, seed: 16)
        let agent = try await AgentProcess(
            executable: "/usr/sbin/ip",
            arguments: ["netns", "exec", network.name, try Products.path("rouse-agent")] + rig.arguments + [
                "--expensive-interface", network.inside,
            ],
            stderrPath: rig.directory + "/agent.stderr")
        defer { agent.kill() }
        try await eventually("channel open") {
            try await AgentNetworkTests.status(socket: rig.socket).channel == "open"
        }
        try await rig.startHandler()
        let base = "http://\(network.gatewayAddress):\(server.port)/files/"
        try rig.command("download s1 \(base)later.bin discretionary=1")
        try await rig.waitFor("added task=1")
        try rig.command("download s1 \(base)now.bin")
        try await rig.waitFor("transfer task=2 state=completed")
        #expect(
            rig.lines("added") == [
                "added task=1 kind=download state=queued", "added task=2 kind=download state=running",
            ])
        #expect(
            rig.lines("transfer task=2 state=completed") == [
                "transfer task=2 state=completed bytes=\(100 << 10) status=200 file=\(now)"
            ])
        #expect(rig.lines("transfer task=1") == [])
        #expect(server.requests().map { $0["path"] as? String } == ["/files/now.bin"])

        // A cheap path: a second veth pair, and a host route to the server through it.
        let suffix = network.inside.dropFirst(3)
        let (cheapOutside, cheapInside) = ("rac\(suffix)o", "rac\(suffix)i")
        let subnet = "10.209.\(network.gatewayAddress.split(separator: ".")[2])"
        defer { _ = try? ChildProcess.runSync("/usr/sbin/ip", ["link", "del", cheapOutside]) }
        try await AgentNetwork.ip([
            "link", "add", cheapOutside, "type", "veth", "peer", "name", cheapInside, "netns", network.name,
        ])
        try await AgentNetwork.ip(["addr", "add", "\(subnet).1/24", "dev", cheapOutside])
        try await AgentNetwork.ip(["link", "set", cheapOutside, "up"])
        try await AgentNetwork.ip(["-n", network.name, "addr", "add", "\(subnet).2/24", "dev", cheapInside])
        try await AgentNetwork.ip(["-n", network.name, "link", "set", cheapInside, "up"])
        try await AgentNetwork.ip([
            "-n", network.name, "route", "add", "\(network.gatewayAddress)/32", "dev", cheapInside, "src",
            "\(subnet).2",
        ])
        try await rig.waitFor("transfer task=1 state=completed")
        #expect(
            rig.lines("transfer task=1 state=completed") == [
                "transfer task=1 state=completed bytes=\(200 << 10) status=200 file=\(later)"
            ])
    }
}
