import Glibc

/// An `errno` value, as an open set of codes with names for the ones Rouse tests (modelled on swift-system's
/// `Errno`; the package does not depend on swift-system for this one small type). An unknown value survives as
/// its raw number.
public struct Errno: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The `errno` number.
    public let rawValue: Int32

    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The `errno` the calling thread holds right now.
    static var current: Errno { Errno(rawValue: Glibc.errno) }

    /// `EINTR`: a signal interrupted the call (retried by every wrapper).
    public static let interrupted = Errno(rawValue: EINTR)
    /// `EAGAIN`/`EWOULDBLOCK`: a non-blocking call found nothing to do.
    public static let wouldBlock = Errno(rawValue: EAGAIN)
    /// `EBADF`: not an open descriptor (thrown, see the policy in `Syscalls.swift`).
    public static let badFileDescriptor = Errno(rawValue: EBADF)
    /// `ENOENT`.
    public static let noSuchFileOrDirectory = Errno(rawValue: ENOENT)
    /// `EEXIST`.
    public static let fileExists = Errno(rawValue: EEXIST)
    /// `ESRCH`: the process is gone.
    public static let noSuchProcess = Errno(rawValue: ESRCH)
    /// `EPIPE`: the reader went away.
    public static let brokenPipe = Errno(rawValue: EPIPE)
    /// `ENOBUFS`: no buffer space (on netlink: events were lost).
    public static let noBufferSpace = Errno(rawValue: ENOBUFS)
    /// `EMFILE`.
    public static let tooManyOpenFiles = Errno(rawValue: EMFILE)
    /// `ENFILE`.
    public static let tooManyOpenFilesInSystem = Errno(rawValue: ENFILE)
    /// `ENOMEM`.
    public static let noMemory = Errno(rawValue: ENOMEM)
    /// `EACCES`.
    public static let permissionDenied = Errno(rawValue: EACCES)
    /// `EPERM`.
    public static let notPermitted = Errno(rawValue: EPERM)
    /// `ECONNREFUSED`.
    public static let connectionRefused = Errno(rawValue: ECONNREFUSED)
    /// `ENAMETOOLONG`.
    public static let nameTooLong = Errno(rawValue: ENAMETOOLONG)
    /// `EIO`.
    public static let ioError = Errno(rawValue: EIO)

    /// A shortage that passes (descriptors, memory, processes, buffers): worth trying again shortly.
    public var isShortage: Bool { [EMFILE, ENFILE, ENOMEM, EAGAIN, ENOBUFS].contains(rawValue) }

    /// `strerror(3)`.
    public var description: String { String(cString: strerror(rawValue)) }
}
