import Foundation
import Glibc
import RouseAgent
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Testing

/// The per-user mode: `rouse-agent --user` run by an ordinary user (nobody) with a home and a runtime
/// directory of its own, as a systemd user service would run it.
@Suite("rouse-agent --user", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(2)))
struct AgentUserModeTests {
    @Test func anOrdinaryUsersAgentKeepsItsFilesInItsXDGDirectoriesAndLaunchesHandlersInTheSession() async throws {
        guard getuid() == 0 else { throw FixtureError("running as another user needs root (uid \(getuid()))") }
        let (directory, gateway) = try AgentHarness.quietGatewayInTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let provider = try await Provider.connect(port: gateway.providerPort)
        defer {
            provider.client.close()
            Task { await gateway.shutdown(gracePeriod: .seconds(1)) }
        }
        let nobody = try #require(getpwnam("nobody")).pointee
        let (uid, gid) = (nobody.pw_uid, nobody.pw_gid)
        // The user's home and runtime directory (0700, its own), and what it can reach: copies of the programs and
        // the CA, wherever this checkout is.
        let agentCopy = try Products.copyForEveryUser("rouse-agent")
        let handlerCopy = try Products.copyForEveryUser("rouse-example-handler")
        let home = directory + "/home"
        let runtime = directory + "/run"
        chmod(directory, 0o755)
        for path in [home, runtime, home + "/.config/rouse/handlers.d"] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        let ca = home + "/ca.pem"
        try FileManager.default.copyItem(atPath: Repository.cert("ca.pem"), toPath: ca)
        let file = """
            topic = "com.example.rouse"
            command = ["\(handlerCopy)", "--describe", "--log", "\(home)/voip.log"]
            push-types = ["voip"]
            """
        try Data(file.utf8).write(to: URL(fileURLWithPath: home + "/.config/rouse/handlers.d/voip.toml"))
        for path in try FileManager.default.subpathsOfDirectory(atPath: home).map({ home + "/" + $0 }) + [
            home, runtime,
        ] {
            chown(path, uid, gid)
        }
        chmod(home, 0o700)
        chmod(runtime, 0o700)
        // The user manager, as `systemctl --user show-environment` answers: a display the agent's own environment
        // does not have. Each run adds a line to a file, so the test counts them.
        let runs = runtime + "/systemctl-runs"
        let systemctl = directory + "/systemctl"
        let script = """
            #!/bin/sh
            [ "$1 $2" = "--user show-environment" ] || exit 2
            echo run >> \(runs)
            echo DISPLAY=:7
            echo SSH_AUTH_SOCK=\(runtime)/ssh-agent.socket
            """
        try Data(script.utf8).write(to: URL(fileURLWithPath: systemctl))
        chmod(systemctl, 0o755)
        @Sendable func systemctlRuns() -> Int {
            ((try? String(contentsOfFile: runs, encoding: .utf8)) ?? "").split(separator: "\n").count
        }
        let agent = try await AgentProcess(
            executable: "/usr/bin/setpriv",
            arguments: [
                "--reuid=nobody", "--regid=nogroup", "--clear-groups", agentCopy, "--user",
                "--gateway", "https://127.0.0.1:\(gateway.devicePort)", "--ca", ca,
                "--enroll-secret", try gateway.makeEnrollmentSecret(), "--assume-reachable", "--systemctl", systemctl,
            ],
            // A session's environment, as a user manager hands it to its services.
            environment: [
                "HOME": home, "XDG_RUNTIME_DIR": runtime, "XDG_CONFIG_HOME": home + "/.config",
                "XDG_STATE_HOME": home + "/.local/state", "WAYLAND_DISPLAY": "wayland-9",
                "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtime)/bus", "NOTIFY_SOCKET": runtime + "/no-notify",
            ],
            stderrPath: directory + "/agent.stderr")
        defer { agent.kill() }
        let socket = runtime + "/rouse/agent.sock"
        try await eventually("channel open", timeout: .seconds(30)) {
            let status = try? await AgentNetworkTests.status(socket: socket)
            return status?.channel == "open" && status?.tokens?.isEmpty == false
        }
        #expect(systemctlRuns() == 1, "the session's environment is read once at start")
        // Its files: the socket and the data key are the user's alone.
        var info = stat()
        #expect(stat(socket, &info) == 0 && info.st_uid == uid && info.st_mode & 0o777 == 0o600)
        let key = home + "/.local/state/rouse/keys/state.key"
        #expect(stat(key, &info) == 0 && info.st_uid == uid && info.st_mode & 0o777 == 0o600, "\(key)")
        // A push launches its handler as the user, with the session's display and bus, and nothing of the agent's.
        let topic = "com.example.rouse.voip"
        let token = try #require(try await AgentNetworkTests.status(socket: socket).tokens?[topic])
        #expect(await provider.push(token: token, topic: topic, type: "voip", payload: #"{"n":1}"#) == 200)
        @Sendable func log() -> [String] {
            ((try? String(contentsOfFile: home + "/voip.log", encoding: .utf8)) ?? "").split(separator: "\n")
                .map(String.init)
        }
        try await eventually("the call reported") { log().contains { $0.hasPrefix("reported id=") } }
        let lines = log()
        #expect(lines.contains { $0.hasPrefix("registered launchReason=voipPush uid=\(uid) ") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("fds 0 1 2 3 pid=") }, "\(lines)")
        let names = Set(lines.first { $0.hasPrefix("environment ") }?.split(separator: " ").map(String.init) ?? [])
        for name in ["WAYLAND_DISPLAY", "DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "HOME", "PATH"] {
            #expect(names.contains(name), "\(name) missing: \(names.sorted())")
        }
        #expect(!names.contains("NOTIFY_SOCKET"), "\(names.sorted())")
        // Nor the user's SSH agent: a handler would sign in as the user elsewhere.
        #expect(!names.contains("SSH_AUTH_SOCK"), "\(names.sorted())")
        try await eventually("acknowledged") { try AgentHarness.pending(gateway) == 0 }
        // The user manager was asked once, at start, not at the launch (a program run on the agent's loop at every
        // launch); SIGHUP (the unit's reload) asks again.
        #expect(systemctlRuns() == 1)
        kill(agent.process.processIdentifier, SIGHUP)
        try await eventually("the session's environment read again on SIGHUP") { systemctlRuns() == 2 }
    }
}
