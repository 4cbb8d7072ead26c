import Glibc

// Which file a path or descriptor names, as the kernel's lists (`/proc/locks`) name it: device and inode.
// Errno policy as in `Syscalls.swift`: a path that does not resolve or cannot be looked at is nil, not an error
// (the callers look at files other programs own, which may go away at any time).

extension Sys {
    /// A file's identity: the device's major and minor numbers and the inode number.
    package struct FileIdentity: Sendable, Hashable, CustomStringConvertible {
        /// The device's major number.
        package var major: UInt32
        /// The device's minor number.
        package var minor: UInt32
        /// The inode number.
        package var inode: UInt64

        package init(major: UInt32, minor: UInt32, inode: UInt64) {
            self.major = major
            self.minor = minor
            self.inode = inode
        }

        /// `fe:00:16225328` (hex major and minor, decimal inode: how `/proc/locks` prints it).
        package var description: String {
            String(major, radix: 16) + ":" + String(minor, radix: 16) + ":" + String(inode)
        }
    }

    /// `stat(2)` (following links, as `/proc/PID/fd/N` needs) to the file's identity; nil when it cannot be looked at.
    package static func fileIdentity(_ path: String) -> FileIdentity? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let device = UInt64(info.st_dev)
        // glibc's gnu_dev_major/gnu_dev_minor (macros Swift does not import).
        let major = UInt32(truncatingIfNeeded: ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff)))
        let minor = UInt32(truncatingIfNeeded: (device & 0xff) | ((device >> 12) & ~UInt64(0xff)))
        return FileIdentity(major: major, minor: minor, inode: UInt64(info.st_ino))
    }
}
