import Glibc

/// Pressure stall information (PSI, Documentation/accounting/psi.rst): triggers on `/proc/pressure/memory` or a
/// cgroup v2 `memory.pressure` file, and the wait for them.
extension Sys {
    /// Opens `path` (a PSI file) and writes `trigger` (`some 150000 1000000`) into it with the NUL the kernel expects:
    /// the descriptor then reports `POLLPRI` each time the stall passes the threshold in a window. Needs root (or
    /// CAP_SYS_RESOURCE) for windows that are not multiples of 2 s on older kernels; EINVAL for a trigger the kernel
    /// refuses, ENOTSUP/EOPNOTSUPP where PSI is disabled.
    package static func openPressureTrigger(_ path: String, trigger: String) throws(SystemError) -> Int32 {
        let fd = try open(path, O_RDWR | O_NONBLOCK)
        let bytes = Array(trigger.utf8) + [0]
        let written = retrying { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }
        if written < 0 {
            let error = SystemError(call: "write", code: .current, path: path)
            close(fd)
            throw error
        }
        return fd
    }

    /// Waits until `trigger` reports pressure (`POLLPRI`) or `stop` (an eventfd) becomes readable: `.pressure`,
    /// `.stopped`, or `.failed` when the trigger's file went away (`POLLERR`: its cgroup was removed). Sleeps in
    /// `poll(2)` with no timeout: no wake-up without pressure.
    package static func waitForPressure(_ trigger: Int32, stop: Int32) -> PressureWait {
        var fds = [
            pollfd(fd: trigger, events: Int16(POLLPRI), revents: 0),
            pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let result = Glibc.poll(&fds, 2, -1)
            if result < 0 {
                if Glibc.errno == EINTR { continue }
                return .failed
            }
            if fds[1].revents != 0 { return .stopped }
            if fds[0].revents & Int16(POLLERR | POLLNVAL) != 0 { return .failed }
            if fds[0].revents & Int16(POLLPRI) != 0 { return .pressure }
        }
    }

    /// What ``waitForPressure(_:stop:)`` saw.
    package enum PressureWait: Sendable, Equatable {
        case pressure, stopped, failed
    }

    /// The `total=` stall counter (microseconds) of the `some` or `full` line of a PSI file; nil when unreadable.
    package static func pressureTotal(_ path: String, full: Bool) -> Int64? {
        guard let text = readText(path, maxBytes: 4096) else { return nil }
        let prefix = full ? "full " : "some "
        for line in text.split(separator: "\n") where line.hasPrefix(prefix) {
            for field in line.split(separator: " ") where field.hasPrefix("total=") {
                return Int64(field.dropFirst("total=".count))
            }
        }
        return nil
    }
}
