/// UPower (`org.freedesktop.UPower`, on the system bus): whether the machine runs on battery, and the charge of its
/// display device (the aggregate battery a desktop shows).
package struct UPower: Sendable {
    /// UPower's bus name.
    package static let name = "org.freedesktop.UPower"
    static let path = "/org/freedesktop/UPower"
    static let interface = "org.freedesktop.UPower"
    static let devicePath = "/org/freedesktop/UPower/devices/DisplayDevice"
    static let deviceInterface = "org.freedesktop.UPower.Device"

    /// The power state Rouse cares about.
    package struct PowerState: Sendable, Equatable {
        /// `OnBattery`: no external power.
        package var onBattery: Bool
        /// The display device's `Percentage` (0–100), nil when there is no battery (`IsPresent` false).
        package var percentage: Double?

        /// A state.
        package init(onBattery: Bool, percentage: Double?) {
            self.onBattery = onBattery
            self.percentage = percentage
        }
    }

    let connection: DBusConnection

    /// UPower on `connection`.
    package init(connection: DBusConnection) { self.connection = connection }

    /// `OnBattery` and the display device's charge, now.
    package func state() async throws(DBusError) -> PowerState {
        let onBattery = try await connection.property(
            destination: Self.name, path: Self.path, interface: Self.interface, "OnBattery")
        let device = try? await connection.properties(
            destination: Self.name, path: Self.devicePath, interface: Self.deviceInterface)
        let present = device?["IsPresent"]?.bool ?? false
        return PowerState(onBattery: onBattery.bool ?? false, percentage: present ? device?["Percentage"]?.double : nil)
    }

    /// Calls `handler` (on the connection's loop) whenever `OnBattery` or the display device's properties change;
    /// it reads ``state()`` again itself.
    package func watch(_ handler: @escaping @Sendable () -> Void) async throws(DBusError) -> [DBusRegistration] {
        var registrations: [DBusRegistration] = []
        for path in [Self.path, Self.devicePath] {
            registrations.append(
                try await connection.subscribe(
                    DBusMatch(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")
                ) { _ in handler() })
        }
        return registrations
    }
}
