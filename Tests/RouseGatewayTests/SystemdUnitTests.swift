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
}
