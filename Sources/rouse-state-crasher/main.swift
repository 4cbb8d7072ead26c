import Foundation
import Logging
import RouseState
import RouseSystem

// rouse-state-crasher: writes a preservation archive and SIGKILLs itself at a chosen write step, so tests
// can check what a reader finds after a crash at every step of the atomic write sequence; or (mode
// `launch`) begins a launch, prints how many pieces were offered, and SIGKILLs itself before finishing it,
// as a handler that crashes during launch.
//
// Environment:
//   ROUSE_STATE_MODE      `preserve` (default) or `launch`
//   ROUSE_STATE_DIR       the sealed-file store directory
//   ROUSE_STATE_KEY_DIR   the key directory (key-file backend)
//   ROUSE_STATE_HANDLER   the handler whose archive is written
//   ROUSE_STATE_TAG       a marker put in every piece ("new")
//   ROUSE_STATE_PIECES    how many call entries under `calls` (each with a `ui` child)
//   ROUSE_STATE_CRASH_AT  a write step (create-temp, write-first-half, …, done); unset: no crash
func environment(_ name: String) -> String? { Sys.environment(name) }

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("rouse-state-crasher: \(message)\n".utf8))
    Sys.exit(2)
}

guard let directory = environment("ROUSE_STATE_DIR"), let keyDirectory = environment("ROUSE_STATE_KEY_DIR"),
    let handler = environment("ROUSE_STATE_HANDLER")
else { fail("set ROUSE_STATE_DIR, ROUSE_STATE_KEY_DIR and ROUSE_STATE_HANDLER") }
let tag = environment("ROUSE_STATE_TAG") ?? "new"
let pieces = environment("ROUSE_STATE_PIECES").flatMap(Int.init) ?? 10
let crashAt = environment("ROUSE_STATE_CRASH_AT").flatMap(WriteStep.init(rawValue:))
if environment("ROUSE_STATE_CRASH_AT") != nil && crashAt == nil { fail("unknown ROUSE_STATE_CRASH_AT") }
let archiveName = "\(handler).state"

let logger = Logger(label: "rouse-state-crasher") { _ in SwiftLogNoOpLogHandler() }
do {
    let loaded = try KeyStore(directory: keyDirectory, logger: logger, credentialsDirectory: "")
        .load(preference: .keyFile)
    let store = try SealedStore(
        directory: directory, keys: KeyRing(key: loaded.current), logger: logger,
        faultHook: { step, path in
            if step == crashAt && path.hasSuffix("/\(archiveName)") { Sys.raise(SIGKILL) }
        })
    let preservation = PreservationStore(store: store, logger: logger)
    if environment("ROUSE_STATE_MODE") == "launch" {
        let offered = try preservation.beginLaunch(handler: handler)
        // Unbuffered, so the line is out before the kill.
        FileHandle.standardOutput.write(Data("offered \(offered?.pieces.count ?? 0)\n".utf8))
        Sys.raise(SIGKILL)
    }
    var archive = PreservationArchive(info: .init(handler: handler, writerVersion: "1.0", createdAt: 0))
    archive.preserve(Array("\(tag)-calls".utf8), at: try RestorationPath("calls"))
    for i in 0..<pieces {
        let call = try RestorationPath("calls/\(i)")
        archive.preserve(Array("\(tag)-call-\(i)".utf8), at: call)
        archive.preserve(Array("\(tag)-ui-\(i)".utf8), at: try call.appending("ui"))
    }
    try preservation.preserve(archive)
    print("preserved")
} catch {
    fail("\(error)")
}
