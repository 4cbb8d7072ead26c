import Glibc
import RouseActivation
import RouseAgentClient
import RouseText
import RouseWire

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
// State preservation (`--preserve`): opts in; preserves `calls/<id>/ui` for its last call (with `calls` and
// `calls/<id>`) and `settings/editor` after each call and when asked; at launch it restores what it is
// offered unless the writer version is not `--version` (default example/1); `--refuse` refuses,
// `--fail-restore-at PATH` fails there, `--crash-on-restoration` exits before answering (a crashed launch).
// `--restoration-finished`: sends restorationFinished once it restored; `--crash-after-restoration` then exits (4).
// Termination (docs/handler-protocol.md, "willTerminate"): exits at once on `willTerminate` (`--terminate-marker FILE`
// written first), unless `--ignore-terminate`. `timeChanged` is written as `timeChanged clockStep=B timeZone=B`.
// `--bad-preserve`: after a call, sends two malformed preserves instead (tests).
// `--ignore-payload TEXT`: VoIP pushes whose payload contains TEXT are not reported (a strike).
// `--exit-unanswered-once FILE [--exit-status N]`: exits (N, default 0) on the first VoIP push owed a report without
// answering it, once (FILE marks that it did): the agent hands it again after a clean exit, not after a crash.
// Background transfers (docs/agent.md): `--transfer-session NAME` reattaches session NAME at start (a handler
// relaunched with `backgroundTransfer` gets its results); commands
//   session NAME                      → session name=NAME tasks=N
//   download SESSION URL [discretionary=1] → added task=ID kind=download state=S (or addFailed error=CODE)
//   upload SESSION URL FILE [method=M]  the file passed as a descriptor; uploadbytes SESSION URL TEXT: as bytes
//   cancel SESSION ID                 → cancelled task=ID state=S
// and each task event is written as `transfer task=ID state=S bytes=N [status=C] [error=E] [file=SIZE:FNV]` (the
// file's size and FNV-1a hash read from the descriptor the agent passed; `--transfer-detail`: ` detail=D` after the
// error); `sessionDone session=S` is answered with
// transfersHandled (`handled session=S`) unless `--keep-transfers-unhandled`.
// A background push whose payload has `"download": URL` adds that download to the `--transfer-session` session
// (push-initiated download); `--exit-after-push`: the handler exits once it completed a background push.
// Background fetch: each `fetch` event is written as `fetch id=ID` and completed with `--fetch-result R` (newData,
// noData, failed; default noData; `none`: never completed): `fetched id=ID result=R`.
// Socket-woken VoIP (docs/voip-sockets.md): `--voip-connect HOST:PORT` connects a TCP signalling connection after
// registering (unless launched for `voipSocket`/`keepAlive`: then the agent hands it back) and gives it to the agent
// (`voipSocket id=N kind=K [returned=true]`); each `voipSocketWake` reads what waits on the sockets and writes
//   wake id=W sockets=1 mustReport=true data=TEXT
// then reports a call for data starting with INVITE (`reported wake=W`, answering `SIP/2.0 200 OK` on the socket)
// or answers voipWakeHandled (`handled wake=W`); in mode ignore it does neither (a strike).
// `--voip-connect udp:HOST:PORT`: a connected UDP socket instead. Commands: `voipconnect [udp:]HOST:PORT` (another
// connection), `voipoffer pipe|listen|unconnected` (what the agent must refuse: `voipFailed error=CODE detail=…`).
// `--keep-alive SECONDS` asks for keep-alives (`keepAliveSet` or `keepAliveFailed error=CODE`); each is written as
// `keepAlive id=K seconds=S`, answered with keepAliveDone when `--keep-alive-done` (`keepAliveDone id=K`).

let arguments = CommandLine.arguments

/// `--describe`: the descriptors open at start (read before this program opens any) and the names of the
/// environment variables, written as `fds 0 1 2 3` and `environment HOME PATH …` after `registered` (tests).
let startDescriptors: [Int32] = arguments.contains("--describe") ? openDescriptors() : []

