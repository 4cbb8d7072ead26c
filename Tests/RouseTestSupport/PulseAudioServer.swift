import Foundation
import RouseChildProcess

/// A headless PulseAudio server for one test: Debian's `pulseaudio`, run as `nobody` (it refuses root outside its
/// system mode) with a home and a runtime directory of its own, no default script (`-n`: only a null sink and the
/// native protocol on a socket in the runtime directory, anonymous access), stopped when the test's scope ends.
/// Streams are real: `pacat` plays into the null sink, and what `pactl` reads back is the server's state.
///
/// Tests that need it fail when it cannot start: nothing is skipped.
public final class PulseAudioServer: Sendable {
    /// The failure of a server operation, with what the tool said.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `unix:<socket>`, for `PULSE_SERVER`.
    public let address: String
    /// The directory holding the server's home, runtime directory and log.
    public let directory: String

    private init(address: String, directory: String) {
        self.address = address
        self.directory = directory
    }

    /// Starts a server and waits until `pactl info` answers (20 s at most).
    public static func start() async throws -> PulseAudioServer {
        guard let scope = TestScope.current else {
            throw Failure(description: "PulseAudioServer needs a test scope: give the suite .stopsWhatItStarts")
        }
        for tool in ["/usr/bin/pulseaudio", "/usr/bin/pactl", "/usr/bin/pacat"] { try ChildProcess.require(tool) }
        guard let nobody = getpwnam("nobody") else { throw Failure(description: "no user nobody") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rouse-pulse-\(UUID())").path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        for sub in ["home", "run"] {
            let path = directory + "/" + sub
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            guard chown(path, nobody.pointee.pw_uid, nobody.pointee.pw_gid) == 0 else {
                throw Failure(description: "chown \(path): errno \(errno)")
            }
        }
        let socket = directory + "/run/native"
        // `env -i` drops the tags ChildProcess adds: the scope's and the test run's are given back by hand.
        var tags = ["\(TestScope.variable)=\(scope.id)"]
        if let run = ProcessInfo.processInfo.environment["ROUSE_TEST_RUN"] { tags.append("ROUSE_TEST_RUN=\(run)") }
        let server = try ChildProcess.start(
            "/usr/sbin/runuser",
            [
                "-u", "nobody", "--", "/usr/bin/env", "-i", "HOME=\(directory)/home",
                "XDG_RUNTIME_DIR=\(directory)/run", "PATH=/usr/bin:/bin",
            ] + tags + [
                "/usr/bin/pulseaudio", "-n", "--daemonize=no",
                "--exit-idle-time=-1", "--use-pid-file=no", "--disable-shm=yes", "--log-target=stderr",
                "-L", "module-native-protocol-unix socket=\(socket) auth-anonymous=1",
                "-L", "module-null-sink sink_name=rouse_null",
            ], stderr: .file(directory + "/server.log"))
        scope.onEnd {
            server.kill()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let pulse = PulseAudioServer(address: "unix:" + socket, directory: directory)
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let info = try? await pulse.pactl(["info"]), info.contains("Server Name") { return pulse }
            guard server.isRunning else { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
        throw Failure(description: "pulseaudio did not answer within 20 s: \(log.suffix(2000))")
    }

    /// Runs `pactl` on this server; its standard output.
    public func pactl(_ arguments: [String]) async throws -> String {
        let output = try await ChildProcess.run(
            "/usr/bin/env", ["PULSE_SERVER=\(address)", "LC_ALL=C", "/usr/bin/pactl"] + arguments,
            timeout: .seconds(10))
        guard output.status == 0 else {
            throw Failure(description: "pactl \(arguments.joined(separator: " ")): \(output.stderr)")
        }
        return output.stdout
    }

    /// A stream playing silence into the null sink with `media.role` = `role`, until the test ends.
    package func play(role: String) throws -> RunningChild {
        try ChildProcess.start(
            "/usr/bin/env",
            [
                "PULSE_SERVER=\(address)", "/usr/bin/pacat", "--playback", "--raw",
                "--property=media.role=\(role)", "/dev/zero",
            ], stderr: .file(directory + "/pacat-\(role).log"))
    }

    /// The server's log and the streams' stderr, for a failure's message.
    public func diagnostics() -> String {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter {
            $0.hasSuffix(".log")
        }
        return files.sorted().map { name in
            let text = (try? String(contentsOfFile: directory + "/" + name, encoding: .utf8)) ?? ""
            return "\(name): \(text.suffix(1500))"
        }.joined(separator: "\n")
    }

    /// One sink-input as the server reports it.
    public struct SinkInput: Sendable, Equatable {
        public var role: String?
        public var muted: Bool
        /// The first channel's volume in percent.
        public var volumePercent: Int?
        public var corked: Bool
    }

    /// The server's sink-inputs (`pactl list sink-inputs`).
    public func sinkInputs() async throws -> [SinkInput] {
        var inputs: [SinkInput] = []
        for line in try await pactl(["list", "sink-inputs"]).split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.hasPrefix("Sink Input #") {
                inputs.append(SinkInput(role: nil, muted: false, volumePercent: nil, corked: false))
            } else if inputs.isEmpty {
                continue
            } else if text.hasPrefix("Mute: ") {
                inputs[inputs.count - 1].muted = text.hasSuffix("yes")
            } else if text.hasPrefix("Corked: ") {
                inputs[inputs.count - 1].corked = text.hasSuffix("yes")
            } else if text.hasPrefix("Volume: "), let percent = text.split(separator: "/").dropFirst().first {
                inputs[inputs.count - 1].volumePercent = Int(
                    percent.trimmingCharacters(in: .whitespaces).dropLast())
            } else if text.hasPrefix("media.role = ") {
                inputs[inputs.count - 1].role = text.dropFirst("media.role = ".count)
                    .trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return inputs
    }
}
