import RouseSystem
import RouseText

/// A step of the atomic write sequence. A fault hook is called before each; a crash there leaves the disk as
/// the previous steps left it.
package enum WriteStep: String, Sendable, CaseIterable {
    /// Before the temp file `.<name>.tmp-XXXXXX` is created in the same directory.
    case createTemp = "create-temp"
    /// Temp file created, nothing written.
    case writeFirstHalf = "write-first-half"
    /// Half of the bytes written to the temp file.
    case writeSecondHalf = "write-second-half"
    /// Every byte written, not yet synced.
    case fsyncTemp = "fsync-temp"
    /// Temp file synced, not yet renamed over the final name.
    case rename = "rename"
    /// Renamed; the directory entry is not yet synced.
    case fsyncDirectory = "fsync-directory"
    /// Everything done (the hook sees the finished state).
    case done = "done"
}

/// A hook called before each `WriteStep`: tests throw or kill the process there to simulate a crash.
package typealias WriteFaultHook = @Sendable (WriteStep, _ path: String) throws(StateError) -> Void

/// Replaces files atomically and durably, the way trusted daemons do: temp file in the same directory
/// (`O_CREAT|O_EXCL`, 0600), write, `fsync`, `rename` over the final name, `fsync` of the directory.
/// A reader sees the old content or the new one, never a mix, even after a power cut. The package's one atomic
/// write: the sealed stores and the agent's JSON state file both use it.
package struct AtomicWriter: Sendable {
    /// Prefix of every temp file; `cleanStaleTemps` removes files that carry it.
    static let tempMarker = ".tmp-"

    let directory: String
    var faultHook: WriteFaultHook?

    package init(directory: String, faultHook: WriteFaultHook? = nil) {
        self.directory = directory
        self.faultHook = faultHook
    }

    /// Whether `name` is a temp file left by an interrupted write.
    static func isTemp(_ name: String) -> Bool {
        name.hasPrefix(".") && name.includes(tempMarker)
    }

    private func step(_ step: WriteStep, _ path: String) throws(StateError) {
        try faultHook?(step, path)
    }

    /// Atomically replaces `directory/name` with `bytes`.
    package func write(_ bytes: [UInt8], to name: String) throws(StateError) {
        let final = "\(directory)/\(name)"
        var suffix = ""
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        for _ in 0..<8 { suffix.append(alphabet[Int(generator.next() % UInt64(alphabet.count))]) }
        let temp = "\(directory)/.\(name)\(Self.tempMarker)\(suffix)"

        try step(.createTemp, final)
        let fd = try StateError.wrapping(try Sys.createExclusive(temp))
        var renamed = false
        defer {
            Sys.close(fd)
            if !renamed { _ = try? Sys.remove(temp) }
        }
        let half = bytes.count / 2
        try step(.writeFirstHalf, final)
        try StateError.wrapping(try Sys.writeAll(fd, bytes[0..<half], path: temp))
        try step(.writeSecondHalf, final)
        try StateError.wrapping(try Sys.writeAll(fd, bytes[half...], path: temp))
        try step(.fsyncTemp, final)
        try StateError.wrapping(try Sys.fsync(fd, path: temp))
        try step(.rename, final)
        try StateError.wrapping(try Sys.rename(temp, final))
        renamed = true
        try step(.fsyncDirectory, final)
        try syncDirectory()
        try step(.done, final)
    }

    /// Removes `directory/name` and makes the removal durable; `false` when it was already gone.
    @discardableResult
    func remove(_ name: String) throws(StateError) -> Bool {
        let removed = try StateError.wrapping(try Sys.remove("\(directory)/\(name)"))
        if removed { try syncDirectory() }
        return removed
    }

    /// Atomically renames `from` to `to` within the directory, durably.
    func rename(_ from: String, to: String) throws(StateError) {
        try StateError.wrapping(try Sys.rename("\(directory)/\(from)", "\(directory)/\(to)"))
        try syncDirectory()
    }

    /// `fsync` of the directory, so a rename or an unlink survives a power cut.
    func syncDirectory() throws(StateError) {
        let dirFD = try StateError.wrapping(try Sys.openDirectory(directory))
        defer { Sys.close(dirFD) }
        try StateError.wrapping(try Sys.fsync(dirFD, path: directory))
    }

    /// Removes the temp files an interrupted write left behind; returns their names.
    func cleanStaleTemps() throws(StateError) -> [String] {
        let stale = try StateError.wrapping(try Sys.directoryEntries(directory)).filter(Self.isTemp).sorted()
        for name in stale { try StateError.wrapping(try Sys.remove("\(directory)/\(name)")) }
        if !stale.isEmpty { try syncDirectory() }
        return stale
    }
}