func openDescriptors() -> [Int32] {
    guard let directory = opendir("/proc/self/fd") else { return [] }
    defer { closedir(directory) }
    let own = dirfd(directory)
    var result: [Int32] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if let fd = Int32(name), fd != own { result.append(fd) }
    }
    return result.sorted()
}
func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let mode = option("--mode") ?? "report"
let logPath = option("--log")
/// The environment variable `key`, if set.
func environment(_ key: String) -> String? { getenv(key).map { String(cString: $0) } }

/// The names of every environment variable.
func environmentNames() -> [String] {
    var names: [String] = []
    var entry = environ
    while let pointer = entry.pointee {
        names.append(String(String(cString: pointer).prefix { $0 != "=" }))
        entry += 1
    }
    return names
}

/// Creates (or empties) the file `path` with `bytes` in it.
func createFile(_ path: String, _ bytes: [UInt8] = []) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else { return }
    writeAll(fd, bytes)
    close(fd)
}

/// Milliseconds since 1970 (`CLOCK_REALTIME`).
func wallMilliseconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Double(now.tv_sec) * 1000 + Double(now.tv_nsec) / 1_000_000
}

let name = option("--handler") ?? environment("ROUSE_HANDLER") ?? "example"
let socketPath = option("--socket")
let commandsPath = option("--commands")
let quiet = arguments.contains("--quiet")

/// The log, opened once in append mode: each line is one write(2), so lines written at the same time by the
/// message loop and the command task never overwrite each other.
let logFD: Int32 = logPath.map { open($0, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644) } ?? -1

/// Writes all of `bytes` to `fd` (short writes and EINTR retried; other errors drop the rest, as a log does).
func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { buffer -> Int in
            guard let base = buffer.baseAddress else { return 0 }
            return write(fd, base + offset, buffer.count - offset)
        }
        if written < 0 && errno == EINTR { continue }
        guard written > 0 else { return }
        offset += written
    }
}

/// The members of a push payload or a status reply this handler reads (RouseText's JSONCoding: the handler links no
/// Foundation at all; docs/benchmarks.md, "Footprint").
struct PayloadFields: Decodable {
    var sentAt: Double?
    var download: String?
}
struct StatusFields: Decodable {
    struct Handler: Decodable { var name: String? }
    var handlers: [Handler]?
    var deviceID: String?
}

/// `value` with three decimals ("%.3f").
func threeDecimals(_ value: Double) -> String {
    let thousandths = Int((abs(value) * 1000).rounded())
    let fraction = String(thousandths % 1000)
    return (value < 0 && thousandths > 0 ? "-" : "") + "\(thousandths / 1000)."
        + String(repeating: "0", count: 3 - fraction.count) + fraction
}

func emit(_ line: String) {
    if !quiet { writeAll(1, Array((line + "\n").utf8)) }
    guard logFD >= 0 else { return }
    let bytes = Array("\(line) pid=\(getpid())\n".utf8)
    _ = bytes.withUnsafeBytes { write(logFD, $0.baseAddress, $0.count) }
}

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

// Memory pressure (docs/agent.md, "Memory pressure"): `--allocate-mib N` allocates and touches N MiB at start (a
// large footprint); `--thrash FILE:MIB` starts a child that writes a MIB MiB file and reads it over and over (page
// cache churn: under a small `memory-max-mib` it stalls on reclaim, real memory pressure); each `memoryWarning` is
// written as `memoryWarning trigger=T memoryBytes=N`.
var footprint: [UInt8] = []
if let mib = option("--allocate-mib").flatMap(Int.init), mib > 0 {
    footprint = [UInt8](repeating: 1, count: mib << 20)
    emit("allocated mib=\(mib) checksum=\(footprint[footprint.count / 2])")
}
if let thrash = option("--thrash"), let colon = thrash.lastIndex(of: ":"),
    let mib = Int(thrash[thrash.index(after: colon)...])
{
    let file = String(thrash[..<colon])
    let script = "head -c \(mib)M /dev/urandom > '\(file)' && while :; do cat '\(file)' > /dev/null; done"
    var child: pid_t = 0
    let words: [String] = ["/bin/sh", "-c", script]
    let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
    let spawned = posix_spawn(&child, "/bin/sh", nil, nil, argv, environ)
    for pointer in argv { free(pointer) }
    emit(spawned == 0 ? "thrashing pid=\(child) mib=\(mib)" : "thrashFailed errno=\(spawned)")
}

