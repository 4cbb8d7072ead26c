import FoundationEssentials
import Logging
import RouseSystem

/// The agent's watch on wall-clock steps and time-zone changes (``Sys/clockStepDescriptor()``,
/// ``Sys/watchDirectoryEntries(_:)``): one thread blocked in `poll` on the two descriptors and a stop eventfd, so an
/// idle agent gets no wake-up from it. Each change is yielded as (clock step, time zone) to the agent.
final class TimeWatch: Sendable {
    /// The changes, in order.
    let changes: AsyncStream<(clockStep: Bool, timeZone: Bool)>
    private let continuation: AsyncStream<(clockStep: Bool, timeZone: Bool)>.Continuation
    private let stopFD: Int32

    /// Starts watching (`timeZonePath` nil: clock steps only). Nil when the descriptors cannot be made (logged).
    init?(timeZonePath: String?, logger: Logger) {
        let step: Int32
        let stop: Int32
        do {
            step = try Sys.clockStepDescriptor()
            stop = try Sys.eventFD()
        } catch {
            logger.warning("clock steps not watched", metadata: ["error": "\(error)"])
            return nil
        }
        var zone: Int32 = -1
        var zoneName = ""
        if let timeZonePath {
            let url = URL(fileURLWithPath: timeZonePath)
            zoneName = url.lastPathComponent
            do {
                zone = try Sys.watchDirectoryEntries(url.deletingLastPathComponent().path)
            } catch {
                logger.warning("time-zone changes not watched", metadata: ["error": "\(error)"])
            }
        }
        (changes, continuation) = AsyncStream.makeStream()
        stopFD = stop
        let continuation = continuation
        let name = zoneName
        let zoneFD = zone
        Sys.detachedThread(name: "rouse-agent-time") {
            Self.loop(step: step, zone: zoneFD, zoneName: name, stop: stop, continuation)
        }
    }

    private static func loop(
        step: Int32, zone: Int32, zoneName: String, stop: Int32,
        _ continuation: AsyncStream<(clockStep: Bool, timeZone: Bool)>.Continuation
    ) {
        defer {
            Sys.close(step)
            if zone >= 0 { Sys.close(zone) }
            Sys.close(stop)
            continuation.finish()
        }
        let descriptors = zone >= 0 ? [step, stop, zone] : [step, stop]
        while true {
            guard let ready = try? Sys.poll(descriptors, timeoutMilliseconds: -1) else { return }
            if ready[1] { return }
            let stepped = ready[0] && (try? Sys.readClockStep(step)) == .stepped
            var zoned = false
            if ready.count > 2, ready[2] {
                guard let names = try? Sys.readChangedNames(zone) else { return }
                zoned = names.contains(zoneName)
            }
            if stepped || zoned { continuation.yield((stepped, zoned)) }
        }
    }

    /// Ends the thread (it closes the descriptors).
    func stop() { Sys.eventFDSignal(stopFD) }
}
