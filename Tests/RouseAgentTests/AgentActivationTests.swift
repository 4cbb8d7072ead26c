import Foundation
import Glibc
import RouseActivation
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseTestSupport
import Testing

extension AgentHarness {
    /// Handlers running the example handler with a command pipe (`<directory>/<name>.fifo`), by name → mode.
    /// They are suspended after `suspendAfter` idle in the background (a frozen handler reads no command).
    static func audioHandlers(
        _ directory: String, _ modes: [String: String], suspendAfter: Duration = .seconds(120)
    ) throws -> [HandlerConfiguration] {
        try modes.sorted { $0.key < $1.key }.map { name, mode in
            let fifo = "\(directory)/\(name).fifo"
            guard mkfifo(fifo, 0o600) == 0 else { throw FixtureError("mkfifo \(fifo): errno \(errno)") }
            return try handler(
                name, mode: mode, directory: directory, arguments: ["--commands", fifo]
            ) { $0.suspendAfter = suspendAfter }
        }
    }

    /// The user starts handler `name`; waits until it registered (and, with `foreground`, declared itself active).
    func startHandler(_ name: String, foreground: Bool = false) async throws {
        let registrations = lines(name, "registered").count
        try await admin(.userControl(.init(handler: name, state: "started")))
        try await waitForLine(name, "registered", count: registrations + 1)
        guard foreground else { return }
        try command(name, "state active")
        try await eventually("\(name) active") { await self.handlerStatus(name)?.state == "active" }
    }

    /// Writes one command line to the handler's pipe (it must be running: the handler holds the pipe open).
    func command(_ name: String, _ line: String) throws {
        guard let handle = FileHandle(forWritingAtPath: "\(directory)/\(name).fifo") else {
            throw FixtureError("cannot open \(name)'s command pipe")
        }
        defer { try? handle.close() }
        try handle.write(contentsOf: Data((line + "\n").utf8))
    }

    /// The handler's log lines starting with `prefix`, without the ` pid=…` suffix.
    func lines(_ name: String, _ prefix: String) -> [String] {
        log(name).filter { $0.hasPrefix(prefix) }.map { line in
            line.range(of: " pid=", options: .backwards).map { String(line[..<$0.lowerBound]) } ?? line
        }
    }

    /// Sends `activate ARGS` and returns the answer (`event=granted`, `event=denied reason=…`, `error=…`).
    func activate(_ name: String, _ arguments: String) async throws -> String {
        let session = String(arguments.split(separator: " ")[0])
        let prefix = "answer session=\(session) "
        let before = lines(name, prefix).count
        try command(name, "activate \(arguments)")
        try await waitForLine(name, prefix, count: before + 1)
        return String(lines(name, prefix)[before].dropFirst(prefix.count))
    }

    /// Waits for the `count`-th activation event line `session=S event=E…` of handler `name`.
    func waitForEvent(_ name: String, _ event: String, count: Int = 1) async throws {
        try await waitForLine(name, "activation \(event)", count: count)
    }

    /// The session `handler/name` in the agent's activation snapshot.
    func session(_ handler: String, _ name: String) async -> SessionSnapshot? {
        await agent.activationSnapshot().sessions.first {
            $0.session == SessionID(handler: HandlerID(handler), name: name)
        }
    }
}