// It may outlive the agent whose stdout it shares (re-attached by the next agent): no SIGPIPE death.
signal(SIGPIPE, SIG_IGN)

do {
    let client = try AgentClient(socketPath: socketPath)
    try client.register(handler: name, preservesState: preserves)
    if mode == "foreground" { try client.setState("active") }
    if mode == "task" || mode == "leak" { try client.beginTask(name: "upload") }
    if let commandsPath { try readCommands(commandsPath, client: client) }
    if let session = option("--transfer-session") {
        Task {
            do {
                let tasks = try await client.openTransferSession(session)
                emit("session name=\(session) tasks=\(tasks.count)")
            } catch {
                emit("sessionFailed \(error)")
            }
        }
    }
    for await message in client.messages {
        switch message {
        case .registered(let registered):
            emit("registered launchReason=\(registered.launchReason) uid=\(getuid()) gid=\(getgid())")
            if arguments.contains("--describe") {
                emit("fds " + startDescriptors.map(String.init).joined(separator: " "))
                emit("environment " + environmentNames().sorted().joined(separator: " "))
            }
            if let other = option("--try-admin") { Task { await tryAdmin(client, other: other) } }
            if let target = option("--voip-connect"), !["voipSocket", "keepAlive"].contains(registered.launchReason) {
                Task { await connectVoIP(client, target) }
            }
            if let seconds = option("--keep-alive").flatMap(Double.init) {
                Task {
                    do {
                        try await client.setKeepAlive(seconds: seconds)
                        emit("keepAliveSet seconds=\(seconds)")
                    } catch let error as AgentRequestError {
                        emit("keepAliveFailed error=\(error.code) detail=\(error.detail)")
                    }
                }
            }
        case .credentials(let credentials):
            emit("credentials topic=\(credentials.topic) token=\(credentials.token)")
        case .push(let push):
            let payload = Base64.decode(push.payload).map { String(decoding: $0, as: UTF8.self) } ?? ""
            var latency = ""
            if let sent = (try? JSONCoding.decode(PayloadFields.self, from: Array(payload.utf8)))?.sentAt {
                latency = " latencyMs=" + threeDecimals(wallMilliseconds() - sent)
            }
            let id = push.pushID
            emit(
                "push id=\(id) type=\(push.pushType) mustReport=\(push.mustReport.map { "\($0)" } ?? "-") "
                    + "payload=\(payload)\(latency)")
            // `--exit-unanswered-once FILE`: the launch that finds no FILE creates it and exits (status
            // `--exit-status`, 0 by default) on its first VoIP push owed a report, without answering it.
            if push.pushType == "voip", push.mustReport == true, let marker = option("--exit-unanswered-once"),
                access(marker, F_OK) != 0
            {
                createFile(marker)
                let status = option("--exit-status").flatMap { Int32($0) } ?? 0
                emit("exiting unanswered id=\(id) status=\(status)")
                exit(status)
            }
            let ignored = option("--ignore-payload").map { payload.includes($0) } ?? false
            if push.pushType == "voip", push.mustReport == true, mode != "ignore", !ignored {
                try client.reportCall(pushID: id, callID: "call-\(id)")
                emit("reported id=\(id) call=call-\(id)")
                if mode != "keepcall" { try client.callEnded(callID: "call-\(id)") }
                lastCall = "call-\(id)"
                if arguments.contains("--bad-preserve") {
                    // Malformed on purpose: a path with "..", then data that is not base64.
                    try client.preserve(pieces: ["calls/../ui": []], version: stateVersion)
                    try client.send(.preserve(.init(pieces: ["settings": "not base64!"], version: stateVersion)))
                } else if preserves {
                    try client.preserve(pieces: pieces(), version: stateVersion)
                }
            }
            if push.pushType == "background", mode != "overrun" {
                // A push-initiated download: `"download": URL` in the payload is added to the transfer session
                // (reattached first: the push may come before the session opened at start is answered).
                if let session = option("--transfer-session"),
                    let url = (try? JSONCoding.decode(PayloadFields.self, from: Array(payload.utf8)))?.download
                {
                    do {
                        _ = try await client.openTransferSession(session)
                        let task = try await client.download(session: session, url: url)
                        emit("added task=\(task.taskID) kind=\(task.kind) state=\(task.state)")
                    } catch let error as AgentRequestError {
                        emit("addFailed error=\(error.code)")
                    }
                }
                try client.complete(pushID: id, result: .newData)
                emit("completed id=\(id) result=newData")
                if arguments.contains("--exit-after-push") {
                    // As an app the system terminates once it is done in the background: its transfers go on.
                    emit("exiting")
                    exit(0)
                }
            }
        case .taskBegun(let task):
            emit("taskBegun id=\(task.taskID) name=\(task.taskName)")
        case .taskExpiring(let task):
            emit("taskExpiring id=\(task.taskID) seconds=\(task.seconds)")
            if mode == "task" {
                try client.endTask(id: task.taskID)
                emit("taskEnded id=\(task.taskID)")
            }
        case .lifecycle(let lifecycle):
            emit("lifecycle state=\(lifecycle.state)")
        case .activation(let activation):
            emit("activation " + describe(activation))
        case .reachability(let reachability):
            emit("reachability reachable=\(reachability.reachable)")
        case .restoration(let restoration):
            guard let offer = OfferedRestoration(restoration) else {
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
            if arguments.contains("--crash-after-restoration") {
                // Preserves again (a new archive of this launch), then crashes once restoration finished.
                try client.preserve(pieces: pieces(), version: stateVersion)
            }
            if arguments.contains("--restoration-finished") {
                try await client.restorationFinished()  // answered: the agent has handled it (and the preserve before)
                emit("restorationFinished")
            }
            if arguments.contains("--crash-after-restoration") {
                emit("crashing after restoration")
                exit(4)
            }
        case .preserveRequest(let request):
            emit("preserveRequest reason=\(request.reason)")
            try client.preserve(pieces: pieces(), version: stateVersion)
        case .preserved(let preserved):
            emit("preserved \(preserved.detail)")
        case .error(let failure):
            emit("error \(failure.code): \(failure.detail)")
        case .transferTask(let task):
            var line = "transfer task=\(task.taskID) state=\(task.state) bytes=\(task.bytes)"
            if let status = task.status { line += " status=\(status)" }
            if let error = task.error { line += " error=\(error)" }
            if arguments.contains("--transfer-detail"), let detail = task.detail { line += " detail=\(detail)" }
            if task.file == true {
                guard let fd = client.takeDownloadedFile(taskID: task.taskID) else {
                    emit(line + " file=missing")
                    continue
                }
                line += " file=" + (arguments.contains("--no-fingerprint") ? "yes" : fingerprint(fd))
                close(fd)
            }
            emit(line)
        case .fetch(let fetch):
            emit("fetch id=\(fetch.fetchID)")
            let result = option("--fetch-result") ?? "noData"
            if let result = BackgroundFetchResult(rawValue: result) {
                try await client.fetchComplete(fetchID: fetch.fetchID, result: result)
                emit("fetched id=\(fetch.fetchID) result=\(result.rawValue)")
            }
        case .transferSessionDone(let done):
            emit("sessionDone session=\(done.session)")
            if !arguments.contains("--keep-transfers-unhandled") {
                try await client.transfersHandled(session: done.session)
                emit("handled session=\(done.session)")
            }
        case .voipSocket(let socket):
            if socket.returned == true, let fd = client.takeReturnedSocket(socketID: socket.socketID) {
                VoIPState.sockets[socket.socketID] = fd
            }
            emit(
                "voipSocket id=\(socket.socketID) kind=\(socket.kind)\(socket.returned == true ? " returned=true" : "")"
            )
        case .voipSocketWake(let wake):
            let data = wake.socketIDs.compactMap { VoIPState.sockets[$0] }.map(readAvailable).joined()
            emit(
                "wake id=\(wake.wakeID) sockets=\(wake.socketIDs.count) mustReport=\(wake.mustReport) "
                    + "data=\(trimmedSpaces(String(data.map { $0 == "\r\n" ? " " : $0 })))")
            if mode != "ignore" {
                if data.hasPrefix("INVITE") {
                    try client.reportCall(pushID: wake.wakeID, callID: "call-\(wake.wakeID)")
                    emit("reported wake=\(wake.wakeID)")
                    for fd in wake.socketIDs.compactMap({ VoIPState.sockets[$0] }) {
                        _ = Array("SIP/2.0 200 OK\r\n\r\n".utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                    }
                    try client.callEnded(callID: "call-\(wake.wakeID)")
                } else if wake.mustReport {
                    try await client.voipWakeHandled(wake.wakeID)
                    emit("handled wake=\(wake.wakeID)")
                }
            }
        case .voipSocketChanged(let changed):
            emit(
                "voipSocketChanged kind=\(changed.kind) sockets="
                    + changed.sockets.map { "\($0.socketID)\($0.error.map { ":" + $0 } ?? "")" }.joined(separator: ","))
        case .keepAlive(let keepAlive):
            emit("keepAlive id=\(keepAlive.keepAliveID) seconds=\(keepAlive.seconds)")
            if arguments.contains("--keep-alive-done") {
                try await client.keepAliveDone(keepAlive.keepAliveID)
                emit("keepAliveDone id=\(keepAlive.keepAliveID)")
            }
        case .protectedData(let event):
            emit("protectedData state=\(event.state.rawValue)")
        case .willTerminate(let notice):
            emit("willTerminate reason=\(notice.reason) seconds=\(notice.seconds)")
            // `--terminate-marker FILE`: written before the clean exit (tests check it); `--ignore-terminate`: the
            // notice is ignored (the agent kills it after the grace).
            if !arguments.contains("--ignore-terminate") {
                if let marker = option("--terminate-marker") {
                    createFile(marker, Array("terminated \(notice.reason)\n".utf8))
                }
                emit("exiting on willTerminate")
                exit(0)
            }
        case .timeChanged(let change):
            emit("timeChanged clockStep=\(change.clockStep) timeZone=\(change.timeZone)")
        case .notificationResponse(let response):
            emit(
                "notificationResponse id=\(response.notificationID) source=\(response.source) action=\(response.action)"
                    + " payload=\(response.payload ?? "")")
        case .memoryWarning(let warning):
            emit(
                "memoryWarning trigger=\(warning.trigger ?? "-") memoryBytes=\(warning.memoryBytes.map { "\($0)" } ?? "-")"
            )
        case .statusReply, .sessionsReply, .ok, .transferSessionReply, .protectedFileReply, .notificationsReply,
            .unknown:
            emit("message type=\(message.type)")
        }
    }
    emit("disconnected")
} catch {
    emit("failed \(error)")
    exit(1)
}

/// The handler's VoIP sockets by the agent's id.
@MainActor enum VoIPState {
    static var sockets: [Int: Int32] = [:]
}

/// Connects a TCP signalling connection to `target` (`HOST:PORT`, IPv4) and hands it to the agent to watch.
@MainActor func connectVoIP(_ client: AgentClient, _ target: String) async {
    // `udp:HOST:PORT`: a connected UDP socket (SIP over UDP) instead of TCP.
    let udp = target.hasPrefix("udp:")
    let parts = (udp ? String(target.dropFirst(4)) : target).split(separator: ":")
    guard parts.count == 2, let port = UInt16(parts[1]) else {
        emit("voipFailed bad target \(target)")
        return
    }
    let type = udp ? Int32(SOCK_DGRAM.rawValue) : Int32(SOCK_STREAM.rawValue)
    let fd = socket(AF_INET, type | Int32(SOCK_CLOEXEC.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    inet_pton(AF_INET, String(parts[0]), &address.sin_addr)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard fd >= 0, connected == 0 else {
        emit("voipFailed connect errno=\(errno)")
        return
    }
    if udp {
        // Say hello: the peer learns where to send (a registrar learns the contact from the REGISTER).
        _ = Array("REGISTER\r\n\r\n".utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
    }
    await addVoIP(client, fd)
}

/// Hands `fd` to the agent to watch: `voipSocket id=N kind=K`, or `voipFailed error=CODE detail=…` (then closed).
@MainActor func addVoIP(_ client: AgentClient, _ fd: Int32) async {
    do {
        let socket = try await client.addVoIPSocket(fd)
        VoIPState.sockets[socket.socketID] = fd
        emit("voipSocket id=\(socket.socketID) kind=\(socket.kind)")
    } catch let error as AgentRequestError {
        close(fd)
        emit("voipFailed error=\(error.code) detail=\(error.detail)")
    } catch {
        close(fd)
        emit("voipFailed \(error)")
    }
}

/// What a careless or hostile handler might offer as its VoIP socket (tests): `pipe`, `listen` (a listening TCP
/// socket), `unconnected` (a UDP socket with no peer).
@MainActor func offerVoIP(_ client: AgentClient, _ what: String) async {
    switch what {
    case "pipe":
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return emit("voipFailed pipe errno=\(errno)") }
        close(ends[1])
        await addVoIP(client, ends[0])
    case "listen":
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        listen(fd, 1)
        await addVoIP(client, fd)
    default:
        await addVoIP(client, socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0))
    }
}

/// What waits on socket `fd`, read without blocking.
/// `text` without leading and trailing spaces and tabs.
func trimmedSpaces(_ text: String) -> String {
    let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
    guard let first = text.firstIndex(where: { !blank($0) }), let last = text.lastIndex(where: { !blank($0) }) else {
        return ""
    }
    return String(text[first...last])
}

func readAvailable(_ fd: Int32) -> String {
    var text = ""
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard count > 0 else { break }
        text += String(decoding: buffer[..<count], as: UTF8.self)
    }
    return text
}

/// `SIZE:FNV` of the file open as `fd` (read from its start): FNV-1a, 64 bits, hex.
func fingerprint(_ fd: Int32) -> String {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    var size = 0
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(size)) }
        guard count > 0 else { break }
        buffer.withUnsafeBufferPointer { bytes in
            for byte in bytes[..<count] { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        }
        size += count
    }
    return "\(size):" + String(hash, radix: 16)
}

