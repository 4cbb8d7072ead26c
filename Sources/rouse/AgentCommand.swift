import ArgumentParser
import FoundationEssentials
import RouseActivation
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import RouseText

/// `rouse agent …`: set up a device (`enroll`, `handlers`) and talk to a running `rouse-agent` over its IPC socket.
struct AgentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agent", abstract: "Set up a device, then inspect and steer a running rouse-agent.",
        subcommands: [
            Enroll.self, Handlers.self, Status.self, Sessions.self, Route.self, Reregister.self, Start.self, Stop.self,
            RotateKey.self, Transfers.self,
        ])

    struct SocketOption: ParsableArguments {
        @Option(help: "The agent's IPC socket.") var socket = AgentClient.defaultSocketPath
    }

    /// Sends one admin request and waits (5 s at most) for the answer.
    static func request(_ message: AgentRequest, socket: String) async throws -> AgentEvent {
        let client = try AgentClient(socketPath: socket)
        defer { client.close() }
        try client.send(message)
        let answer = try await withThrowingTaskGroup(of: AgentEvent?.self) { group in
            group.addTask {
                for await reply in client.messages { return reply }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: .seconds(5))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        guard let answer else { throw ValidationError("no answer from the agent at \(socket)") }
        if case .error(let failure) = answer { throw ValidationError("agent: \(failure.code): \(failure.detail)") }
        return answer
    }

    /// Sends `message` and prints `ok` once the agent accepted it.
    static func expectOK(_ message: AgentRequest, socket: String) async throws {
        _ = try await request(message, socket: socket)
        print("ok")
    }

    /// Asks the agent for a document (`status`, `transfers`): with `json`, or when it is no JSON object, prints it as
    /// it came and returns nil; otherwise returns the object for the command to render.
    static func document(_ message: AgentRequest, socket: String, json: Bool) async throws -> JSONValue? {
        let answer = try await request(message, socket: socket)
        guard case .statusReply(let reply) = answer else { throw unexpected(answer) }
        let text = reply.detail
        guard !json, let object = JSONValue(parsing: text), object.object != nil else {
            print(text)
            return nil
        }
        return object
    }

    /// An answer that is not the one the request asks for.
    static func unexpected(_ answer: AgentEvent) -> ValidationError {
        ValidationError("the agent answered with \(answer.type)")
    }

    /// `rouse agent status [--json]`.
    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Channel state, gateway reachability, handlers with state, strikes, budgets, held pushes.")
        @OptionGroup var options: SocketOption
        @Flag(help: "Print the status document as JSON.") var json = false

        func run() async throws {
            let answer = try await AgentCommand.request(.status, socket: options.socket)
            guard case .statusReply(let reply) = answer else { throw AgentCommand.unexpected(answer) }
            // With --json, or a document this version cannot read, the document as it came.
            guard !json, let status = try? JSONDecoder().decode(AgentStatus.self, from: Data(reply.detail.utf8)) else {
                print(reply.detail)
                return
            }
            for line in Self.render(status) { print(line) }
        }

        /// The status as lines for a person (numbers as JSON writes them: `3`, not `3.0`).
        static func render(_ status: AgentStatus) -> [String] {
            var lines: [String] = []
            lines.append("channel: \(status.channel)  gateway reachable: \(status.gatewayReachable ? "yes" : "no")")
            lines.append(
                "device: \(status.deviceID ?? "-")  suspend: \(status.suspendMechanism)"
                    + "  limits: \(status.limits ?? "-")")
            if let session = status.session {
                let battery = session.onBattery.map { $0 ? "battery" : "AC" } ?? "-"
                let level = session.batteryPercentage.map { " " + NumberText.fixed($0, digits: 0) + "%" } ?? ""
                lines.append(
                    "session: \(session.lock ?? "-")  power: \(battery)\(level)  expensive: "
                        + "\(session.expensive ? "yes" : "no")  held pushes: \(session.heldPushes)"
                        + (session.lowPower ? "  fetch: waits (low battery)" : ""))
            }
            if let notifications = status.notifications {
                lines.append(
                    "notifications: server \(notifications.serverFollowed ? "followed" : "-")  shown: "
                        + "\(notifications.shown)  pending local: \(notifications.pendingLocal)  forgotten over limit: "
                        + "\(notifications.forgottenOverLimit)  fallbacks: \(notifications.fallbacks)")
            }
            if let memory = status.memory {
                lines.append(
                    "memory: \(memory.source ?? "not watched")  pressure: \(memory.underPressure ? "yes" : "no")"
                        + "  warnings: \(memory.warningsSent)  terminated: \(memory.terminatedSuspended) suspended, "
                        + "\(memory.terminatedRunning) background")
            }
            for handler in status.handlers {
                var line = "handler \(handler.name): \(handler.state)"
                line += " strikes=\(handler.strikes)"
                if handler.voipBlocked { line += " VOIP-BLOCKED" }
                if handler.userStopped { line += " user-stopped" }
                if let budget = handler.budgetRemainingSeconds {
                    line += " budget=" + NumberText.fixed(budget, digits: 1) + "s"
                }
                line += " tokens=\(number(handler.backgroundTokens))"
                if let bytes = handler.memoryBytes {
                    line += " memory=" + NumberText.fixed(Double(bytes) / 1_048_576, digits: 1) + "MiB"
                }
                if let held = handler.heldPush { line += " held=\(held)" }
                if handler.holdsAudio { line += " holds-audio" }
                if let sockets = handler.listeningSockets, !sockets.isEmpty {
                    line +=
                        " listening="
                        + sockets.map { $0.replacingAll(" ", with: ":") }.joined(separator: ",")
                }
                if !handler.tasks.isEmpty { line += " tasks=\(handler.tasks.joined(separator: ","))" }
                if let fetch = handler.fetch {
                    let next = fetch.nextInSeconds.map { NumberText.fixed($0, digits: 0) + "s" } ?? "offline"
                    let history = fetch.history.map(\.outcome.rawValue)
                    line += " fetch-next=\(next) factor=\(number(fetch.factor))"
                    if !history.isEmpty { line += " fetch-history=\(history.joined(separator: ","))" }
                }
                lines.append(line)
            }
            return lines
        }

        /// A number as the JSON document has it: whole numbers without a fraction.
        static func number(_ value: Double) -> String {
            if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
            return "\(value)"
        }
    }

    /// `rouse agent transfers [--json]`: background-transfer sessions and tasks with progress.
    struct Transfers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "transfers",
            abstract: "Background transfers: each handler's sessions and tasks with progress, spool use, counters.")
        @OptionGroup var options: SocketOption
        @Flag(help: "Print the document as JSON.") var json = false

        func run() async throws {
            guard let object = try await AgentCommand.document(.transfers, socket: options.socket, json: json) else {
                return
            }
            func text(_ value: JSONValue?, _ absent: String) -> String { value?.plainText ?? absent }
            let usable = object["networkUsable"]?.bool.map { $0 ? "yes" : "no" } ?? "-"
            print("network usable: \(usable)  running: \(text(object["running"], "0"))")
            for task in object["tasks"]?.array ?? [] where task.object != nil {
                var line = "\(text(task["handler"], "-"))/\(text(task["session"], "-")) task \(text(task["id"], "-")): "
                line += "\(text(task["kind"], "-")) \(text(task["state"], "-")) \(text(task["bytes"], "0"))"
                if let total = task["total"] { line += "/\(total.plainText)" }
                line += " bytes"
                if let status = task["status"] { line += " status=\(status.plainText)" }
                if let error = task["error"] { line += " error=\(error.plainText)" }
                print(line + " \(text(task["url"], ""))")
            }
            for (handler, bytes) in (object["spoolBytes"]?.object ?? [:]).sorted(by: { $0.key < $1.key }) {
                print("spool \(handler): \(bytes.plainText) bytes")
            }
            for (name, count) in (object["metrics"]?.object ?? [:]).sorted(by: { $0.key < $1.key }) {
                print("counter \(name): \(count.plainText)")
            }
        }
    }

    /// `rouse agent sessions [--json]`: the activation arbiter's snapshot.
    struct Sessions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sessions",
            abstract: "Audio sessions: who holds what (active, ducked, interrupted), who waits, who may be suspended.")
        @OptionGroup var options: SocketOption
        @Flag(help: "Print the snapshot as JSON.") var json = false

        func run() async throws {
            let answer = try await AgentCommand.request(.sessions, socket: options.socket)
            guard case .sessionsReply(let reply) = answer else { throw AgentCommand.unexpected(answer) }
            let text = reply.detail
            if json {
                print(text)
                return
            }
            let snapshot: ActivationSnapshot
            do {
                snapshot = try JSONDecoder().decode(ActivationSnapshot.self, from: Data(text.utf8))
            } catch {
                throw ValidationError("the agent's sessions document does not parse: \(error)")
            }
            print(snapshot.sessions.isEmpty && snapshot.handlers.isEmpty ? "no sessions" : snapshot.text)
        }
    }

    /// `rouse agent route REASON`: an external route source reports a route change.
    struct Route: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "route",
            abstract: "Report an audio route change (e.g. oldDeviceUnavailable); forwarded to every active session.")
        @OptionGroup var options: SocketOption
        @Argument(help: "newDeviceAvailable, oldDeviceUnavailable, categoryChange, override, wakeFromSleep, …")
        var reason: String
        func run() async throws {
            try await AgentCommand.expectOK(.routeChanged(.init(reason: reason)), socket: options.socket)
        }
    }

    /// `rouse agent reregister HANDLER`: clears strikes (VoIP launches resume).
    struct Reregister: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reregister", abstract: "Register a handler again (clears strikes).")
        @OptionGroup var options: SocketOption
        @Argument var handler: String
        func run() async throws {
            try await AgentCommand.expectOK(.reregister(.init(handler: handler)), socket: options.socket)
        }
    }

    /// `rouse agent start HANDLER`: the user starts it (held background push delivered).
    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "start", abstract: "Start a handler as the user would.")
        @OptionGroup var options: SocketOption
        @Argument var handler: String
        func run() async throws {
            try await AgentCommand.expectOK(
                .userControl(.init(handler: handler, state: "started")), socket: options.socket)
        }
    }

    /// `rouse agent stop HANDLER`: the user force-quits it.
    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stop", abstract: "Stop a handler as the user would (force quit).")
        @OptionGroup var options: SocketOption
        @Argument var handler: String
        func run() async throws {
            try await AgentCommand.expectOK(
                .userControl(.init(handler: handler, state: "stopped")), socket: options.socket)
        }
    }
}
