import Foundation
import RouseTestSupport
import Testing

@Suite("deploy/rouse-agent.service", .timeLimit(.minutes(1)))
struct AgentSystemdUnitTests {
    static let analyze = "/usr/bin/systemd-analyze"

    @Test("passes systemd-analyze verify and is Type=notify with a watchdog, restarted on failure, started at boot")
    func verify() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.analyze) else {
            throw FixtureError("\(Self.analyze) is missing: run deploy/install-deps.sh (it installs systemd)")
        }
        let unit = try String(contentsOfFile: Repository.root + "/deploy/rouse-agent.service", encoding: .utf8)
        for line in [
            "Type=notify", "WatchdogSec=", "Restart=on-failure", "WantedBy=multi-user.target", "KillMode=process",
            "LoadCredentialEncrypted=rouse-state-key:/var/lib/rouse/keys/state-key.cred", "TasksMax=", "MemoryMax=",
        ] {
            #expect(unit.contains(line), "\(line)")
        }
        let executable = try Products.path("rouse-agent")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.path + "/rouse-agent.service"
        try Data(unit.replacingOccurrences(of: "/usr/local/bin/rouse-agent", with: executable).utf8)
            .write(to: URL(fileURLWithPath: path))
        let output = try await ChildProcess.run(Self.analyze, ["verify", path], timeout: .seconds(30))
        #expect(output.status == 0, "systemd-analyze verify: \(output.stdout)\(output.stderr)")
        #expect(!output.stderr.contains("rouse-agent.service"), "\(output.stderr)")
    }

    /// The sandbox is what the agent's needs allow, and systemd rates it "OK" (≤ 3.0).
    @Test func isHardenedToAnExposureOfAtMostThree() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.analyze) else {
            throw FixtureError("\(Self.analyze) is missing: run deploy/install-deps.sh (it installs systemd)")
        }
        let path = Repository.root + "/deploy/rouse-agent.service"
        let unit = try String(contentsOfFile: path, encoding: .utf8)
        for line in [
            "ProtectSystem=strict", "ReadWritePaths=", "CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_KILL",
            "SystemCallFilter=@system-service", "RestrictNamespaces=yes", "ProtectKernelTunables=yes",
            "ProtectKernelModules=yes", "ProtectKernelLogs=yes", "LockPersonality=yes", "UMask=0077", "LimitNOFILE=",
            "NoNewPrivileges=yes", "--handler-user rouse-handler",
        ] {
            #expect(unit.contains(line), "\(line)")
        }
        let output = try await ChildProcess.run(
            Self.analyze, ["security", "--offline=yes", "--no-pager", path], timeout: .seconds(30))
        let last = output.stdout.split(separator: "\n").last { $0.contains("Overall exposure level") } ?? ""
        let exposure = last.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
        #expect(exposure.map { $0 <= 3.0 } == true, "\(last)\n\(output.stderr)")
    }

    /// The per-user unit: `systemd-analyze verify --user` (with a runtime directory of its own), the per-user
    /// defaults, and the delegated cgroup.
    @Test func theUserUnitVerifies() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.analyze) else {
            throw FixtureError("\(Self.analyze) is missing: run deploy/install-deps.sh (it installs systemd)")
        }
        let unit = try String(contentsOfFile: Repository.root + "/deploy/rouse-agent-user.service", encoding: .utf8)
        for line in [
            "Type=notify", "rouse-agent --user", "Delegate=yes", "KillMode=process", "WantedBy=default.target",
        ] {
            #expect(unit.contains(line), "\(line)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        chmod(directory.path, 0o700)
        let path = directory.path + "/rouse-agent.service"
        try Data(
            unit.replacingOccurrences(of: "/usr/local/bin/rouse-agent", with: try Products.path("rouse-agent")).utf8
        )
        .write(to: URL(fileURLWithPath: path))
        let output = try await ChildProcess.run(
            "/usr/bin/env", ["XDG_RUNTIME_DIR=\(directory.path)", Self.analyze, "verify", "--user", path],
            timeout: .seconds(30))
        #expect(output.status == 0, "systemd-analyze verify --user: \(output.stdout)\(output.stderr)")
        #expect(!output.stderr.contains("rouse-agent.service"), "\(output.stderr)")
    }
}