/// `session=… event=… [reason=…] [shouldResume=…]`.
func describe(_ activation: AgentEvent.Activation) -> String {
    var text = "session=\(activation.session) event=\(activation.event)"
    if let reason = activation.reason { text += " reason=\(reason)" }
    if let shouldResume = activation.shouldResume { text += " shouldResume=\(shouldResume)" }
    return text
}

/// Reads commands (one per line) from the named pipe at `path`, opened read-write so that writers come and go
/// without an end of file, and runs each in order.
/// `--try-admin OTHER` (tests): what a handler gets when it asks for the status on its own connection, and when it
/// asks to stop handler OTHER, on its own connection and on a second one through the socket path. Writes
///   askedStatus handlers=NAME,… device=ID|-     admin own=CODE     admin socket=CODE
func tryAdmin(_ client: AgentClient, other: String) async {
    func answer(_ client: AgentClient, _ request: AgentRequest) async -> (AgentEvent?, String) {
        do {
            let event = try await client.request(request)
            return (event, event.type)
        } catch let error as AgentRequestError {
            return (nil, error.code)
        } catch {
            return (nil, "\(error)")
        }
    }
    if case (.statusReply(let reply)?, _) = await answer(client, .status) {
        let status = try? JSONCoding.decode(StatusFields.self, from: Array(reply.detail.utf8))
        let names = (status?.handlers ?? []).compactMap(\.name)
        emit("askedStatus handlers=\(names.joined(separator: ",")) device=\(status?.deviceID ?? "-")")
    }
    let stop = AgentRequest.userControl(.init(handler: other, state: "stopped"))
    emit("admin own=" + (await answer(client, stop)).1)
    let path = environment("ROUSE_AGENT_SOCKET") ?? AgentClient.defaultSocketPath
    guard let second = try? AgentClient(socketPath: path) else {
        emit("admin socket=connectFailed")
        return
    }
    emit("admin socket=" + (await answer(second, stop)).1)
    second.close()
}

