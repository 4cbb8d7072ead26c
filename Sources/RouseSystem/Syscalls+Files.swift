import Glibc

// Files and directories: the state store's sealed files, the agent's transfer spool and cgroup files, /proc and
// sysfs. Errno policy as in `Syscalls.swift`; every error names the path.

extension Sys {
    /// What Rouse needs of a `stat`.
    package struct FileStatus: Sendable, Equatable {
        /// Owner.
        package var uid: UInt32
        /// Group.
        package var gid: UInt32
        /// Type and permission bits (`st_mode`).
        package var mode: UInt32
        /// Size in bytes.
        package var size: Int64

        package init(uid: UInt32, gid: UInt32, mode: UInt32, size: Int64) {
            self.uid = uid
            self.gid = gid
            self.mode = mode
            self.size = size
        }

        init(_ info: stat) {
            self.init(uid: info.st_uid, gid: info.st_gid, mode: UInt32(info.st_mode), size: Int64(info.st_size))
        }

        package var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }
        package var isRegular: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }
        package var isSymbolicLink: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFLNK) }
        /// Writable by the group or by others.
        package var writableByOthers: Bool { mode & 0o022 != 0 }
        /// The sticky bit: in such a directory only an entry's owner (or root) may rename or remove it.
        package var sticky: Bool { mode & UInt32(S_ISVTX) != 0 }
        /// Permission bits in octal, e.g. `0755`.
        package var octal: String { "0" + String(mode & 0o7777, radix: 8) }
    }

    /// `open(2)` with `O_CLOEXEC` added to `flags`; `mode` for a file it creates.
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o600) throws(SystemError) -> Int32 {
        try check("open", retrying { Glibc.open(path, flags | O_CLOEXEC, mode) }, path: path)
    }

    /// Creates a new file that must not exist (`O_CREAT|O_EXCL`), mode 0600, for writing.
    package static func createExclusive(_ path: String) throws(SystemError) -> Int32 {
        try open(path, O_WRONLY | O_CREAT | O_EXCL)
    }

    /// Opens a directory (for `fsync`).
    package static func openDirectory(_ path: String) throws(SystemError) -> Int32 {
        try open(path, O_RDONLY | O_DIRECTORY)
    }

    /// Opens (creating, mode 0600) a spool file for reading and writing; a symbolic link is refused.
    package static func openSpool(_ path: String) throws(SystemError) -> Int32 {
        try open(path, O_RDWR | O_CREAT | O_NOFOLLOW)
    }

    /// Opens a file read-only; a symbolic link is refused.
    package static func openReadOnly(_ path: String) throws(SystemError) -> Int32 {
        try open(path, O_RDONLY | O_NOFOLLOW)
    }

    /// Writes every byte of `bytes` to a blocking descriptor (short writes continue).
    package static func writeAll(_ fd: Int32, _ bytes: some Collection<UInt8>, path: String?) throws(SystemError) {
        let array = Array(bytes)
        var offset = 0
        while offset < array.count {
            let n = retrying {
                array.withUnsafeBytes { raw in
                    let rest = UnsafeRawBufferPointer(rebasing: raw[offset...])
                    return Glibc.write(fd, rest.baseAddress, rest.count)
                }
            }
            offset += try check("write", n, path: path)
        }
    }

    /// Writes all of `bytes` at `offset` (`pwrite(2)`).
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(SystemError) {
        var done = 0
        while done < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[done...])
            let n = retrying { pwrite(fd, rest.baseAddress, rest.count, off_t(offset) + off_t(done)) }
            done += try check("pwrite", n)
        }
    }

    /// Reads up to `buffer.count` bytes at `offset` (`pread(2)`): the count, 0 at the end.
    package static func readSome(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64)
        throws(SystemError) -> Int
    {
        try check("pread", retrying { pread(fd, buffer.baseAddress, buffer.count, off_t(offset)) })
    }

    /// Reads up to `buffer.count` bytes (`read(2)`): the count, 0 at the end.
    package static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        try check("read", retrying { Glibc.read(fd, buffer.baseAddress, buffer.count) })
    }

    /// Cuts the file to `length` bytes.
    package static func truncate(_ fd: Int32, to length: Int64) throws(SystemError) {
        _ = try check("ftruncate", retrying { ftruncate(fd, off_t(length)) })
    }

    /// Copies `count` bytes of `source` (from its start) into `destination` (from its start), 1 MiB at a time;
    /// EIO when `source` holds fewer bytes.
    package static func copy(from source: Int32, to destination: Int32, count: Int64) throws(SystemError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var copied: Int64 = 0
        while copied < count {
            let read = try readSome(source, into: buffer, at: copied)
            if read == 0 { break }
            try writeAll(destination, UnsafeRawBufferPointer(rebasing: buffer[..<read]), at: copied)
            copied += Int64(read)
        }
        guard copied == count else { throw SystemError(call: "copy (the file shrank)", code: .ioError) }
    }

    /// `fsync(2)`.
    package static func fsync(_ fd: Int32, path: String?) throws(SystemError) {
        _ = try check("fsync", retrying { Glibc.fsync(fd) }, path: path)
    }

    /// `rename(2)`: atomically replaces `to`.
    package static func rename(_ from: String, _ to: String) throws(SystemError) {
        _ = try check("rename", Glibc.rename(from, to), path: to)
    }

    /// `unlink(2)`; `false` when the file was already gone.
    @discardableResult
    package static func remove(_ path: String) throws(SystemError) -> Bool {
        if unlink(path) == 0 { return true }
        if Glibc.errno == ENOENT { return false }
        throw SystemError(call: "unlink", code: .current, path: path)
    }

    /// `mkdir(2)`; an existing directory is fine.
    package static func makeDirectory(_ path: String, mode: mode_t = 0o700) throws(SystemError) {
        if mkdir(path, mode) == 0 || Glibc.errno == EEXIST { return }
        throw SystemError(call: "mkdir", code: .current, path: path)
    }

    /// Creates a directory and its parents, mode 0700 (existing ones are fine).
    package static func makeDirectories(_ path: String) throws(SystemError) {
        var current = ""
        for part in path.split(separator: "/") {
            current += "/" + part
            try makeDirectory(current)
        }
    }

    /// `rmdir(2)`; `false` when it failed (a cgroup still populated stays).
    @discardableResult
    package static func removeDirectory(_ path: String) -> Bool { rmdir(path) == 0 }

    /// `stat(2)` (`follow`) or `lstat(2)`; `nil` when the path does not exist.
    package static func status(_ path: String, follow: Bool = true) throws(SystemError) -> FileStatus? {
        var info = stat()
        if (follow ? stat(path, &info) : lstat(path, &info)) == 0 { return FileStatus(info) }
        if Glibc.errno == ENOENT { return nil }
        throw SystemError(call: follow ? "stat" : "lstat", code: .current, path: path)
    }

    /// `fstat(2)` of an open file.
    package static func status(_ fd: Int32) throws(SystemError) -> FileStatus {
        var info = stat()
        _ = try check("fstat", fstat(fd, &info))
        return FileStatus(info)
    }

    /// Size of an open file and whether it is a regular file; nil when `fstat` fails.
    package static func fileSize(_ fd: Int32) -> (size: Int64, regular: Bool)? {
        (try? status(fd)).map { ($0.size, $0.isRegular) }
    }

    /// Size of the file at `path` (a link itself, not followed); 0 when it is missing or cannot be read.
    package static func fileSize(path: String) -> Int64 {
        ((try? status(path, follow: false)) ?? nil)?.size ?? 0
    }

    /// The whole content of a file; `nil` when it does not exist.
    package static func readFile(_ path: String) throws(SystemError) -> [UInt8]? {
        let fd = retrying { Glibc.open(path, O_RDONLY | O_CLOEXEC) }
        if fd < 0 {
            if Glibc.errno == ENOENT { return nil }
            throw SystemError(call: "open", code: .current, path: path)
        }
        defer { close(fd) }
        return try readToEnd(fd, path: path)
    }

    /// Everything left to read on `fd` (standard input, a pipe), until its end.
    package static func readToEnd(_ fd: Int32, path: String? = nil) throws(SystemError) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { raw in retrying { Glibc.read(fd, raw.baseAddress, raw.count) } }
            if n == 0 { return result }
            result.append(contentsOf: chunk[0..<(try check("read", n, path: path))])
        }
    }

    /// Up to `maxBytes` of a small text file (`/proc`, sysfs, cgroup files); `nil` when it cannot be opened (a
    /// process that is gone, a file that is not ours to read). A read error ends the text where it happened.
    package static func readText(_ path: String, maxBytes: Int = .max) -> String? {
        let fd = retrying { Glibc.open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: min(4096, maxBytes))
        while result.count < maxBytes {
            let want = min(buffer.count, maxBytes - result.count)
            let count = buffer.withUnsafeMutableBytes { raw in retrying { Glibc.read(fd, raw.baseAddress, want) } }
            if count <= 0 { break }
            result += buffer.prefix(count)
        }
        return String(decoding: result, as: UTF8.self)
    }

    /// Writes `text` to an existing file (cgroup control files) in one `write(2)`.
    package static func writeFile(_ path: String, _ text: String) throws(SystemError) {
        let fd = try open(path, O_WRONLY)
        defer { close(fd) }
        let bytes = Array(text.utf8)
        _ = try check(
            "write", retrying { bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } }, path: path)
    }

    /// The names in a directory (without `.` and `..`).
    package static func directoryEntries(_ path: String) throws(SystemError) -> [String] {
        guard let directory = opendir(path) else { throw SystemError(call: "opendir", code: .current, path: path) }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// `readlink(2)`; `nil` when it is not a link or cannot be read (`/proc/PID/exe` of a process that is gone).
    package static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `realpath(3)`; `nil` when the path does not resolve.
    package static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Whether `path` is writable by us (`access(2)`).
    package static func writable(_ path: String) -> Bool { access(path, W_OK) == 0 }

    /// Whether `path` exists (`access(2)`).
    package static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The environment variable `name`, if set.
    package static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}
