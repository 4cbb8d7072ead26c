import Glibc
import RouseAgentCore
import RouseClock
import RouseSystem

/// Asks the session's audio server (PulseAudio, or PipeWire's PulseAudio server) whether a handler's streams are
/// audible, with Debian's `pactl` and `parec` (pulseaudio-utils):
///
/// 1. `pactl list sink-inputs`: the handler's streams are the sink-inputs whose `application.process.id` is one of
///    its processes; none → silent (`no stream`); all corked → silent (`corked`).
/// 2. For each running one, `parec --monitor-stream=INDEX` (8 kHz mono s16) is read until a sample reaches
///    ``silenceThreshold`` (audible: the read stops at once) or for ``listenWindow`` at most (`no sound`; a stream
///    that sends nothing in that time counts as silent too).
///
/// A stream playing zeros is uncorked and "running" in the server's state: only its samples tell silence from
/// sound, so this is the cheapest check that is honest. Blocking (it waits for the tools): run off the agent's
/// executor. The tools get only the session's audio variables, no descriptor but the pipe they write to.
package enum AudioStreamProbe {
    static let shell = "/bin/sh"
    static let pactl = "/usr/bin/pactl"
    static let parec = "/usr/bin/parec"
    /// The peak (of 32767) below which a stream counts as silent: -60 dBFS.
    static let silenceThreshold = 33
    /// The longest a running stream is listened to. A monitor stream's first samples come late: 1.0 to 1.7 s after
    /// `parec` starts on PulseAudio 16's null sink on this machine (docs/activations.md, "Audible background audio").
    static let listenWindow: Duration = .seconds(3)
    /// The longest `pactl` may take.
    static let pactlDeadline: Duration = .seconds(5)
    /// The most of `pactl`'s output read (a server with thousands of streams is cut there).
    static let maxListing = 1 << 20
    /// The session variables the tools are given (which server, where its socket and cookie are).
    static let passedVariables = ["PULSE_SERVER", "PULSE_COOKIE", "XDG_RUNTIME_DIR", "HOME"]

    /// One sink-input of `pactl list sink-inputs`.
    package struct SinkInput: Sendable, Equatable {
        /// Its index (`Sink Input #N`).
        package var index: Int
        /// `application.process.id`, when the client gave one.
        package var pid: Int32?
        /// `Corked: yes`.
        package var corked: Bool

        package init(index: Int, pid: Int32?, corked: Bool) {
            self.index = index
            self.pid = pid
            self.corked = corked
        }
    }

    /// Whether `environment` names an audio server to ask (else no check is made: the sessions protect as before).
    static func hasServer(_ environment: [String: String]) -> Bool {
        environment["PULSE_SERVER"] != nil || environment["XDG_RUNTIME_DIR"] != nil
    }

    /// What the streams of the processes `pids` sound like now, asking the server `environment` names.
    package static func observe(pids: Set<Int32>, environment: [String: String]) -> AudibleAudioWatch.Observation {
        var variables = ["PATH=/usr/bin:/bin", "LC_ALL=C"]
        for name in passedVariables { if let value = environment[name] { variables.append("\(name)=\(value)") } }
        guard let listing = run([pactl, "list", "sink-inputs"], variables, deadline: pactlDeadline, stopAtPeak: false)
        else { return .unavailable("pactl list sink-inputs failed") }
        let streams = parseSinkInputs(listing.text).filter { $0.pid.map(pids.contains) ?? false }
        if streams.isEmpty { return .silent("no stream") }
        let running = streams.filter { !$0.corked }
        if running.isEmpty { return .silent("corked") }
        for stream in running {
            let arguments = [
                parec, "--monitor-stream=\(stream.index)", "--raw", "--format=s16le", "--rate=8000", "--channels=1",
                "--latency-msec=20",
            ]
            if let heard = run(arguments, variables, deadline: listenWindow, stopAtPeak: true),
                heard.peak >= silenceThreshold
            {
                return .audible
            }
        }
        return .silent("no sound")
    }

    /// The sink-inputs of `pactl list sink-inputs` (`LC_ALL=C`); lines it does not know are skipped.
    package static func parseSinkInputs(_ text: String) -> [SinkInput] {
        var inputs: [SinkInput] = []
        for line in text.split(separator: "\n") {
            let field = line.drop { $0 == " " || $0 == "\t" }
            if field.hasPrefix("Sink Input #"), let index = Int(field.dropFirst("Sink Input #".count)) {
                inputs.append(SinkInput(index: index, pid: nil, corked: false))
            } else if inputs.isEmpty {
                continue
            } else if field.hasPrefix("Corked: ") {
                inputs[inputs.count - 1].corked = field.hasSuffix("yes")
            } else if field.hasPrefix("application.process.id = \"") {
                inputs[inputs.count - 1].pid = Int32(field.dropFirst("application.process.id = \"".count).dropLast())
            }
        }
        return inputs
    }

    /// The peak of little-endian signed 16-bit samples (an odd last byte is ignored).
    package static func peak(_ bytes: ArraySlice<UInt8>) -> Int {
        var peak = 0
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            let sample = Int(Int16(bitPattern: UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8))
            peak = max(peak, abs(sample))
            index += 2
        }
        return peak
    }

    /// Runs `arguments` (its standard output to our pipe: `sh -c 'exec "$0" "$@" >&3'`), reads until it ends or
    /// `deadline` passes (or, `stopAtPeak`, until a sample reaches the threshold), then kills and reaps it. Nil when
    /// it could not start or, without `stopAtPeak`, did not exit by itself with status 0.
    static func run(_ arguments: [String], _ variables: [String], deadline: Duration, stopAtPeak: Bool)
        -> (text: String, peak: Int)?
    {
        guard let pipe = try? Sys.pipe() else { return nil }
        let spawned: (pid: Int32, pidfd: Int32)
        do {
            spawned = try Sys.spawn(
                path: shell, arguments: [shell, "-c", "exec \"$0\" \"$@\" >&3 2>/dev/null"] + arguments,
                environment: variables, channel: pipe.write)
        } catch {
            Sys.close(pipe.read)
            Sys.close(pipe.write)
            return nil
        }
        Sys.close(pipe.write)
        defer {
            Sys.close(pipe.read)
            Sys.close(spawned.pidfd)
        }
        let clock = SystemClock()
        let end = clock.now.advanced(by: deadline)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var peak = 0
        var ended = false
        while bytes.count < maxListing {
            let left = clock.now.duration(to: end).wholeMilliseconds
            guard left > 0, let ready = try? Sys.poll([pipe.read], timeoutMilliseconds: Int32(clamping: left)),
                ready.first == true
            else { break }
            let count = (try? buffer.withUnsafeMutableBytes { try Sys.read(pipe.read, into: $0) }) ?? 0
            if count <= 0 {
                ended = true
                break
            }
            if stopAtPeak {
                // Samples are pairs of bytes: a read that split one carries its first byte over.
                bytes += buffer[0..<count]
                let whole = bytes.count & ~1
                peak = max(peak, Self.peak(bytes[0..<whole]))
                bytes = Array(bytes[whole...])
                if peak >= silenceThreshold { break }
            } else {
                bytes += buffer[0..<count]
            }
        }
        let exited = ended && Sys.waitForExit(pidfd: spawned.pidfd, milliseconds: 1000)
        if !exited {
            Sys.signal(pidfd: spawned.pidfd, SIGKILL)
        }
        let status = Sys.wait(pidfd: spawned.pidfd)
        if !stopAtPeak && (!exited || status != 0) { return nil }
        return (String(decoding: bytes, as: UTF8.self), peak)
    }
}