@Suite("rouse-agent activations with real handler processes", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentActivationTests {
    @Test func incomingCallInterruptsMediaWhichResumesWhenTheCallEndsWithNotify() async throws {
        let harness = try await AgentHarness {
            try AgentHarness.audioHandlers($0, ["phone": "keepcall", "player": "report"])
        }
        try await harness.startHandler("player", foreground: true)
        #expect(try await harness.activate("player", "music playback") == "event=granted")
        #expect(await harness.session("player", "music")?.state == .active)

        // A VoIP push launches the phone handler, which reports the call: the call path activates its session.
        try await harness.push("phone", type: "voip", payload: #"{"call":"bob"}"#)
        try await harness.waitForLine("phone", "reported id=")
        try await harness.waitForEvent("phone", "session=call event=callActivated")
        try await harness.waitForEvent("player", "session=music event=interruptionBegan reason=preempted")
        let interrupted = await harness.session("player", "music")
        #expect(interrupted?.state == .interrupted)
        #expect(interrupted?.interruptedBy == [SessionID.call(of: HandlerID("phone"))])
        #expect(await harness.handlerStatus("phone")?.holdsAudio == true)

        // `rouse agent sessions` shows both, as JSON and as text.
        let rouse = try Products.path("rouse")
        let json = try await ChildProcess.run(rouse, ["agent", "sessions", "--socket", harness.socketPath, "--json"])
        #expect(json.status == 0)
        let snapshot = try JSONDecoder().decode(ActivationSnapshot.self, from: Data(json.stdout.utf8))
        #expect(snapshot.sessions.map(\.session.description).sorted() == ["phone/call", "player/music"])
        let text = try await ChildProcess.run(rouse, ["agent", "sessions", "--socket", harness.socketPath])
        #expect(text.stdout.contains("player/music\tmedia\tplayback\tdefault\t-\tinterrupted(preempted) by phone/call"))

        let reported = harness.lines("phone", "reported id=")[0]
        let callID = try #require(reported.split(separator: " ").first { $0.hasPrefix("call=") }?.dropFirst(5))
        try harness.command("phone", "endcall \(callID)")
        try await harness.waitForEvent("player", "session=music event=interruptionEnded shouldResume=true")
        try await harness.waitForEvent("phone", "session=call event=callDeactivated")
        #expect(await harness.session("player", "music")?.state == .active)
        #expect(await harness.session("phone", "call") == nil)
        #expect(harness.lines("player", "activation session=music event=interruptionBegan").count == 1)
        #expect(harness.lines("player", "activation session=music event=interruptionEnded").count == 1)
    }

    /// `player` (foreground) plays music; `phone` reports call `c-1`, which interrupts it.
    static func musicInterruptedByACall() async throws -> AgentHarness {
        let harness = try await AgentHarness {
            try AgentHarness.audioHandlers($0, ["phone": "report", "player": "report"])
        }
        try await harness.startHandler("player", foreground: true)
        try await harness.startHandler("phone")
        #expect(try await harness.activate("player", "music playback") == "event=granted")
        try harness.command("phone", "call c-1")
        try await harness.waitForEvent("phone", "session=call event=callActivated")
        try await harness.waitForEvent("player", "session=music event=interruptionBegan reason=preempted")
        return harness
    }

    @Test func callEndedWithoutNotifyDoesNotResumeTheInterruptedSession() async throws {
        let harness = try await Self.musicInterruptedByACall()
        try harness.command("phone", "endcall c-1 nonotify")
        try await harness.waitForEvent("player", "session=music event=interruptionEnded shouldResume=false")
        #expect(await harness.session("player", "music") == nil)
        // It must activate again to play.
        #expect(try await harness.activate("player", "music playback") == "event=granted")
    }

    @Test func killedHolderReleasesItsCallAndTheOthersAreTold() async throws {
        let harness = try await Self.musicInterruptedByACall()
        let pid = try #require(await harness.handlerStatus("phone")?.pid)
        kill(pid, SIGKILL)
        // Its death is a deactivation with notify: the interrupted session resumes.
        try await harness.waitForEvent("player", "session=music event=interruptionEnded shouldResume=true")
        #expect(await harness.session("phone", "call") == nil)
        #expect(await harness.session("player", "music")?.state == .active)
        try await eventually("phone gone") { await harness.handlerStatus("phone")?.state == "notRunning" }
        #expect(await harness.handlerStatus("phone")?.holdsAudio == false)
    }

    @Test func requestsAreJudgedByStateRoleAndConfiguration() async throws {
        let harness = try await AgentHarness { try AgentHarness.audioHandlers($0, ["player": "report"]) }
        try await harness.startHandler("player")
        // In the background without a call, a non-mixable request cannot interrupt others; a mixable one plays.
        #expect(try await harness.activate("player", "music playback") == "event=denied reason=cannotInterruptOthers")
        #expect(try await harness.activate("player", "chime ambient role=notification") == "event=granted")
        // Calls only through the call path; bad configurations get precise errors and change nothing.
        #expect(try await harness.activate("player", "call playAndRecord") == "event=denied reason=callPathRequired")
        #expect(try await harness.activate("player", "rec record options=duckOthers") == "error=incompatible-option")
        #expect(try await harness.activate("player", "x playback mode=voiceChat") == "error=incompatible-mode")
        #expect(try await harness.activate("player", "x stereo") == "error=badRequest")
        #expect(try await harness.activate("player", "x playback role=boss") == "error=badRequest")
        #expect(try await harness.activate("player", "bad/name ambient") == "error=badRequest")
        // At most 16 sessions per handler (the chime is one).
        for n in 1..<16 { #expect(try await harness.activate("player", "s\(n) ambient") == "event=granted") }
        #expect(try await harness.activate("player", "s16 ambient") == "error=tooManySessions")
        for n in 1..<16 { try harness.command("player", "deactivate s\(n)") }
        try await harness.waitForLine("player", "deactivated session=s15")
        let sessions = await harness.agent.activationSnapshot().sessions
        #expect(sessions.map(\.session.name) == ["chime"])
        // A route change from an external source reaches every active session.
        let route = try await ChildProcess.run(
            try Products.path("rouse"), ["agent", "route", "oldDeviceUnavailable", "--socket", harness.socketPath])
        #expect(route.status == 0, "\(route.stderr)")
        try await harness.waitForEvent("player", "session=chime event=routeChanged reason=oldDeviceUnavailable")
    }

    @Test func delayedRequestIsGrantedWhenTheCallEnds() async throws {
        let harness = try await AgentHarness {
            try AgentHarness.audioHandlers($0, ["phone": "report", "player": "report"])
        }
        try await harness.startHandler("player", foreground: true)
        try await harness.startHandler("phone")
        try harness.command("phone", "call c-1")
        try await harness.waitForEvent("phone", "session=call event=callActivated")
        #expect(try await harness.activate("player", "podcast playback") == "event=denied reason=insufficientPriority")
        #expect(try await harness.activate("player", "music playback delay") == "event=delayed")
        #expect(await harness.session("player", "music")?.state == .delayed)
        try harness.command("phone", "endcall c-1")
        try await harness.waitForEvent("player", "session=music event=granted")
        #expect(await harness.session("player", "music")?.state == .active)
    }

    @Test func duckingBeginsAndEnds() async throws {
        let harness = try await AgentHarness {
            try AgentHarness.audioHandlers($0, ["nav": "report", "player": "report"])
        }
        try await harness.startHandler("player", foreground: true)
        try await harness.startHandler("nav")
        #expect(try await harness.activate("player", "music playback") == "event=granted")
        // Mixable (duckOthers), so allowed from the background.
        #expect(
            try await harness.activate("nav", "guidance playback options=duckOthers role=navigation") == "event=granted"
        )
        try await harness.waitForEvent("player", "session=music event=duckBegan")
        #expect(await harness.session("player", "music")?.state == .ducked)
        try harness.command("nav", "deactivate guidance notify")
        try await harness.waitForEvent("player", "session=music event=duckEnded")
        #expect(await harness.session("player", "music")?.state == .active)
    }

    @Test func backgroundAudioKeepsAHandlerAwakeAndSuspensionInterruptsTheRest() async throws {
        let harness = try await AgentHarness(
            handlers: { try AgentHarness.audioHandlers($0, ["player": "report"], suspendAfter: .milliseconds(300)) },
            configure: { _, configuration in configuration.clock = AgentHarness.manualClock() })
        try await harness.startHandler("player", foreground: true)
        #expect(try await harness.activate("player", "music playback") == "event=granted")
        #expect(try await harness.activate("player", "chime ambient") == "event=granted")
        try harness.command("player", "state background")
        try await eventually("in the background, holding audio") {
            let status = await harness.handlerStatus("player")
            return status?.state == "background" && status?.holdsAudio == true
        }
        // Not suspended while it plays: three times the suspension delay (300 ms) pass without it.
        try await harness.advance(by: .milliseconds(900))
        #expect(await harness.handlerStatus("player")?.state == "background")
        // Once the background-capable session ends, it is suspended; the ambient one is interrupted first.
        try harness.command("player", "deactivate music")
        try await harness.waitAdvancingClock("suspended", by: .milliseconds(100)) {
            await harness.handlerStatus("player")?.state == "suspended"
        }
        let chime = await harness.session("player", "chime")
        #expect(chime?.state == .interrupted)
        #expect(chime?.interruptionReason == .appSuspended)
        // Woken by a push: the interruption ends (inactive: it must activate again).
        try await harness.push("player", type: "background")
        try await harness.waitForEvent("player", "session=chime event=interruptionBegan reason=appSuspended")
        try await harness.waitForEvent("player", "session=chime event=interruptionEnded shouldResume=false")
        #expect(await harness.session("player", "chime") == nil)
    }

    @Test func hookRunsOnGrantAndRevokeAndIsKilledAtItsDeadline() async throws {
        let harness = try await AgentHarness(
            handlers: { try AgentHarness.audioHandlers($0, ["player": "report"]) },
            configure: { directory, configuration in
                let script = directory + "/hook.sh"
                try """
                #!/bin/sh
                echo "$1 $ROUSE_SESSION role=$ROUSE_ROLE active=$ROUSE_ACTIVE_ROLES" >> \(directory)/hook.log
                if [ "$1" = grant ] && [ "$ROUSE_ROLE" = alert ]; then exec sleep 60; fi
                """.write(toFile: script, atomically: true, encoding: .utf8)
                chmod(script, 0o755)
                configuration.activationHook = [script]
                configuration.activationHookTimeout = .milliseconds(300)
            })
        let hookLog = { @Sendable () -> [String] in
            ((try? String(contentsOfFile: harness.directory + "/hook.log", encoding: .utf8)) ?? "")
                .split(separator: "\n").map(String.init)
        }
        try await harness.startHandler("player", foreground: true)
        #expect(try await harness.activate("player", "music playback") == "event=granted")
        try await eventually("grant hook") { hookLog() == ["grant player/music role=media active=media"] }
        // This run hangs: it is killed at 300 ms and the next one runs.
        #expect(try await harness.activate("player", "alarm playback role=alert") == "event=granted")
        try harness.command("player", "deactivate alarm notify")
        try await harness.waitForLine("player", "deactivated session=alarm")
        // Killed at its 300 ms deadline, the hanging hook lets the revoke run; not killed, it would hold the hooks for
        // its 60 s. The bound sits between the two, far from both (5 s was close to a loaded machine's 300 ms).
        let started = ContinuousClock.now
        try await eventually("revoke after the killed hook", timeout: .seconds(30)) {
            hookLog().contains("revoke player/alarm role=alert active=media")
        }
        #expect(ContinuousClock.now - started < .seconds(30))
        #expect(hookLog().contains("revoke player/music role=media active=alert"))
        #expect(hookLog().contains("grant player/alarm role=alert active=alert"))
        try await eventually("the resumed session's grant comes last") {
            hookLog().last == "grant player/music role=media active=media"
        }
    }
}

/// Every `interruptionBegan` followed by exactly one `interruptionEnded`, every `duckBegan` by one `duckEnded`,
/// per handler process and session, in the order the handler logged them. A begin may stay open only for a
/// process that is gone (nothing is sent to a dead holder).
struct PairingLedger {
    enum Verdict: Equatable {
        case balanced
        case open(String)
        case violated(String)
    }

    static func check(_ lines: [String], live: Set<Int32>? = nil) -> Verdict {
        var open: [String: Bool] = [:]  // "pid session kind" → begun
        var firstOpen: String?
        for line in lines where line.hasPrefix("activation ") {
            var fields: [String: String] = [:]
            for word in line.split(separator: " ").dropFirst() {
                let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
                if parts.count == 2 { fields[parts[0]] = parts[1] }
            }
            guard let session = fields["session"], let event = fields["event"], let pid = fields["pid"] else {
                return .violated("unparsable line: \(line)")
            }
            let kind: String
            let begins: Bool
            switch event {
            case "interruptionBegan": (kind, begins) = ("interruption", true)
            case "interruptionEnded": (kind, begins) = ("interruption", false)
            case "duckBegan": (kind, begins) = ("duck", true)
            case "duckEnded": (kind, begins) = ("duck", false)
            default: continue
            }
            let key = "\(pid) \(session) \(kind)"
            let isOpen = open[key] ?? false
            if begins == isOpen {
                return .violated(begins ? "second begin without an end: \(line)" : "end without a begin: \(line)")
            }
            open[key] = begins
        }
        firstOpen =
            open.filter { key, begun in
                guard begun else { return false }
                guard let live else { return true }
                return Int32(key.split(separator: " ")[0]).map(live.contains) ?? true
            }.keys.sorted().first
        return firstOpen.map { .open($0) } ?? .balanced
    }
}

@Suite(
    "rouse-agent activations: random sequences over real processes", .serialized, .stopsWhatItStarts,
    .timeLimit(.minutes(5)))
struct AgentActivationPropertyTests {
    static let seeds: [UInt64] =
        ProcessInfo.processInfo.environment["ROUSE_TEST_SEED"].flatMap(UInt64.init).map { [$0] }
        ?? Array(1...16)
    static let steps = 40

    @Test(arguments: seeds)
    func exactlyOneEndPerBeginUnderRandomActivateDeactivateCallAndKill(seed: UInt64) async throws {
        let names = ["a", "b", "c"]
        let harness = try await AgentHarness {
            try AgentHarness.audioHandlers($0, Dictionary(uniqueKeysWithValues: names.map { ($0, "report") }))
        }
        var random = SplitMix64(seed: seed)
        var foreground: Set<String> = ["a", "b"]
        var calls: [String: String] = [:]
        for name in names { try await harness.startHandler(name, foreground: foreground.contains(name)) }
        let configurations = [
            "playback", "ambient", "playback options=mixWithOthers", "playback options=duckOthers",
            "playAndRecord mode=voiceChat", "playback mode=spokenAudio",
        ]
        let roles = ["media", "notification", "navigation", "assistant", "alert", "ambient"]
        var trace: [String] = []
        for step in 0..<Self.steps {
            let name = names.randomElement(using: &random)!
            let session = ["s1", "s2"].randomElement(using: &random)!
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<45:
                let configuration = configurations.randomElement(using: &random)!
                let role = roles.randomElement(using: &random)!
                let delay = Bool.random(using: &random) ? " delay" : ""
                trace.append("\(step): \(name) activate \(session) \(configuration) role=\(role)\(delay)")
                _ = try await harness.activate(name, "\(session) \(configuration) role=\(role)\(delay)")
            case 45..<70:
                let notify = Bool.random(using: &random) ? " notify" : ""
                trace.append("\(step): \(name) deactivate \(session)\(notify)")
                let before = harness.lines(name, "deactivated session=\(session)").count
                try harness.command(name, "deactivate \(session)\(notify)")
                try await harness.waitForLine(name, "deactivated session=\(session)", count: before + 1)
            case 70..<85:
                if let call = calls.removeValue(forKey: name) {
                    let notify = Bool.random(using: &random) ? "" : " nonotify"
                    trace.append("\(step): \(name) endcall \(call)\(notify)")
                    let before = harness.lines(name, "ended call=").count
                    try harness.command(name, "endcall \(call)\(notify)")
                    try await harness.waitForLine(name, "ended call=", count: before + 1)
                } else {
                    let call = "c\(step)"
                    calls[name] = call
                    trace.append("\(step): \(name) call \(call)")
                    let before = harness.lines(name, "reported call=").count
                    try harness.command(name, "call \(call)")
                    try await harness.waitForLine(name, "reported call=", count: before + 1)
                }
            default:
                // Killed mid-whatever, then started again by the user (a new process, a new ledger key).
                trace.append("\(step): kill \(name)")
                let pid = try #require(await harness.handlerStatus(name)?.pid)
                kill(pid, SIGKILL)
                try await eventually("\(name) gone") { await harness.handlerStatus(name)?.state == "notRunning" }
                calls[name] = nil
                if Bool.random(using: &random) { foreground.insert(name) } else { foreground.remove(name) }
                try await harness.startHandler(name, foreground: foreground.contains(name))
            }
            let verdict = PairingLedger.check(names.flatMap { harness.log($0) })
            if case .violated(let why) = verdict {
                Issue.record("seed \(seed): \(why)\ntrace:\n\(trace.joined(separator: "\n"))")
                return
            }
        }
        // Everyone lets go: every begin must then have had its end.
        for name in names {
            for session in ["s1", "s2"] {
                let before = harness.lines(name, "deactivated session=\(session)").count
                try harness.command(name, "deactivate \(session) notify")
                try await harness.waitForLine(name, "deactivated session=\(session)", count: before + 1)
            }
            if let call = calls[name] {
                try harness.command(name, "endcall \(call)")
                try await harness.waitForLine(name, "ended call=\(call)")
            }
        }
        let finalTrace = trace.joined(separator: "\n")
        try await eventually("no session held") { await harness.agent.activationSnapshot().sessions.isEmpty }
        var pids: Set<Int32> = []
        for name in names {
            if let pid = await harness.handlerStatus(name)?.pid { pids.insert(pid) }
        }
        let live = pids
        try await eventually("every begin ended (seed \(seed))") {
            switch PairingLedger.check(names.flatMap { harness.log($0) }, live: live) {
            case .balanced: return true
            case .open: return false
            case .violated(let why):
                throw FixtureError("seed \(seed): \(why)\ntrace:\n\(finalTrace)")
            }
        }
        // The sequence did exercise pairing (not a vacuous pass).
        let begins = names.flatMap { harness.log($0) }.filter { $0.contains("event=interruptionBegan") }.count
        #expect(begins > 0, "seed \(seed) produced no interruption")
    }
}

@Suite("rouse-agent activations across an agent restart", .serialized, .stopsWhatItStarts, .timeLimit(.minutes(3)))
struct AgentActivationRestartTests {
    @Test func aSigkilledAgentComesBackWithTheActivationsOfItsReattachedHandlers() async throws {
        let rig = try await PreservationRig()
        defer { rig.tearDown() }
        let fifo = rig.directory + "/voip.fifo"
        guard mkfifo(fifo, 0o600) == 0 else { throw FixtureError("mkfifo: errno \(errno)") }
        try rig.handler(["--commands", fifo], suspendAfter: 60)
        func command(_ line: String) throws {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: fifo))
            defer { try? handle.close() }
            try handle.write(contentsOf: Data((line + "\n").utf8))
        }
        func sessions() async throws -> ActivationSnapshot {
            guard case .sessionsReply(let reply) = try await rig.admin(.sessions) else {
                throw FixtureError("sessions: no sessionsReply")
            }
            return try JSONDecoder().decode(ActivationSnapshot.self, from: Data(reply.detail.utf8))
        }
        let music = SessionID(handler: HandlerID("voip"), name: "music")

        let first = try await rig.agent(1)
        _ = try await rig.admin(.userControl(.init(handler: "voip", state: "started")))
        try await rig.waitForHandler("registered")
        try command("state active")
        try await eventually("active") { try await rig.status().handlers.first?.state == "active" }
        try command("activate music playback")
        try await rig.waitForHandler("answer session=music event=granted")
        // To the background, still playing: the agent preserves its own state (the activations with it).
        try command("state background")
        try await eventually("background, holding audio") {
            let handler = try await rig.status().handlers.first
            return handler?.state == "background" && handler?.holdsAudio == true
        }
        let pid = try await rig.handlerPID()
        // Killed after its launch counted as finished (two unfinished launches in a row discard the archive).
        try await rig.waitForAgentLine(1, "agent launch finished")
        PreservationRig.kill(first)

        let second = try await rig.agent(2)
        try await rig.waitForAgentLine(2, "re-attached to a running handler", ["handler": "voip", "pid": "\(pid)"])
        try await rig.waitForAgentLine(2, "activations restored", ["sessions": "1", "released": "0"])
        try await rig.waitForHandler("registered launchReason=reattached")
        let restored = try await sessions()
        #expect(restored.sessions.map(\.session) == [music])
        #expect(restored.sessions.first?.state == .active)
        #expect(restored.sessions.first?.configuration.category == .playback)
        #expect(try await rig.status().handlers.first?.holdsAudio == true)
        // The restored session is the handler's: it deactivates it as if nothing had happened.
        try command("deactivate music")
        try await rig.waitForHandler("deactivated session=music")
        #expect(try await sessions().sessions.isEmpty)

        // Again, but the holder dies while the agent is down: its session is released at the restart.
        try command("state active")
        try await eventually("active again") { try await rig.status().handlers.first?.state == "active" }
        try command("activate music playback")
        try await rig.waitForHandler("answer session=music event=granted", count: 2)
        try command("state background")
        try await eventually("background again") {
            try await rig.status().handlers.first?.state == "background"
        }
        try await rig.waitForAgentLine(2, "agent launch finished")
        PreservationRig.kill(second)
        Glibc.kill(pid, SIGKILL)
        let third = try await rig.agent(3)
        defer { PreservationRig.kill(third) }
        try await rig.waitForAgentLine(3, "activations restored", ["sessions": "0", "released": "1"])
        #expect(try await sessions().sessions.isEmpty)
        withExtendedLifetime(first) {}
    }
}
