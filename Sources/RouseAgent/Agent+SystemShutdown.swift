import Logging
import RouseDBus

/// How the agent knows the system is going down (no termination notices then, as iOS at reboot): logind's
/// `PrepareForShutdown(true)` on the system bus, which `systemctl poweroff`/`reboot` (through logind) emit before
/// systemd stops the units. Followed by an agent with session integration (the bus is its session link's).
extension Agent {
    /// Without session integration: connects to ``AgentConfiguration/shutdownBus`` for `PrepareForShutdown` alone (the
    /// match rule lets only that signal through: no wake-up otherwise). The connection is the session link's, closed
    /// with it.
    func followSystemShutdown() async {
        guard configuration.session == nil, let bus = configuration.shutdownBus else { return }
        do throws(DBusError) {
            let connection = try await DBusConnection.connect(bus)
            session.connection = connection
            await watchSystemShutdown(connection)
        } catch {
            logger.warning("system shutdown not followed: logind's bus unreachable", metadata: ["error": "\(error)"])
        }
    }

    /// Subscribes to `PrepareForShutdown` on `connection` (logind's bus); the registration ends with the session link.
    func watchSystemShutdown(_ connection: DBusConnection) async {
        do throws(DBusError) {
            let registration = try await connection.subscribe(
                DBusMatch(
                    path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager",
                    member: "PrepareForShutdown")
            ) { signal in
                guard signal.arguments.first?.bool == true else { return }
                Task { await self.systemShutdownBegan() }
            }
            session.registrations.append(registration)
            logger.info("following logind's PrepareForShutdown")
        } catch {
            logger.warning("system shutdown not followed", metadata: ["error": "\(error)"])
        }
    }
}