/// Runs `body` on a thread of its own (a blocking reader that must not take one of the concurrency pool's).
func startThread(_ body: @escaping @Sendable () -> Void) {
    final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
    let context = Unmanaged.passRetained(Body(body)).toOpaque()
    var thread = pthread_t()
    let started = pthread_create(
        &thread, nil,
        { context in
            guard let context else { return nil }
            Unmanaged<Body>.fromOpaque(context).takeRetainedValue().run()
            return nil
        }, context)
    if started == 0 {
        pthread_detach(thread)
    } else {
        Unmanaged<Body>.fromOpaque(context).release()
    }
}

func readCommands(_ path: String, client: AgentClient) throws {
    // Read and write, so the FIFO never reports end of file while no writer has it open.
    let fd = open(path, O_RDWR | O_CLOEXEC)
    guard fd >= 0 else {
        throw AgentRequestError(code: "commands", detail: "cannot open \(path)")
    }
    let lines = AsyncStream<String>.makeStream()
    startThread {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            buffer.append(contentsOf: chunk[0..<count])
            while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                lines.continuation.yield(String(decoding: buffer[..<newline], as: UTF8.self))
                buffer.removeSubrange(...newline)
            }
        }
        lines.continuation.finish()
    }
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
        let request = AgentRequest.Activate(
            session: words[1], category: words[2], mode: named["mode"],
            options: named["options"].map { $0.split(separator: ",").map(String.init) }, role: named["role"],
            acceptsDelay: named["delay"] != nil)
        // The raw request, so that a test can send what the typed API would refuse to build.
        do {
            let answer = try await client.request(.activate(request))
            if case .activation(let activation) = answer {
                emit("answer " + describe(activation))
            } else {
                emit("answer session=\(words[1]) type=\(answer.type)")
            }
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
    case "session":
        let tasks = try await client.openTransferSession(words[1])
        emit("session name=\(words[1]) tasks=\(tasks.count)")
    case "download", "upload", "uploadbytes", "uploadpipe":
        do {
            let task: AgentEvent.TransferTask
            switch command {
            case "download":
                task = try await client.download(
                    session: words[1], url: words[2], discretionary: named["discretionary"] != nil)
            case "uploadbytes":
                task = try await client.upload(session: words[1], url: words[2], bytes: Array(words[3].utf8))
            case "uploadpipe":
                // Not a regular file: the agent refuses it (badDescriptor).
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else { throw AgentRequestError(code: "pipe", detail: "\(errno)") }
                defer { for end in ends { close(end) } }
                task = try await client.upload(session: words[1], url: words[2], descriptor: ends[0])
            default:
                let fd = open(words[3], O_RDONLY | O_CLOEXEC)
                guard fd >= 0 else { throw AgentRequestError(code: "open", detail: "\(words[3]): errno \(errno)") }
                defer { close(fd) }
                task = try await client.upload(
                    session: words[1], url: words[2], method: named["method"] ?? "PUT", descriptor: fd)
            }
            emit("added task=\(task.taskID) kind=\(task.kind) state=\(task.state)")
        } catch let error as AgentRequestError {
            emit("addFailed error=\(error.code)")
        }
    case "voipconnect":
        await connectVoIP(client, words[1])
    case "voipoffer":
        await offerVoIP(client, words[1])
    case "cancel":
        let task = try await client.cancelTransfer(session: words[1], taskID: Int(words[2]) ?? -1)
        emit("cancelled task=\(task.taskID) state=\(task.state)")
    default:
        emit("commandFailed unknown command \(command)")
    }
}
