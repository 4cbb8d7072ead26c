import Logging
import RouseActivation
import RouseAgentCore
import RouseState

extension Agent {
    /// Applies a new set of handler configurations (SIGHUP): new handlers are added, removed ones are
    /// terminated and dropped, changed ones take the new settings (a changed file counts as registering the
    /// handler again: strikes are cleared).
    package func reload(handlers configurations: [HandlerConfiguration]) async {
        let names = Set(configurations.map(\.name))
        for name in handlers.names where !names.contains(name) {
            holderGone(name, reason: .terminatedByAgent)
            let lifecycle = handlers.machine(of: name)?.lifecycle
            let grace = handlers.configuration(of: name)?.rules.terminationGrace
            let (process, connection) = handlers.remove(name)
            voipHandlerGone(name)
            if process != nil || connection != nil {
                // Told and given its grace when it runs; its connection ends with its process (or the kill).
                terminate(
                    name, reason: .handlerRemoved, process: process, connection: connection, lifecycle: lifecycle,
                    grace: grace)
            }
            if !terminations.isPending(name) { connection?.close() }
            preservations.reset(name)
            // Unregistered: its preserved state and launch record go too.
            if (try? persistence?.preservation.forget(handler: name)) == nil {
                logger.warning("preserved state of a removed handler not deleted", metadata: ["handler": "\(name)"])
            }
            logger.info("handler removed", metadata: ["handler": "\(name)"])
        }
        for handler in configurations {
            if handlers.contains(handler.name) {
                guard handlers.reconfigure(handler) else { continue }
                apply(handler.name, handlers.step(handler.name) { $0.reregister() })
                logger.info("handler updated", metadata: ["handler": "\(handler.name)"])
            } else {
                handlers.add(handler, machine: HandlerMachine(rules: handler.rules))
                logger.info("handler added", metadata: ["handler": "\(handler.name)"])
            }
        }
        reportHandlers()
        await refreshTokens()
        // SIGHUP after an app was uninstalled: its UnifiedPush registration goes (docs/unifiedpush.md).
        await purgeUnifiedPush()
    }

    /// Per-user mode: the session's environment for the launches from now on (read again by the caller, off the
    /// agent, e.g. after the session exported a new display to the user manager and the unit was reloaded).
    package func reload(sessionEnvironment: [String: String]) {
        self.sessionEnvironment = sessionEnvironment
        if configuration.mode == .user { activations.sessionEnvironmentChanged(sessionEnvironment) }
        logger.info("session environment reloaded", metadata: ["variables": "\(sessionEnvironment.count)"])
    }
}
