import Foundation
import Glibc
import RouseAgent
import RouseAgentClient
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Testing

/// What a handler is given (descriptors, environment, identity) and which executables
/// the agent refuses to start.
@Suite("Handlers: descriptors, environment, identity, executable checks", .serialized, .stopsWhatItStarts)
struct AgentPrivilegeTests {
    /// Variables a handler may have: the allow-list, its account's, what its file lists, and the test's tags.
    static func allowed(_ name: String) -> Bool {
        ["PATH", "LANG", "HOME", "USER", "LOGNAME", "TZ"].contains(name) || name.hasPrefix("ROUSE_")
    }

    @Test(.timeLimit(.minutes(2)))
    func launchedHandlersHoldOnlyTheirDescriptorsAndAnAllowListedEnvironment() async throws {
        guard getuid() == 0 else { throw FixtureError("switching a handler's user needs root (uid \(getuid()))") }
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let provider = try await Provider.connect(port: gateway.providerPort)
        defer {
            provider.client.close()
            Task { await gateway.shutdown(gracePeriod: .seconds(1)) }
        }
        // The handler running as nobody writes its log here, and runs a copy it can reach.
        chmod(directory, 0o777)
        let executable = try Products.copyForEveryUser("rouse-example-handler")
        // `plain` runs as the agent's handler user (fork + setuid), `rooted` as root (posix_spawn).
        for (name, extra) in [("plain", ""), ("rooted", "allow-root = true\n")] {
            let file = """
                topic = "com.example.\(name)"
                command = ["\(executable)", "--describe", "--log", "\(directory)/\(name).log"]
                push-types = ["voip"]
                environment = ["TZ=UTC", "HOSTILE_NOT_SET_IN_THE_AGENT"]
                \(extra)
                """
            try Data(file.utf8).write(to: URL(fileURLWithPath: "\(directory)/handlers/\(name).toml"))
        }
        let notify = try NotifySocket(path: directory + "/notify.sock")
        let socket = directory + "/agent.sock"
        let agent = try await AgentProcess(
            arguments: [
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", Repository.cert("ca.pem"),
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--handlers", directory + "/handlers",
                "--state-dir", directory + "/state", "--socket", socket, "--assume-reachable",
                "--handler-user", "nobody",
            ],
            // What a service manager hands the agent, and what must not reach a handler.
            environment: [
                "NOTIFY_SOCKET": notify.path, "CREDENTIALS_DIRECTORY": directory + "/credentials",
                "AGENT_ONLY_SECRET": "1",
            ],
            stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        try await eventually("channel open", timeout: .seconds(30)) {
            let status = try? await AgentNetworkTests.status(socket: socket)
            return status?.channel == "open" && status?.tokens?.count == 2
        }
        let tokens = try await AgentNetworkTests.status(socket: socket).tokens ?? [:]
        for name in ["plain", "rooted"] {
            let topic = "com.example.\(name).voip"
            let status = await provider.push(
                token: try #require(tokens[topic]), topic: topic, type: "voip", payload: #"{"n":1}"#)
            #expect(status == 200)
        }
        @Sendable func lines(_ name: String) -> [String] {
            ((try? String(contentsOfFile: "\(directory)/\(name).log", encoding: .utf8)) ?? "").split(separator: "\n")
                .map(String.init)
        }
        for name in ["plain", "rooted"] {
            try await eventually("\(name) described itself") { lines(name).contains { $0.hasPrefix("environment ") } }
            let log = lines(name)
            let fds = try #require(log.first { $0.hasPrefix("fds ") })
            #expect(fds.hasPrefix("fds 0 1 2 3 pid="), "\(name): \(fds)")
            let names = try #require(log.first { $0.hasPrefix("environment ") }).split(separator: " ").dropFirst()
                .dropLast().map(String.init)
            #expect(names.allSatisfy(Self.allowed), "\(name): \(names)")
            #expect(names.contains("TZ") && names.contains("PATH") && names.contains("ROUSE_AGENT_FD"))
            let registered = try #require(log.first { $0.hasPrefix("registered ") })
            let uid = name == "plain" ? try #require(getpwnam("nobody")).pointee.pw_uid : 0
            #expect(registered.contains("uid=\(uid) "), "\(name): \(registered)")
        }
    }

    /// A handler the agent would run as root without `allow-root`, or as a user that does not exist.
    @Test(
        arguments: [
            ("root", "", "would run as root"),
            (nil, "rouse-no-such-user", "user rouse-no-such-user does not exist"),
        ] as [(String?, String, String)])
    func launchesThatWouldRunAsRootOrNobodyKnownAreRefused(
        user: String?, handlerUser: String, expected: String
    ) async throws {
        guard getuid() == 0 else { throw FixtureError("the root agent's rules need root (uid \(getuid()))") }
        let harness = try await AgentHarness(
            handlers: { directory in
                var handler = try AgentHarness.handler("voip", mode: "report", directory: directory)
                handler.allowRoot = false
                handler.user = user
                return [handler]
            },
            configure: { _, configuration in
                if !handlerUser.isEmpty { configuration.handlerUser = handlerUser }
            })
        try await harness.push("voip", type: "voip")
        try await eventually("launch refused") { await harness.handlerStatus("voip")?.launchRefused != nil }
        let refused = await harness.handlerStatus("voip")?.launchRefused ?? ""
        #expect(refused.contains(expected), "\(refused)")
        #expect(harness.log("voip").isEmpty)
        // The push that could not be handed over is consumed, as iOS drops one for an app it cannot launch.
        try await eventually("acknowledged") { try harness.pending() == 0 }
    }

    /// An executable (or a directory above it) that someone other than root or the handler's user could replace.
    @Test(arguments: ["file-writable", "directory-writable", "file-owned-by-another-user"])
    func executablesOthersCouldReplaceAreRefusedNamingThePath(_ flaw: String) async throws {
        guard getuid() == 0 else { throw FixtureError("chown needs root (uid \(getuid()))") }
        let copy = try Products.copyForEveryUser("rouse-example-handler")
        let folder = String(copy[..<copy.lastIndex(of: "/")!])
        let nobody = try #require(getpwnam("nobody")).pointee.pw_uid
        let offender: String
        switch flaw {
        case "file-writable":
            chmod(copy, 0o757)
            offender = "\(copy) is writable by group or others (mode 0757)"
        case "directory-writable":
            chmod(folder, 0o777)
            offender = "\(folder) is writable by group or others (mode 0777)"
        default:
            chown(copy, nobody, 0)
            offender = "\(copy) is owned by uid \(nobody), neither root nor the handler's user (uid 0)"
        }
        let harness = try await AgentHarness { directory in
            var handler = try AgentHarness.handler("voip", mode: "report", directory: directory)
            handler.command[0] = copy
            return [handler]
        }
        try await harness.push("voip", type: "voip")
        try await eventually("launch refused") { await harness.handlerStatus("voip")?.launchRefused != nil }
        let refused = await harness.handlerStatus("voip")?.launchRefused ?? ""
        #expect(refused.contains(offender), "\(refused)")
        #expect(harness.log("voip").isEmpty)
    }
}
