import Glibc

// The only file of RouseState that calls libc.
//
// errno policy:
// - EINTR: retried here, callers never see it;
// - ENOENT where absence is an answer (reading, removing, stat): a value (`nil`, `false`), not an error;
// - EEXIST on `mkdir`: a value (the directory is there);
// - EBADF on a descriptor we opened: a bug, so `preconditionFailure`;
// - everything else the kernel or the disk can cause (EACCES, ENOSPC, EIO, EROFS, EMFILE, …): thrown as a
//   `StateError` naming the call and the file.

/// Thin, typed wrappers around the file system calls the sealed-file store needs.
enum FileSystem {
    /// Metadata of a file.
    struct Status: Sendable {
        let mode: UInt32
        let owner: UInt32
        let size: Int
        let isRegular: Bool
    }

    private static func check(_ call: String, _ result: Int32, _ file: String) throws(StateError) -> Int32 {
        if result >= 0 { return result }
        let e = Glibc.errno
        if e == EBADF { preconditionFailure("\(call) on a descriptor we do not own (EBADF)") }
        throw StateError.system(call, errno: e, file: file)
    }

    private static func retrying(_ body: () -> Int32) -> Int32 {
        while true {
            let r = body()
            if r >= 0 || Glibc.errno != EINTR { return r }
        }
    }

    /// `close(2)`: errors other than EBADF are ignored (the descriptor is gone either way).
    static func close(_ fd: Int32) {
        if Glibc.close(fd) < 0 && Glibc.errno == EBADF {
            preconditionFailure("close on a descriptor we do not own (EBADF)")
        }
    }

    /// Creates a new file that must not exist (`O_CREAT|O_EXCL|O_CLOEXEC`), mode 0600, for writing.
    static func createExclusive(_ path: String) throws(StateError) -> Int32 {
        try check("open", retrying { open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600) }, path)
    }

    /// Opens a directory for `fsync`.
    static func openDirectory(_ path: String) throws(StateError) -> Int32 {
        try check("open", retrying { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }, path)
    }

    /// Writes every byte of `bytes` (loops over short writes).
    static func writeAll(_ fd: Int32, _ bytes: some Collection<UInt8>, file: String) throws(StateError) {
        let array = Array(bytes)
        var offset = 0
        while offset < array.count {
            let n = array.withUnsafeBytes { buffer in
                Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                _ = try check("write", -1, file)
            }
            offset += n
        }
    }

    /// `fsync(2)`.
    static func fsync(_ fd: Int32, file: String) throws(StateError) {
        _ = try check("fsync", retrying { Glibc.fsync(fd) }, file)
    }

    /// `rename(2)`: atomically replaces `to`.
    static func rename(_ from: String, _ to: String) throws(StateError) {
        _ = try check("rename", Glibc.rename(from, to), to)
    }

    /// `unlink(2)`; `false` when the file was already gone.
    @discardableResult
    static func remove(_ path: String) throws(StateError) -> Bool {
        if unlink(path) == 0 { return true }
        if Glibc.errno == ENOENT { return false }
        _ = try check("unlink", -1, path)
        return false
    }

    /// `mkdir(2)` with mode 0700; an existing directory is fine.
    static func makeDirectory(_ path: String) throws(StateError) {
        if mkdir(path, 0o700) == 0 || Glibc.errno == EEXIST { return }
        _ = try check("mkdir", -1, path)
    }

    /// `stat(2)`; `nil` when the file does not exist.
    static func status(_ path: String) throws(StateError) -> Status? {
        var s = stat()
        if stat(path, &s) != 0 {
            if Glibc.errno == ENOENT { return nil }
            _ = try check("stat", -1, path)
        }
        return Status(
            mode: s.st_mode, owner: s.st_uid, size: Int(s.st_size), isRegular: (s.st_mode & S_IFMT) == S_IFREG)
    }

    /// The whole content of a file; `nil` when it does not exist.
    static func read(_ path: String) throws(StateError) -> [UInt8]? {
        let fd = retrying { open(path, O_RDONLY | O_CLOEXEC) }
        if fd < 0 {
            if Glibc.errno == ENOENT { return nil }
            _ = try check("open", -1, path)
        }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 {
                if Glibc.errno == EINTR { continue }
                _ = try check("read", -1, path)
            }
            if n == 0 { return result }
            result.append(contentsOf: chunk[0..<n])
        }
    }

    /// The names in a directory (without `.` and `..`).
    static func list(_ path: String) throws(StateError) -> [String] {
        guard let dir = opendir(path) else {
            _ = try check("opendir", -1, path)
            return []
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The effective user id of this process.
    static var userID: UInt32 { geteuid() }

    /// The environment variable `name`, if set.
    static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
