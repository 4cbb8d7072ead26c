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
    /// The clock-step timer, the time-zone directory's inotify descriptor (-1: none) and the stop eventfd: owned by
    /// this object and closed in `deinit`, which runs only after the thread (which holds the object) has gone. A
    /// thread that closed them itself when it ended (on a read error) left ``stop()`` writing 8 bytes into whatever
    /// descriptor took the number next: a full test run saw an admin client's frame arrive as `01 00 00 00 …`.
    private let step: Int32
    private let zone: Int32
    private let zoneName: String
    private let stopFD: Int32

    /// Starts watching (`timeZonePath` nil: clock steps only). Nil when the descriptors cannot be made (logged).
    init?(timeZonePath: String?, logger: Logger) {
        let step: Int32
        let stop: Int32
        do {
            step = try Sys.clockStepDescriptor()
        } catch {
            logger.warning("clock steps not watched", metadata: ["error": "\(error)"])
            return nil
        }
        do {
            stop = try Sys.eventFD()
        } catch {
            Sys.close(step)
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
        self.step = step
        self.zone = zone
        self.zoneName = zoneName
        stopFD = stop
        Sys.detachedThread(name: "rouse-agent-time") { [self] in loop() }
    }

    private func loop() {
        defer { continuation.finish() }
        let descriptors = zone >= 0 ? [step, stopFD, zone] : [step, stopFD]
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

    /// Ends the thread (the descriptors are closed with this object, after the thread has gone).
    func stop() { Sys.eventFDSignal(stopFD) }

    deinit {
        Sys.close(step)
        if zone >= 0 { Sys.close(zone) }
        Sys.close(stopFD)
    }
}
