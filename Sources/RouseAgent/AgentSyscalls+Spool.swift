import Glibc
import RouseAgentClient

/// The transfer spool's syscalls, in the agent's one syscall layer. Errno policy as in
/// ``AgentSyscalls``: `EINTR` retried, everything else thrown as ``AgentError`` with the call's name.
extension AgentSyscalls {
    /// Opens (creating, mode 0600) a spool file for reading and writing, close-on-exec.
    static func openSpool(_ path: String) throws(AgentError) -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .system("open \(path)", errno) }
        return fd
    }

    /// Opens a spool file read-only (the descriptor a handler is given), close-on-exec.
    static func openReadOnly(_ path: String) throws(AgentError) -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw .system("open \(path)", errno) }
        return fd
    }

    /// Size of the open file, and whether it is a regular file.
    static func fileSize(_ fd: Int32) -> (size: Int64, regular: Bool)? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return (Int64(info.st_size), (info.st_mode & S_IFMT) == S_IFREG)
    }

    /// Size of the file at `path` (0 when missing).
    static func fileSize(path: String) -> Int64 {
        var info = stat()
        return lstat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    /// Writes all of `bytes` at `offset`.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(AgentError) {
        guard let base = bytes.baseAddress else { return }  // no address: nothing to write
        var done = 0
        while done < bytes.count {
            let written = pwrite(fd, base + done, bytes.count - done, off_t(offset) + off_t(done))
            if written < 0 {
                if errno == EINTR { continue }
                throw .system("pwrite", errno)
            }
            done += written
        }
    }

    /// Reads up to `buffer.count` bytes at `offset`: the count, 0 at the end.
    static func readSome(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(AgentError)
        -> Int
    {
        while true {
            let count = pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 { return count }
            if errno == EINTR { continue }
            throw .system("pread", errno)
        }
    }

    /// Cuts the file to `length` bytes.
    static func truncate(_ fd: Int32, to length: Int64) throws(AgentError) {
        guard ftruncate(fd, off_t(length)) == 0 else { throw .system("ftruncate", errno) }
    }

    /// Copies `count` bytes of `source` (from its start) into `destination` (from its start), 1 MiB at a time.
    static func copy(from source: Int32, to destination: Int32, count: Int64) throws(AgentError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        while copied < count {
            let read = try readSome(source, into: buffer, at: copied)
            if read == 0 { break }
            try writeAll(destination, UnsafeRawBufferPointer(rebasing: buffer[..<read]), at: copied)
            copied += Int64(read)
        }
        guard copied == count else { throw .system("copy (the file shrank)", EIO) }
    }

    /// Removes a file (missing is fine).
    static func removeFile(_ path: String) { _ = unlink(path) }

    /// Creates a directory and its parents, mode 0700.
    static func makeDirectories(_ path: String) throws(AgentError) {
        var current = ""
        for part in path.split(separator: "/") {
            current += "/" + part
            if mkdir(current, 0o700) != 0 && errno != EEXIST { throw .system("mkdir \(current)", errno) }
        }
    }

    /// Sends a frame with `descriptor` attached (`SCM_RIGHTS`), never blocking.
    static func write(_ fd: Int32, _ bytes: [UInt8], descriptor: Int32) throws(AgentError) {
        let code = DescriptorPassing.send(fd, bytes, descriptor: descriptor, nonBlocking: true)
        guard code == 0 else { throw .system("sendmsg", code) }
    }
}
