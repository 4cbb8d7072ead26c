import Foundation
import RouseTestSupport
import Testing

@Suite("deploy/rouse-gateway.service", .timeLimit(.minutes(1)))
struct SystemdUnitTests {
    static let analyze = "/usr/bin/systemd-analyze"

    @Test("passes systemd-analyze verify (ExecStart pointed at the built executable) and is Type=notify")
    func verify() async throws {
        guard FileManager.default.isExecutableFile(atPath: Self.analyze) else {
            throw FixtureError("\(Self.analyze) is missing: run deploy/install-deps.sh (it installs systemd)")
        }
        let unit = try String(contentsOfFile: Repository.root + "/deploy/rouse-gateway.service", encoding: .utf8)
        #expect(unit.contains("Type=notify"))
        #expect(unit.contains("Restart=on-failure"))
        // verify checks that ExecStart's program exists: use the one this test run built.
        let executable = try GatewayProcess.executable()
        let directory = try TemporaryDirectory()
        let path = directory.path + "/rouse-gateway.service"
        try Data(unit.replacingOccurrences(of: "/usr/local/bin/rouse-gateway", with: executable).utf8)
            .write(to: URL(fileURLWithPath: path))
        let output = try await ChildProcess.run(Self.analyze, ["verify", path], timeout: .seconds(30))
        #expect(output.status == 0, "systemd-analyze verify: \(output.stdout)\(output.stderr)")
        #expect(!output.stderr.contains("rouse-gateway.service"), "\(output.stderr)")
    }

    @Test(
        "is hardened: no capabilities, a system-call filter, umask 0077, kernel logs, clock, hostname, realtime, /proc")
    func hardened() async throws {
        let path = Repository.root + "/deploy/rouse-gateway.service"
        let unit = try String(contentsOfFile: path, encoding: .utf8)
        let lines = Set(unit.split(separator: "\n").map(String.init))
        for directive in [
            "CapabilityBoundingSet=", "UMask=0077", "SystemCallFilter=@system-service", "ProtectKernelLogs=yes",
            "ProtectClock=yes", "ProtectHostname=yes", "RestrictRealtime=yes", "ProtectProc=invisible",
            "NoNewPrivileges=yes", "ProtectSystem=strict",
        ] {
            #expect(lines.contains(directive), "\(directive) is missing")
        }
        // systemd's own reading: before these, 5.6 MEDIUM; now 1.6 OK.
        let directory = try TemporaryDirectory()
        let copy = directory.path + "/rouse-gateway.service"
        try Data(unit.replacingOccurrences(of: "/usr/local/bin/rouse-gateway", with: "/bin/true").utf8)
            .write(to: URL(fileURLWithPath: copy))
        let output = try await ChildProcess.run(
            Self.analyze, ["security", "--offline=yes", copy], timeout: .seconds(30))
        let level = output.stdout.split(separator: "\n").last { $0.contains("Overall exposure level") }
        let score = level.flatMap { line in
            line.split(separator: " ").compactMap { Double($0) }.first
        }
        #expect(score.map { $0 <= 2.0 } == true, "\(output.stdout.suffix(400))\(output.stderr)")
    }
}
