import Logging
import RouseDBus

/// How the agent knows the system is going down (no termination notices then, as iOS at reboot): logind's
/// `PrepareForShutdown(true)` on the system bus, which `systemctl poweroff`/`reboot` (through logind) emit before
/// systemd stops the units. Followed by an agent with session integration (the bus is its session link's).
extension Agent {
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
        } catch {
            logger.warning("system shutdown not followed", metadata: ["error": "\(error)"])
        }
    }
}
