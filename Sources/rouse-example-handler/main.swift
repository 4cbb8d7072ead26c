import Foundation
import RouseActivation
import RouseAgentClient

// An example handler: registers, reports a call for every VoIP push that must be reported, completes
// background pushes, and writes one line per event to stdout (and to `--log FILE` when given), e.g.
//   registered launchReason=voipPush
//   push id=3 type=voip mustReport=true payload={"call":"alice"} latencyMs=1.2
//   reported id=3 call=call-3
// Modes (`--mode`): report (default), ignore (never reports: the agent kills it), foreground (declares
// itself active first), keepcall (reports but never ends its calls), complete (completes background pushes with newData), overrun (never completes),
// task (begins a background task and ends it on the expiration notice), leak (begins one and never ends it).
//
// `--quiet`: nothing on stdout (the log file only).
//
// Audio activations: every `activation` event is written as
//   activation session=music event=interruptionBegan reason=preempted
// and `--commands FIFO` makes the handler take one command per line from a named pipe (tests, demos):
//   state active|background
//   activate SESSION CATEGORY [mode=M] [options=a,b] [role=R] [delay]   → answer session=S event=granted|denied|delayed
//   deactivate SESSION [notify]                                         → deactivated session=S
//   call CALLID [push=PUSHID]            (reportCall: the call session is activated)
//   endcall CALLID [nonotify]

let arguments = CommandLine.arguments
func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let mode = option("--mode") ?? "report"
let logPath = option("--log")
let name = option("--handler") ?? ProcessInfo.processInfo.environment["ROUSE_HANDLER"] ?? "example"
let socketPath = option("--socket")
let commandsPath = option("--commands")
let quiet = arguments.contains("--quiet")

/// The log, opened once in append mode: each line is one write(2), so lines written at the same time by the
/// message loop and the command task never overwrite each other.
let logFD: Int32 = logPath.map { open($0, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644) } ?? -1

func emit(_ line: String) {
    if !quiet { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    guard logFD >= 0 else { return }
    let bytes = Array("\(line) pid=\(getpid())\n".utf8)
    _ = bytes.withUnsafeBytes { write(logFD, $0.baseAddress, $0.count) }
}

do {
    let client = try AgentClient(socketPath: socketPath)
    try client.register(handler: name)
    if mode == "foreground" { try client.setState("active") }
    if mode == "task" || mode == "leak" { try client.beginTask(name: "upload") }
    if let commandsPath { try readCommands(commandsPath, client: client) }
    for await message in client.messages {
        switch message.kind {
        case .registered:
            emit("registered launchReason=\(message.launchReason ?? "-") uid=\(getuid()) gid=\(getgid())")
        case .credentials:
            emit("credentials topic=\(message.topic ?? "-") token=\(message.token ?? "-")")
        case .push:
            let payload = Data(base64Encoded: message.payload ?? "").map { String(decoding: $0, as: UTF8.self) } ?? ""
            var latency = ""
            if let object = try? JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any],
                let sent = object["sentAt"] as? Double
            {
                latency = String(format: " latencyMs=%.3f", Date().timeIntervalSince1970 * 1000 - sent)
            }
            let id = message.pushID ?? "-"
            emit(
                "push id=\(id) type=\(message.pushType ?? "-") mustReport=\(message.mustReport.map { "\($0)" } ?? "-") "
                    + "payload=\(payload)\(latency)")
            if message.pushType == "voip", message.mustReport == true, mode != "ignore" {
                try client.reportCall(pushID: id, callID: "call-\(id)")
                emit("reported id=\(id) call=call-\(id)")
                if mode != "keepcall" { try client.callEnded(callID: "call-\(id)") }
            }
            if message.pushType == "background", mode != "overrun" {
                try client.complete(pushID: id, result: .newData)
                emit("completed id=\(id) result=newData")
            }
        case .taskBegun:
            emit("taskBegun id=\(message.taskID ?? -1) name=\(message.taskName ?? "-")")
        case .taskExpiring:
            emit("taskExpiring id=\(message.taskID ?? -1) seconds=\(message.seconds ?? 0)")
            if mode == "task", let id = message.taskID {
                try client.endTask(id: id)
                emit("taskEnded id=\(id)")
            }
        case .lifecycle:
            emit("lifecycle state=\(message.state ?? "-")")
        case .activation:
            emit("activation " + describe(message))
        case .reachability:
            emit("reachability reachable=\(message.reachable ?? false)")
        case .error:
            emit("error \(message.error ?? "-"): \(message.detail ?? "")")
        default:
            emit("message type=\(message.type)")
        }
    }
    emit("disconnected")
} catch {
    emit("failed \(error)")
    exit(1)
}

/// `session=… event=… [reason=…] [shouldResume=…]`.
func describe(_ message: AgentMessage) -> String {
    var text = "session=\(message.session ?? "-") event=\(message.event ?? "-")"
    if let reason = message.reason { text += " reason=\(reason)" }
    if let shouldResume = message.shouldResume { text += " shouldResume=\(shouldResume)" }
    return text
}

/// Reads commands (one per line) from the named pipe at `path`, opened read-write so that writers come and go
/// without an end of file, and runs each in order.
func readCommands(_ path: String, client: AgentClient) throws {
    guard let handle = FileHandle(forUpdatingAtPath: path) else {
        throw AgentRequestError(code: "commands", detail: "cannot open \(path)")
    }
    let lines = AsyncStream<String>.makeStream()
    let thread = Thread {
        var buffer = Data()
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                lines.continuation.yield(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                buffer = Data(buffer[buffer.index(after: newline)...])
            }
        }
        lines.continuation.finish()
    }
    thread.start()
    Task {
        for await line in lines.stream {
            do {
                try await run(line.split(separator: " ").map(String.init), client: client)
            } catch {
                emit("commandFailed \(line): \(error)")
            }
        }
    }
}

func run(_ words: [String], client: AgentClient) async throws {
    guard let command = words.first else { return }
    var named: [String: String] = [:]
    for word in words.dropFirst() {
        let parts = word.split(separator: "=", maxSplits: 1).map(String.init)
        named[parts[0]] = parts.count == 2 ? parts[1] : ""
    }
    switch command {
    case "state":
        try client.setState(words[1])
    case "activate":
        var message = AgentMessage(type: .activate)
        message.session = words[1]
        message.category = words[2]
        message.mode = named["mode"]
        message.options = named["options"].map { $0.split(separator: ",").map(String.init) }
        message.role = named["role"]
        message.acceptsDelay = named["delay"] != nil
        // The raw request, so that a test can send what the typed API would refuse to build.
        do {
            let answer = try await client.request(message)
            emit("answer " + describe(answer))
        } catch let error as AgentRequestError {
            emit("answer session=\(words[1]) error=\(error.code)")
        }
    case "deactivate":
        try await client.deactivate(session: words[1], notifyOthers: named["notify"] != nil)
        emit("deactivated session=\(words[1])")
    case "call":
        try client.reportCall(pushID: named["push"], callID: words[1])
        emit("reported call=\(words[1])")
    case "endcall":
        try client.callEnded(callID: words[1], notifyOthers: named["nonotify"] == nil)
        emit("ended call=\(words[1])")
    default:
        emit("commandFailed unknown command \(command)")
    }
}
