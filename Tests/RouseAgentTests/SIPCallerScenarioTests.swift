import Foundation
import RouseSIPLab
import RouseTestSupport
import Testing

/// The caller's committed SIPp scenario (`deploy/sip/sipp-uac.xml`, used by the SIP end-to-end tests, `rouse-bench
/// sip` and deploy/demo.sh) against a SIPp callee (`Tests/Fixtures/sip/sipp-uas-late-180.xml`) whose 180 Ringing
/// reaches the caller after its 200 OK, as a proxy's UDP workers can forward the two. RFC 3261 has the caller ignore a
/// provisional after the final response; a caller that aborts the call on it leaves the callee in the call (its BYE
/// goes nowhere), and a softphone that takes one call at a time then answers the next INVITEs 486.
@Suite("SIP caller scenario", .stopsWhatItStarts, .timeLimit(.minutes(1)))
struct SIPCallerScenarioTests {
    @Test func callerTakesA180ThatArrivesAfterThe200() async throws {
        try SIPLab.requireTools()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-sipp-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var ports = LoopbackPorts()
        let calleePort = try ports.next()
        let callerPort = try ports.next()
        let calls = 5
        let callee = try ChildProcess.start(
            SIPLab.sipp,
            [
                "-sf", Repository.root + "/Tests/Fixtures/sip/sipp-uas-late-180.xml", "-i", "127.0.0.1", "-p",
                "\(calleePort)", "-m", "\(calls)", "-trace_err", "-error_file", directory + "/callee-errors.log",
                "-nostdin",
            ], stdout: .file(directory + "/callee.out"))
        defer { callee.kill() }
        // The caller's first INVITE must not beat the callee's bind. Read from /proc/net/udp (local address
        // 0100007F:port in hex) rather than probed with a bind of our own, which could take the port from SIPp.
        let bound = String(format: "0100007F:%04X", calleePort)
        try await SIPLab.until("the callee's SIPp bound 127.0.0.1:\(calleePort)") {
            let table = (try? String(contentsOfFile: "/proc/net/udp", encoding: .utf8)) ?? ""
            return !callee.isRunning
                || table.split(separator: "\n").contains { $0.split(separator: " ").dropFirst().first == bound[...] }
        }
        let run = try await SIPLab.calls(
            "late-180", count: calls, period: .milliseconds(1), hold: .milliseconds(100),
            scenario: Repository.root + "/deploy/sip/sipp-uac.xml", to: "bob", at: calleePort, from: callerPort,
            directory: directory)
        #expect(run.sippStatus == 0, "\(run.summary)\n\(run.sippOutput)")
        #expect(run.answeredMilliseconds.count == calls, "\(run.summary)\n\(run.sippOutput)")
        // The callee got every ACK and BYE (it answers each BYE, then ends after `calls` calls): no call was left up.
        let calleeStatus = try await callee.wait(timeout: .seconds(10))
        let calleeErrors = (try? String(contentsOfFile: directory + "/callee-errors.log", encoding: .utf8)) ?? ""
        #expect(calleeStatus == 0, "callee SIPp: \(calleeErrors.suffix(3000))")
    }
}
