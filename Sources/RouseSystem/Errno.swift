import Glibc

/// An `errno` value, as an open set of codes with names for the ones Rouse tests (modelled on swift-system's
/// `Errno`; the package does not depend on swift-system for this one small type). An unknown value survives as
/// its raw number.
package struct Errno: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The `errno` number.
    package let rawValue: Int32

    package init(rawValue: Int32) { self.rawValue = rawValue }

    /// The `errno` the calling thread holds right now.
    static var current: Errno { Errno(rawValue: Glibc.errno) }

    /// `EINTR`: a signal interrupted the call (retried by every wrapper).
    package static let interrupted = Errno(rawValue: EINTR)
    /// `EAGAIN`/`EWOULDBLOCK`: a non-blocking call found nothing to do.
    package static let wouldBlock = Errno(rawValue: EAGAIN)
    /// `EBADF`: not an open descriptor (thrown, see the policy in `Syscalls.swift`).
    package static let badFileDescriptor = Errno(rawValue: EBADF)
    /// `EBUSY` (a cgroup holding processes asked to hand controllers to its children).
    package static let busy = Errno(rawValue: EBUSY)
    /// `ENOENT`.
    package static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// `EEXIST`.
    package static let fileExists = Errno(rawValue: EEXIST)
    /// `ESRCH`: the process is gone.
    package static let noSuchProcess = Errno(rawValue: ESRCH)
    /// `EPIPE`: the reader went away.
    package static let brokenPipe = Errno(rawValue: EPIPE)
    /// `ENOBUFS`: no buffer space (on netlink: events were lost).
    package static let noBufferSpace = Errno(rawValue: ENOBUFS)
    /// `EMFILE`.
    package static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    /// `ENFILE`.
    package static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    /// `ENOMEM`.
    package static let noMemory = Errno(rawValue: ENOMEM)
    /// `EACCES`.
    package static let permissionDenied = Errno(rawValue: EACCES)
    /// `EPERM`.
    package static let notPermitted = Errno(rawValue: EPERM)
    /// `ECONNREFUSED`.
    package static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    /// `ENAMETOOLONG`.
    package static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
    /// `EIO`.
    package static let ioError = Errno(rawValue: EIO)

    /// A shortage that passes (descriptors, memory, processes, buffers): worth trying again shortly.
    package var isShortage: Bool { [EMFILE, ENFILE, ENOMEM, EAGAIN, ENOBUFS].contains(rawValue) }

    /// `strerror(3)`.
    package var description: String { String(cString: strerror(rawValue)) }
}
