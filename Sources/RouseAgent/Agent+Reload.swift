import Logging
import RouseActivation
import RouseState

extension Agent {
    /// Applies a new set of handler configurations (SIGHUP): new handlers are added, removed ones are
    /// terminated and dropped, changed ones take the new settings (a changed file counts as registering the
    /// handler again: strikes are cleared).
    public func reload(handlers: [HandlerConfiguration]) async {
        let names = Set(handlers.map(\.name))
        for name in slots.keys.sorted() where !names.contains(name) {
            holderGone(name, reason: .terminatedByAgent)
            if let process = slots[name]?.process {
                control.kill(cgroup: process.cgroup, pgid: process.pid, pidfd: process.pidfd)
            }
            slots[name]?.connection?.close()
            slots.removeValue(forKey: name)
            // Unregistered: its preserved state and launch record go too.
            if (try? persistence?.preservation.forget(handler: name)) == nil {
                logger.warning("preserved state of a removed handler not deleted", metadata: ["handler": "\(name)"])
            }
            logger.info("handler removed", metadata: ["handler": "\(name)"])
        }
        for handler in handlers {
            if var slot = slots[handler.name] {
                guard slot.configuration != handler else { continue }
                slot.configuration = handler
                slot.machine.rules = handler.rules
                slots[handler.name] = slot
                apply(handler.name, slots[handler.name]!.machine.reregister())
                logger.info("handler updated", metadata: ["handler": "\(handler.name)"])
            } else {
                slots[handler.name] = Slot(configuration: handler, machine: HandlerMachine(rules: handler.rules))
                logger.info("handler added", metadata: ["handler": "\(handler.name)"])
            }
        }
        reportHandlers()
        await refreshTokens()
    }

    /// Per-user mode: the session's environment for the launches from now on (read again by the caller, off the
    /// agent, e.g. after the session exported a new display to the user manager and the unit was reloaded).
    public func reload(sessionEnvironment: [String: String]) {
        self.sessionEnvironment = sessionEnvironment
        logger.info("session environment reloaded", metadata: ["variables": "\(sessionEnvironment.count)"])
    }
}
