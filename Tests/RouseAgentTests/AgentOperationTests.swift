import Foundation
import Glibc
import Logging
import RouseAgent
import RouseGateway
import RouseTestSupport
import Synchronization
import Testing

/// A Unix datagram socket standing in for systemd's `$NOTIFY_SOCKET`. Like systemd, it reads every datagram as it
/// comes, on a thread of its own: datagrams nobody reads block their sender once `net.unix.max_dgram_qlen` (10)
/// wait, and the agent, sending `WATCHDOG=1` every 100 ms here, would stop answering after a second unread.
final class NotifySocket: Sendable {
    /// The datagrams read and not yet taken by ``next()``, oldest first; `arrived` is signalled once per datagram.
    private final class Inbox: Sendable {
        let messages = Mutex<[String]>([])
        let arrived = DispatchSemaphore(value: 0)
    }

    let fd: Int32
    let path: String
    private let inbox = Inbox()

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let fd = fd
        let rc = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else { throw FixtureError("bind \(path): errno \(errno)") }
        let inbox = inbox
        // Ends when `deinit` shuts the socket down (recv returns 0).
        Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return }
                let message = String(decoding: buffer.prefix(count), as: UTF8.self)
                inbox.messages.withLock { $0.append(message) }
                inbox.arrived.signal()
            }
        }.start()
    }

    /// The next datagram, or nil after 10 s. The wait runs off Swift's cooperative pool (``offPool(_:)``).
    func next() async -> String? {
        let inbox = inbox
        return try? await offPool {
            guard inbox.arrived.wait(timeout: .now() + 10) == .success else { return nil }
            return inbox.messages.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        }
    }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}

@Suite(
    "rouse-agent operation: systemd notify, SIGHUP reload, rouse agent status", .serialized, .stopsWhatItStarts,
    .timeLimit(.minutes(2)))
struct AgentOperationTests {
    @Test func notifiesSystemdReloadsOnHangupAndReportsStatus() async throws {
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        defer { Task { await gateway.shutdown(gracePeriod: .seconds(1)) } }
        let example = try Products.path("rouse-example-handler")
        func writeHandler(_ name: String) throws {
            let text = """
                topic = "com.example.\(name)"
                command = ["\(example)", "--mode", "report"]
                push-types = ["voip"]
                allow-root = true
                """
            try Data(text.utf8).write(to: URL(fileURLWithPath: "\(directory)/handlers/\(name).toml"))
        }
        try writeHandler("first")
        let notify = try NotifySocket(path: directory + "/notify.sock")
        let socket = directory + "/agent.sock"
        let agent = try await AgentProcess(
            arguments: [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
            ], environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000"],
            stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        #expect(await notify.next() == "READY=1")
        #expect(await notify.next() == "WATCHDOG=1")

        let rouse = try Products.path("rouse")
        @Sendable func status() async throws -> String {
            let output = try await ChildProcess.run(
                rouse, ["agent", "status", "--socket", socket], timeout: .seconds(20))
            guard output.status == 0 else { throw FixtureError("rouse agent status: \(output.stderr)") }
            return output.stdout
        }
        // `rouse agent status` gives up after 5 s; an agent still writing its first state on a loaded disk may take
        // longer to answer its first request: asked again until the deadline.
        let answer = Mutex<String?>(nil)
        try await eventually("channel open", timeout: .seconds(30)) {
            let text = try? await status()
            answer.withLock { $0 = text }
            return text?.contains("channel: open") == true
        }
        let before = answer.withLock { $0 } ?? ""
        #expect(before.contains("handler first: notRunning strikes=0"), "\(before)")
        // Numbers as the status document has them (`tokens=3`, not `tokens=3.0`): `rouse agent status` reads the typed
        // `AgentStatus` and renders the lines the untyped reader did.
        let first = before.split(separator: "\n").first { $0.hasPrefix("handler first:") } ?? ""
        let tokens = first.split(separator: " ").first { $0.hasPrefix("tokens=") }?.dropFirst("tokens=".count) ?? ""
        #expect(!tokens.isEmpty && tokens.allSatisfy(\.isNumber), "\(first)")
        #expect(!before.contains("handler second"))

        try writeHandler("second")
        kill(agent.process.processIdentifier, SIGHUP)
        do {
            try await eventually("reloaded with the second handler", timeout: .seconds(30)) {
                (try? await status())?.contains("handler second:") == true
            }
        } catch {
            let log = (try? String(contentsOfFile: directory + "/agent.stderr", encoding: .utf8)) ?? ""
            print(
                "rouse-agent after SIGHUP: alive=\(kill(agent.process.processIdentifier, 0) == 0) \(log.suffix(3000))")
            throw error
        }

        // Asked again within the deadline like the text status above (a loaded machine may take over 5 s to answer);
        // the last answer is in the failure.
        let last = Mutex<(status: AgentStatus?, output: String)>((nil, ""))
        do {
            try await eventually("status --json", timeout: .seconds(30)) {
                guard
                    let json = try? await ChildProcess.run(
                        rouse, ["agent", "status", "--socket", socket, "--json"], timeout: .seconds(20))
                else { return false }
                let decoded =
                    json.status == 0 ? try? JSONDecoder().decode(AgentStatus.self, from: Data(json.stdout.utf8)) : nil
                last.withLock { $0 = (decoded, "exit \(json.status): \(json.stdout)\(json.stderr)") }
                return decoded != nil
            }
        } catch {
            let log = (try? String(contentsOfFile: directory + "/agent.stderr", encoding: .utf8)) ?? ""
            throw FixtureError(
                "rouse agent status --json: \(last.withLock { $0.output }); rouse-agent alive="
                    + "\(kill(agent.process.processIdentifier, 0) == 0), its log: \(log.suffix(3000))")
        }
        let document = try #require(last.withLock { $0.status })
        #expect(document.handlers.map(\.name) == ["first", "second"])
        #expect(document.channel == "open")

        kill(agent.process.processIdentifier, SIGTERM)
        var messages: [String] = []
        while let message = await notify.next() {
            messages.append(message)
            if message == "STOPPING=1" { break }
        }
        #expect(messages.last == "STOPPING=1", "\(messages)")
        _ = try await agent.process.wait(timeout: .seconds(30))
        #expect(agent.process.terminationStatus == 0)
    }
}
