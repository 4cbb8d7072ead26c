import CRouseSys
import Glibc

// Socket files and timeouts: rouse-pushd's API socket and its clients. Errno policy as in `Syscalls.swift`.

extension Sys.FileStatus {
    /// A socket file.
    package var isSocket: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFSOCK) }
}

extension Sys {
    /// `fchmod(2)`: a socket's mode before `bind`, so its file never exists with a wider one.
    package static func changeMode(_ fd: Int32, _ mode: mode_t) throws(SystemError) {
        _ = try check("fchmod", fchmod(fd, mode))
    }

    /// `chmod(2)`.
    package static func changeMode(path: String, _ mode: mode_t) throws(SystemError) {
        _ = try check("chmod", chmod(path, mode), path: path)
    }
}

extension Sys {
    /// `SO_RCVTIMEO`: a blocking read on `fd` gives up (EAGAIN, thrown) after `seconds`.
    package static func setReceiveTimeout(_ fd: Int32, seconds: Int) throws(SystemError) {
        var value = timeval(tv_sec: seconds, tv_usec: 0)
        _ = try check(
            "setsockopt", setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size)))
    }
}

extension Sys {
    /// `chown(2)`: `uid` and `gid` (nil: left as they are).
    package static func changeOwner(path: String, uid: UInt32?, gid: UInt32?) throws(SystemError) {
        _ = try check("chown", chown(path, uid ?? UInt32.max, gid ?? UInt32.max), path: path)
    }
}
