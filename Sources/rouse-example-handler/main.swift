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

let arguments = CommandLine.arguments
func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let mode = option("--mode") ?? "report"
let logPath = option("--log")
let name = option("--handler") ?? ProcessInfo.processInfo.environment["ROUSE_HANDLER"] ?? "example"
let socketPath = option("--socket")

func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
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
    try client.register(handler: name)
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
