import Foundation
import RouseTestSupport
import Testing

/// `rouse mock-apns` as users run it: a child process, JSON lines, SIGTERM, asleep when idle.
@Suite("rouse mock-apns CLI", .timeLimit(.minutes(2)))
struct MockCLITests {
    @Test("prints its address and one JSON line per push; sleeps when idle; SIGTERM shuts it down gracefully")
    func jsonAndSIGTERM() async throws {
        let rouse = try Products.path("rouse")
        let process = try ChildProcess.start(
            rouse,
            [
                "mock-apns", "--listen", "127.0.0.1:0", "--cert", Repository.cert("server.pem"), "--key",
                Repository.cert("server.key"), "--client-ca", Repository.cert("ca.pem"), "--json", "--log-level",
                "error",
            ], stdout: .lines)
        let lines = process.lines
        let startup = try #require(await lines.next())
        #expect(startup.contains(#""event":"listening""#))
        let address = try #require(startup.split(separator: "\"").drop { $0 != "address" }.dropFirst(2).first)
        let push = try await ChildProcess.run(
            "/usr/bin/curl",
            [
                "-s", "--http2", "--cacert", Repository.cert("ca.pem"), "--cert", Repository.cert("provider.pem"),
                "--key", Repository.cert("provider.key"), "-H", "apns-topic: com.example.rouse.voip", "-H",
                "apns-push-type: voip", "-d", #"{"aps":{}}"#, "-o", "/dev/null", "-w", "%{http_code}",
                "https://localhost:\(address.split(separator: ":").last ?? "")/3/device/abcd",
            ])
        #expect(push.stdout == "200")
        let record = try #require(await lines.next())
        #expect(record.contains(#""outcome":"accepted""#))
        #expect(record.contains(#""token":"abcd""#))
        // Idle after serving, it sleeps: no libdispatch worker pool, whose monitor would wake it every
        // second. Quiet means 3 s without a wake-up of any of its threads; then at most 1 in 5 s.
        let pid = process.processIdentifier
        // It makes no transfer, opens no D-Bus connection and no PostgreSQL store, so it never loaded libcurl, libsystemd
        // or libpq (CRouseCurl, CRouseSystemd and CRousePQ load them on first use) or their dependencies.
        // (Read to the end: /proc files have no size, and String(contentsOfFile:) stops after the first read.)
        let file = try #require(FileHandle(forReadingAtPath: "/proc/\(pid)/maps"))
        let maps = String(decoding: file.readDataToEndOfFile(), as: UTF8.self)
        try file.close()
        #expect(maps.contains("libnghttp2"), "the maps of the mock list no libnghttp2: not the mock's maps")
        for library in ["libcurl", "libsystemd", "libpq"] {
            #expect(!maps.contains(library), "the mock loaded \(library)")
        }
        let quiet = try await ProcessProbe.settle(pid, quiet: .seconds(3), limit: .seconds(15))
        #expect(quiet, "the mock never went quiet")
        if quiet {
            let wakeUps = try await ProcessProbe.wakeUps(pid, over: .seconds(5), voluntaryOnly: true)
            #expect(wakeUps <= 1, "\(wakeUps) wake-ups in 5 s")
        }
        process.terminate()
        #expect(try await process.wait(timeout: .seconds(20)) == 0)
    }

    @Test("a garbage tokens file is a clear error, not a crash")
    func badTokensFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-bad-tokens-\(UUID()).json")
        try Data(#"{"tokens":[{"token":"xyz"}]}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let out = try await ChildProcess.run(
            try Products.path("rouse"), ["mock-apns", "--h2c", "--listen", "127.0.0.1:0", "--tokens", file.path])
        #expect(out.status != 0)
        #expect(out.stderr.contains("tokens"))
        #expect(!out.stderr.contains("Fatal error"))
    }
}
