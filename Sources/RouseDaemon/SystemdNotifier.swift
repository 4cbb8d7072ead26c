import Glibc

/// The systemd notify protocol (`sd_notify`): a datagram to `$NOTIFY_SOCKET`, so the unit can be `Type=notify`.
/// Without `$NOTIFY_SOCKET` (not started by systemd) it does nothing.
package enum SystemdNotifier {
    /// Sends `state` (`READY=1`, `WATCHDOG=1`, `STOPPING=1`, `STATUS=…`); does nothing outside systemd.
    package static func notify(_ state: String) {
        guard let path = getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), !path.isEmpty else { return }
        notify(state, socket: path)
    }

    /// Sends `state` to the notify socket at `path` without waiting: a daemon's only loop thread sends its
    /// `WATCHDOG=1`s, and a receiver that stops reading (its queue holds `net.unix.max_dgram_qlen` datagrams) must
    /// cost a dropped datagram, not a loop blocked in `sendto`. Returns whether the datagram was queued.
    @discardableResult
    package static func notify(_ state: String, socket path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        // "@name" is an abstract socket: a leading NUL byte.
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes.first == 0 ? 0 : 1))
        let sent = state.withCString { text in
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    sendto(fd, text, strlen(text), Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), socketAddress, length)
                }
            }
        }
        return sent >= 0
    }
}
