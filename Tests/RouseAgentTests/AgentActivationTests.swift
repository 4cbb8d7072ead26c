import Foundation
import Glibc
import RouseActivation
import RouseAgent
import RouseAgentClient
import RouseTestSupport
import Testing

extension AgentHarness {
    /// Handlers running the example handler with a command pipe (`<directory>/<name>.fifo`), by name → mode.
    static func audioHandlers(
        _ directory: String, _ modes: [String: String], configure: (inout HandlerRules) -> Void = { _ in }
    ) throws -> [HandlerConfiguration] {
        try modes.keys.sorted().map { name in
            let fifo = "\(directory)/\(name).fifo"
            guard mkfifo(fifo, 0o600) == 0 else { throw FixtureError("mkfifo \(fifo): errno \(errno)") }
            return try handler(
                name, mode: modes[name]!, directory: directory, arguments: ["--commands", fifo], configure: configure)
        }
    }

    /// The user starts handler `name`; waits until it registered (and, with `foreground`, declared itself active).
    func startHandler(_ name: String, foreground: Bool = false) async throws {
        let registrations = lines(name, "registered").count
        try await admin(.userControl, handler: name, state: "started")
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

@Suite("rouse-agent activations with real handler processes", .serialized, .timeLimit(.minutes(3)))
struct AgentActivationTests {
    @Test func incomingCallInterruptsMediaWhichResumesWhenTheCallEndsWithNotify() async throws {
        let harness = try await AgentHarness {
            try AgentHarness.audioHandlers($0, ["phone": "keepcall", "player": "report"])
        }
        defer { Task { await harness.stop() } }
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

    @Test func callEndedWithoutNotifyDoesNotResumeTheInterruptedSession() async throws {
        let harness = try await AgentHarness {
            try AgentHarness.audioHandlers($0, ["phone": "report", "player": "report"])
        }
        defer { Task { await harness.stop() } }
        try await harness.startHandler("player", foreground: true)
        try await harness.startHandler("phone")
        #expect(try await harness.activate("player", "music playback") == "event=granted")
        try harness.command("phone", "call out-1")
        try await harness.waitForEvent("phone", "session=call event=callActivated")
        try await harness.waitForEvent("player", "session=music event=interruptionBegan reason=preempted")
        try harness.command("phone", "endcall out-1 nonotify")
        try await harness.waitForEvent("player", "session=music event=interruptionEnded shouldResume=false")
        #expect(await harness.session("player", "music") == nil)
        // It must activate again to play.
        #expect(try await harness.activate("player", "music playback") == "event=granted")
    }

    @Test func killedHolderReleasesItsCallAndTheOthersAreTold() async throws {
        let harness = try await AgentHarness {
            try AgentHarness.audioHandlers($0, ["phone": "report", "player": "report"])
        }
        defer { Task { await harness.stop() } }
        try await harness.startHandler("player", foreground: true)
        try await harness.startHandler("phone")
        #expect(try await harness.activate("player", "music playback") == "event=granted")
        try harness.command("phone", "call c-1")
        try await harness.waitForEvent("player", "session=music event=interruptionBegan reason=preempted")
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
        defer { Task { await harness.stop() } }
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
        let sessions = await harness.agent.activationSnapshot().sessions
        #expect(sessions.map(\.session.name) == ["chime"])
    }

    @Test func delayedRequestIsGrantedWhenTheCallEnds() async throws {
        let harness = try await AgentHarness {
            try AgentHarness.audioHandlers($0, ["phone": "report", "player": "report"])
        }
        defer { Task { await harness.stop() } }
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
        defer { Task { await harness.stop() } }
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
        let harness = try await AgentHarness { try AgentHarness.audioHandlers($0, ["player": "report"]) }
        defer { Task { await harness.stop() } }
        try await harness.startHandler("player", foreground: true)
        #expect(try await harness.activate("player", "music playback") == "event=granted")
        #expect(try await harness.activate("player", "chime ambient") == "event=granted")
        try harness.command("player", "state background")
        try await eventually("in the background, holding audio") {
            let status = await harness.handlerStatus("player")
            return status?.state == "background" && status?.holdsAudio == true
        }
        // Not suspended while it plays: three times the suspension delay (300 ms) pass without it.
        try await Task.sleep(for: .milliseconds(900))
        #expect(await harness.handlerStatus("player")?.state == "background")
        // Once the background-capable session ends, it is suspended; the ambient one is interrupted first.
        try harness.command("player", "deactivate music")
        try await eventually("suspended") { await harness.handlerStatus("player")?.state == "suspended" }
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
        defer { Task { await harness.stop() } }
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
        let started = ContinuousClock.now
        try await eventually("revoke after the killed hook", timeout: .seconds(5)) {
            hookLog().contains("revoke player/alarm role=alert active=media")
        }
        #expect(ContinuousClock.now - started < .seconds(5))
        #expect(hookLog().contains("revoke player/music role=media active=alert"))
        #expect(hookLog().contains("grant player/alarm role=alert active=alert"))
        try await eventually("the resumed session's grant comes last") {
            hookLog().last == "grant player/music role=media active=media"
        }
    }
}
