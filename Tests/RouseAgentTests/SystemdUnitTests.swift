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
            "LoadCredentialEncrypted=rouse-state-key:/var/lib/rouse/keys/state-key.cred",
        ] {
            #expect(unit.contains(line))
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
}
