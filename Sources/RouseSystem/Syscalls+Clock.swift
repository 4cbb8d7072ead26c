import CRouseSys
import Glibc

// Wall-clock steps and time-zone changes, for the agent's `timeChanged` (docs/handler-protocol.md): a `timerfd` on
// CLOCK_REALTIME with `TFD_TIMER_CANCEL_ON_SET`, armed for the far future so it never expires, whose read fails with
// ECANCELED when the clock is set (by NTP, `date -s`, `clock_settime`); and inotify on the directory of
// `/etc/localtime` (a symlink that `timedatectl set-timezone` replaces). Neither wakes the process otherwise. Errno
// policy as in `Syscalls.swift`; ECANCELED on the timerfd is a value (the step), EAGAIN too (nothing happened).

extension Sys {
    /// What a non-blocking read of the clock-step descriptor found.
    package enum ClockStepRead: Sendable, Equatable {
        /// The clock was set since the last read.
        case stepped
        /// Nothing (EAGAIN).
        case nothing
    }

    /// A non-blocking, close-on-exec `timerfd` on CLOCK_REALTIME armed (absolute, `TFD_TIMER_CANCEL_ON_SET`) at a time
    /// it never reaches: readable only when the clock is set.
    package static func clockStepDescriptor() throws(SystemError) -> Int32 {
        let fd = try check("timerfd_create", timerfd_create(CLOCK_REALTIME, Int32(TFD_CLOEXEC | TFD_NONBLOCK)))
        var spec = itimerspec()
        spec.it_value.tv_sec = 1 << 40  // about 34 000 years from 1970
        let flags = Int32(TFD_TIMER_ABSTIME) | Int32(TFD_TIMER_CANCEL_ON_SET)
        if timerfd_settime(fd, flags, &spec, nil) < 0 {
            let error = SystemError(call: "timerfd_settime", code: .current)
            close(fd)
            throw error
        }
        return fd
    }

    /// Reads the clock-step descriptor: `.stepped` once per set of the clock (the kernel's ECANCELED; the timer stays
    /// armed for the next), `.nothing` otherwise.
    package static func readClockStep(_ fd: Int32) throws(SystemError) -> ClockStepRead {
        var expirations: UInt64 = 0
        let result = retrying { Glibc.read(fd, &expirations, 8) }
        if result >= 0 { return .nothing }  // cannot expire before its far-future time; nothing to report
        switch Glibc.errno {
        case ECANCELED: return .stepped
        case EAGAIN: return .nothing
        default: throw SystemError(call: "read", code: .current)
        }
    }

    /// Sets CLOCK_REALTIME (`clock_settime(2)`) to `unixMicroseconds`. The clock-step test sets it to the value it just
    /// read (RouseClock's `wallMicroseconds`): a step of a few microseconds, harmless to the machine, which the kernel
    /// still reports as a set (every `clock_settime` is one, whatever the value). Needs CAP_SYS_TIME.
    package static func setRealtimeClock(unixMicroseconds: Int64) throws(SystemError) {
        var spec = timespec()
        spec.tv_sec = time_t(unixMicroseconds / 1_000_000)
        spec.tv_nsec = Int(unixMicroseconds % 1_000_000) * 1000
        _ = try check("clock_settime", clock_settime(CLOCK_REALTIME, &spec))
    }

    /// A non-blocking, close-on-exec inotify descriptor watching `directory` for entries created, moved in, replaced
    /// or deleted (the time-zone link `/etc/localtime` is replaced by a rename).
    package static func watchDirectoryEntries(_ directory: String) throws(SystemError) -> Int32 {
        let fd = try check("inotify_init1", inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK)))
        let mask = UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_CLOSE_WRITE | IN_ATTRIB)
        if inotify_add_watch(fd, directory, mask) < 0 {
            let error = SystemError(call: "inotify_add_watch", code: .current, path: directory)
            close(fd)
            throw error
        }
        return fd
    }

    /// Drains the inotify descriptor: the names of the entries that changed (EAGAIN: none left).
    package static func readChangedNames(_ fd: Int32) throws(SystemError) -> [String] {
        var names: [String] = []
        let size = 4096
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let count = retrying { Glibc.read(fd, buffer.baseAddress, size) }
            if count < 0 {
                if Glibc.errno == EAGAIN { return names }
                throw SystemError(call: "read", code: .current)
            }
            if count == 0 { return names }
            var offset = 0
            let header = MemoryLayout<inotify_event>.size
            while offset + header <= count {
                let length = Int(buffer.load(fromByteOffset: offset + 12, as: UInt32.self))
                let start = offset + header
                let end = min(count, start + length)
                if end > start {
                    let bytes = UnsafeRawBufferPointer(rebasing: buffer[start..<end]).prefix { $0 != 0 }
                    names.append(String(decoding: bytes, as: UTF8.self))
                }
                offset = start + length
            }
        }
    }
}
