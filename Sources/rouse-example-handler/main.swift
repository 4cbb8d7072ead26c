import Foundation
import RouseAgentClient

// An example handler: registers, reports a call for every VoIP push that must be reported, completes
// background pushes, and writes one line per event to stdout (and to `--log FILE` when given), e.g.
//   registered launchReason=voipPush
//   push id=3 type=voip mustReport=true payload={"call":"alice"} latencyMs=1.2
//   reported id=3 call=call-3
// Modes (`--mode`): report (default), ignore (never reports: the agent kills it), foreground (declares
// itself active first), keepcall (reports but never ends its calls), complete (completes background pushes with newData), overrun (never completes),
// task (begins a background task and ends it on the expiration notice), leak (begins one and never ends it).
// State preservation (`--preserve`): opts in; preserves `calls/<id>/ui` for its last call (with `calls` and
// `calls/<id>`) and `settings/editor` after each call and when asked; at launch it restores what it is
// offered unless the writer version is not `--version` (default example/1); `--refuse` refuses,
// `--fail-restore-at PATH` fails there, `--crash-on-restoration` exits before answering (a crashed launch).
// `--bad-preserve`: after a call, sends two malformed preserves instead (tests).
// `--ignore-payload TEXT`: VoIP pushes whose payload contains TEXT are not reported (a strike).

let arguments = CommandLine.arguments
func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let mode = option("--mode") ?? "report"
let logPath = option("--log")
let name = option("--handler") ?? ProcessInfo.processInfo.environment["ROUSE_HANDLER"] ?? "example"
let socketPath = option("--socket")
let preserves = arguments.contains("--preserve")
let stateVersion = option("--version") ?? "example/1"
var lastCall: String?

/// The pieces this handler preserves: its last call's UI under `calls/<id>/ui`, its editor settings.
@MainActor func pieces() -> [String: [UInt8]] {
    if let count = option("--bench-pieces").flatMap(Int.init), let size = option("--piece-bytes").flatMap(Int.init) {
        // `bench/call-<i>` pieces of `size` random bytes under an empty `bench` (rouse-bench state --agent).
        var pieces: [String: [UInt8]] = ["bench": []]
        for i in 0..<count {
            pieces["bench/call-\(i)"] = (0..<size).map { _ in UInt8.random(in: 0...255) }
        }
        return pieces
    }
    var pieces: [String: [UInt8]] = ["settings": [], "settings/editor": Array("font=mono".utf8)]
    if let lastCall {
        pieces["calls"] = []
        pieces["calls/\(lastCall)"] = []
        pieces["calls/\(lastCall)/ui"] = Array("ui of \(lastCall)".utf8)
    }
    return pieces
}

struct RestoreFailure: Error {}

// It may outlive the agent whose stdout it shares (re-attached by the next agent): no SIGPIPE death.
signal(SIGPIPE, SIG_IGN)

func emit(_ line: String) {
    if arguments.contains("--quiet") { return }
    try? FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
    guard let logPath else { return }
    if let handle = FileHandle(forWritingAtPath: logPath)
        ?? {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
            return FileHandle(forWritingAtPath: logPath)
        }()
    {
        handle.seekToEndOfFile()
        handle.write(Data("\(line) pid=\(getpid())\n".utf8))
        try? handle.close()
    }
}

do {
    let client = try AgentClient(socketPath: socketPath)
    try client.register(handler: name, preservesState: preserves)
    if mode == "foreground" { try client.setState("active") }
    if mode == "task" || mode == "leak" { try client.beginTask(name: "upload") }
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
            let ignored = option("--ignore-payload").map { payload.contains($0) } ?? false
            if message.pushType == "voip", message.mustReport == true, mode != "ignore", !ignored {
                try client.reportCall(pushID: id, callID: "call-\(id)")
                emit("reported id=\(id) call=call-\(id)")
                if mode != "keepcall" { try client.callEnded(callID: "call-\(id)") }
                lastCall = "call-\(id)"
                if arguments.contains("--bad-preserve") {
                    // Malformed on purpose: a path with "..", then data that is not base64.
                    try client.preserve(pieces: ["calls/../ui": []], version: stateVersion)
                    var message = AgentMessage(type: .preserve)
                    message.pieces = ["settings": "not base64!"]
                    message.version = stateVersion
                    try client.send(message)
                } else if preserves {
                    try client.preserve(pieces: pieces(), version: stateVersion)
                }
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
        case .reachability:
            emit("reachability reachable=\(message.reachable ?? false)")
        case .restoration:
            guard let offer = OfferedRestoration(message) else {
                emit("restoration malformed")
                continue
            }
            emit("restoration offered pieces=\(offer.pieces.count) version=\(offer.writerVersion)")
            if arguments.contains("--crash-on-restoration") {
                emit("crashing")
                exit(3)
            }
            if arguments.contains("--refuse") || offer.writerVersion != stateVersion {
                try client.refuseRestoration()
                emit("restoration refused version=\(offer.writerVersion)")
                continue
            }
            let failAt = option("--fail-restore-at")
            if option("--bench-pieces") != nil {
                try client.restore(offer, identify: { $0 }, apply: { _, _ in })
                continue
            }
            // `--forget-calls`: its calls are gone (e.g. ended elsewhere): their identifiers map to nothing.
            let forgetCalls = arguments.contains("--forget-calls")
            let result = try client.restore(
                offer, identify: { path in forgetCalls && path.hasPrefix("calls") ? nil : path },
                apply: { path, data in
                    if path == failAt { throw RestoreFailure() }
                    if path.hasPrefix("calls/"), path.hasSuffix("/ui") {
                        lastCall = path.split(separator: "/")[1].description
                    }
                    emit("restored path=\(path) data=\(String(decoding: data, as: UTF8.self))")
                })
            emit(
                "restoration done restored=\(result.restored.count) skipped=\(result.skipped.count) "
                    + "failedAt=\(result.failedAt ?? "-")")
        case .preserveRequest:
            emit("preserveRequest reason=\(message.state ?? "-")")
            try client.preserve(pieces: pieces(), version: stateVersion)
        case .preserved:
            emit("preserved \(message.detail ?? "")")
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
