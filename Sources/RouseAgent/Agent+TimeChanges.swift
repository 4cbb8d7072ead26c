import Logging
import RouseAgentCore

/// Time changes (docs/handler-protocol.md, "timeChanged"): the wall clock stepped or the time zone changed; running
/// handlers are told at once, frozen and launching ones get one coalesced notice at their wake (HandlerMachine+Time).
extension Agent {
    /// Starts the watch (``TimeWatch``) and feeds its changes to ``timeChanged(clockStep:timeZone:)``.
    func startTimeWatch() {
        guard let watch = TimeWatch(timeZonePath: configuration.timeZonePath, logger: logger) else { return }
        timeWatch = watch
        background.append(
            Task {
                for await change in watch.changes {
                    self.timeChanged(clockStep: change.clockStep, timeZone: change.timeZone)
                }
            })
    }

    /// The wall clock stepped (`clockStep`) and/or the time zone changed (`timeZone`); also the entry point a test
    /// drives instead of the kernel.
    package func timeChanged(clockStep: Bool, timeZone: Bool) {
        timeChanges += 1
        logger.info("time changed", metadata: ["clock-step": "\(clockStep)", "time-zone": "\(timeZone)"])
        for name in handlers.names {
            let actions = handlers.step(name) { $0.timeChanged(clockStep: clockStep, timeZone: timeZone) }
            if !actions.isEmpty { apply(name, actions) }
        }
    }
}
