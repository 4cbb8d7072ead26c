import Foundation
import RouseAgent
import RouseAgentCore
import RouseSystem
import Testing

/// The freeze-time decision (``FreezeDecision``) and the handler-file keys that feed it, without processes.
@Suite("Freeze-time rules: the decision and the handler-file keys")
struct FreezeRulesTests {
    static let tcp = ListeningSocket(proto: "tcp", local: "127.0.0.1:8080")
    static let unix = ListeningSocket(proto: "unix", local: "/run/app.sock")

    @Test func exitsOnSuspendTerminatesWithoutLookingAtWhatItHolds() {
        var rules = FreezeRules()
        rules.exitsOnSuspend = true
        #expect(!FreezeDecision.needsHeldResources(rules))
        #expect(FreezeDecision.decide(rules, held: nil) == .terminate(.exitsOnSuspend))
        #expect(FreezeTermination.exitsOnSuspend.reason == "exits on suspend")
        #expect(FreezeDecision.needsHeldResources(FreezeRules()))
    }

    @Test func listeningSocketsAreReportedByDefaultAndTerminateWhenAsked() {
        let held = HeldResources(listeningSockets: [Self.unix, Self.tcp])
        #expect(FreezeDecision.decide(FreezeRules(), held: held) == .freeze(reported: [Self.tcp, Self.unix]))
        var rules = FreezeRules()
        rules.listeningSockets = .terminate
        #expect(FreezeDecision.decide(rules, held: held) == .terminate(.listeningSockets([Self.tcp, Self.unix])))
        #expect(FreezeDecision.decide(rules, held: HeldResources()) == .freeze(reported: []))
        #expect(FreezeDecision.decide(FreezeRules(), held: nil) == .freeze(reported: []))
    }

    @Test func aLockOnAnExclusiveFileTerminatesWhateverTheSocketPolicy() {
        let held = HeldResources(listeningSockets: [Self.tcp], lockedExclusiveFiles: ["/b", "/a"])
        let decision = FreezeDecision.decide(FreezeRules(), held: held)
        #expect(decision == .terminate(.exclusiveResource(["/a", "/b"])))
        guard case .terminate(let termination) = decision else { return }
        #expect(termination.reason == "holds an exclusive resource past its background time: /a,/b")
        #expect(termination.counter == "exclusiveResource")
    }

    static let base = """
        topic = "com.example.f"
        command = ["/bin/true"]

        """

    @Test func handlerFileKeys() throws {
        let parsed = try HandlerConfiguration.parse(
            Self.base + """
                exits-on-suspend = true
                listening-sockets = "terminate"
                exclusive-files = ["/var/lib/f/db.lock", "/var/lib/f/state"]
                silent-audio-grace-seconds = 2.5
                """, name: "f", file: "f.toml")
        #expect(parsed.freeze.exitsOnSuspend)
        #expect(parsed.freeze.listeningSockets == .terminate)
        #expect(parsed.freeze.exclusiveFiles == ["/var/lib/f/db.lock", "/var/lib/f/state"])
        #expect(parsed.freeze.silentAudioGrace == .milliseconds(2500))
        let defaults = try HandlerConfiguration.parse(Self.base, name: "f", file: "f.toml").freeze
        #expect(defaults == FreezeRules())
        #expect(!defaults.exitsOnSuspend && defaults.listeningSockets == .report && defaults.exclusiveFiles.isEmpty)
    }

    @Test(arguments: [
        ("exits-on-suspend = 1", "exits-on-suspend must be true or false"),
        ("listening-sockets = \"close\"", "listening-sockets must be \"report\" or \"terminate\""),
        ("exclusive-files = [\"relative\"]", "exclusive-files: each entry is an absolute path"),
        ("exclusive-files = \"/a\"", "exclusive-files must be an array"),
        ("silent-audio-grace-seconds = 0", "silent-audio-grace-seconds must be a number from 0.1 to 3600"),
    ])
    func badValuesAreRefusedWithTheReason(_ line: String, _ message: String) {
        do {
            _ = try HandlerConfiguration.parse(Self.base + line, name: "f", file: "f.toml")
            Issue.record("accepted: \(line)")
        } catch {
            #expect("\(error)".contains(message), "\(error)")
        }
    }

    // MARK: The /proc parsers on text

    @Test func inetTablesKeepListenersAndUnconnectedUDP() {
        let tcp = """
              sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
               0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0
               1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 112 1 0
               2: garbage
            """
        #expect(HeldResourceProbe.parseInet(tcp, proto: "tcp") == [111: .init(proto: "tcp", local: "127.0.0.1:8080")])
        let udp6 = """
              sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
              0: 00000000000000000000000001000000:14E9 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 221 2 0 0
              1: 00000000000000000000000001000000:14EA 00000000000000000000000001000000:0035 01 00000000:00000000 00:00000000 00000000     0        0 222 2 0 0
            """
        #expect(
            HeldResourceProbe.parseInet(udp6, proto: "udp6") == [
                221: .init(proto: "udp6", local: "[0:0:0:0:0:0:0:1]:5353")
            ])
    }

    @Test func unixTableKeepsAcceptingSockets() {
        let text = """
            Num       RefCount Protocol Flags    Type St Inode Path
            0000000000000000: 00000002 00000000 00010000 0001 01 301 /run/app.sock
            0000000000000000: 00000002 00000000 00010000 0001 01 302 @abstract name
            0000000000000000: 00000003 00000000 00000000 0001 03 303 /run/app.sock
            0000000000000000: 00000002 00000000 00000000 0002 01 304
            """
        #expect(
            HeldResourceProbe.parseUnix(text) == [
                301: .init(proto: "unix", local: "/run/app.sock"), 302: .init(proto: "unix", local: "@abstract name"),
            ])
    }

    @Test func locksTableSkipsWaiters() {
        let text = """
            1: POSIX  ADVISORY  WRITE 1234 08:01:5678 0 EOF
            1: -> POSIX  ADVISORY  WRITE 1235 08:01:5678 0 EOF
            2: FLOCK  ADVISORY  WRITE 11131 fe:00:16225328 0 EOF
            3: OFDLCK ADVISORY  READ  -1 00:05:42 0 EOF
            4: nonsense
            """
        let locks = HeldResourceProbe.parseLocks(text)
        #expect(locks.map(\.pid) == [1234, 11131, -1])
        #expect(locks.map(\.kind) == ["POSIX", "FLOCK", "OFDLCK"])
        #expect(locks[1].file.major == 0xfe && locks[1].file.minor == 0 && locks[1].file.inode == 16_225_328)
    }
}
