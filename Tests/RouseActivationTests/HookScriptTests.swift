import Foundation
import RouseTestSupport
import Testing

@Suite("deploy/hooks/pactl-roles.sh with a stand-in pactl (no PulseAudio needed)")
struct HookScriptTests {
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/hooks/pactl-roles.sh").path

    /// A stand-in `pactl` that answers `info`, lists three sink-inputs (music, phone, no role) and echoes
    /// every other command.
    static func fakePactlDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-pactl-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let listing = [
            "Sink Input #42", "\tProperties:", "\t\tmedia.role = \"music\"", "Sink Input #43", "\tProperties:",
            "\t\tmedia.role = \"phone\"", "Sink Input #44", "\tProperties:", "\t\tapplication.name = \"x\"",
        ].joined(separator: "\\n")
        let body = """
            #!/bin/sh
            case "$1" in
            info) exit 0 ;;
            list) printf '\(listing)\\n' ;;
            *) echo "$*" ;;
            esac
            """
        // Written as a template, then copied by cp: a file this process wrote can still be open for writing in a
        // child that another test forked meanwhile, and executing it then fails with ETXTBSY (the hook would
        // see no pactl). cp's descriptor is gone when cp has exited.
        let template = directory.appendingPathComponent("pactl.template").path
        try body.write(toFile: template, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: template)
        let copy = try ChildProcess.runSync("/bin/cp", [template, directory.appendingPathComponent("pactl").path])
        guard copy.status == 0 else { throw ChildProcess.Failure(description: "cp: \(copy.stderr)") }
        return directory
    }

    static func run(path: String, environment: [String: String]) throws -> (status: Int32, output: String) {
        let result = try ChildProcess.runSync(
            "/bin/sh", [script, "grant"], environment: environment.merging(["PATH": path]) { $1 })
        return (result.status, result.stdout)
    }

    @Test("Without pactl it exits 0 and does nothing")
    func noPactl() throws {
        let result = try Self.run(path: "/nonexistent", environment: ["ROUSE_ACTIVE_ROLES": "call"])
        #expect(result.status == 0)
        #expect(result.output.isEmpty)
    }

    @Test(
        "Mutes music under a call, ducks it under a ducker, restores it otherwise; other roles untouched",
        arguments: [
            (["ROUSE_ACTIVE_ROLES": "call,media"], "set-sink-input-mute 42 1\n"),
            (
                ["ROUSE_ACTIVE_ROLES": "media,navigation", "ROUSE_DUCKING_ROLES": "navigation"],
                "set-sink-input-mute 42 0\nset-sink-input-volume 42 30%\n"
            ),
            (["ROUSE_ACTIVE_ROLES": "media"], "set-sink-input-mute 42 0\nset-sink-input-volume 42 100%\n"),
        ])
    func levels(_ environment: [String: String], _ expected: String) throws {
        let directory = try Self.fakePactlDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try Self.run(path: directory.path + ":/usr/bin:/bin", environment: environment)
        #expect(result.status == 0)
        #expect(result.output == expected)
    }
}
