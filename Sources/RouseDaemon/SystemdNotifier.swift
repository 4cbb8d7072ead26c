import RouseSystem

/// The systemd notify protocol (`sd_notify`): a datagram to `$NOTIFY_SOCKET`, so the unit can be `Type=notify`.
/// Without `$NOTIFY_SOCKET` (not started by systemd) it does nothing.
package enum SystemdNotifier {
    /// Sends `state` (`READY=1`, `WATCHDOG=1`, `STOPPING=1`, `STATUS=…`); does nothing outside systemd.
    package static func notify(_ state: String) {
        guard let path = Sys.environment("NOTIFY_SOCKET"), !path.isEmpty else { return }
        notify(state, socket: path)
    }

    /// Sends `state` to the notify socket at `path` without waiting: a daemon's only loop thread sends its
    /// `WATCHDOG=1`s, and a receiver that stops reading (its queue holds `net.unix.max_dgram_qlen` datagrams) must
    /// cost a dropped datagram, not a loop blocked in `sendto`. Returns whether the datagram was queued.
    @discardableResult
    package static func notify(_ state: String, socket path: String) -> Bool {
        Sys.sendDatagram(state, toUnixPath: path)
    }
}
