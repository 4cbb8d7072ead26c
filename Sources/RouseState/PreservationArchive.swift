/// One handler's (or the agent's own) preserved state: pieces of opaque bytes under restoration paths, and
/// what wrote them, for the reader to decide whether it accepts them.
package struct PreservationArchive: Sendable, Equatable {
    /// The archive format this code writes and the only one it reads; any other is discarded, never parsed
    /// best-effort.
    package static let formatVersion: UInt16 = 1

    /// What wrote the archive, and when (UIKit's restoration keys).
    package struct Info: Sendable, Equatable {
        /// The archive format version.
        package var formatVersion: UInt16
        /// The handler the archive belongs to.
        package var handler: String
        /// The handler's own version when it preserved (its reader may refuse other versions).
        package var writerVersion: String
        /// The agent's version.
        package var agentVersion: String
        /// Seconds since the Unix epoch.
        package var createdAt: Int64

        /// What wrote an archive; `formatVersion` defaults to this code's.
        package init(
            handler: String, writerVersion: String, agentVersion: String = "", createdAt: Int64,
            formatVersion: UInt16 = PreservationArchive.formatVersion
        ) {
            self.formatVersion = formatVersion
            self.handler = handler
            self.writerVersion = writerVersion
            self.agentVersion = agentVersion
            self.createdAt = createdAt
        }
    }

    /// What wrote the archive.
    package var info: Info
    private var pieces: [RestorationPath: [UInt8]] = [:]

    /// An empty archive.
    package init(info: Info) { self.info = info }

    /// Preserves `data` under `path`, replacing what was there. The piece is kept only if every enclosing
    /// path is preserved too.
    package mutating func preserve(_ data: [UInt8], at path: RestorationPath) { pieces[path] = data }

    /// Removes the piece at `path`.
    package mutating func remove(_ path: RestorationPath) { pieces[path] = nil }

    /// The pieces that are preserved (every ancestor preserved), parents first.
    package var preservedPieces: [(path: RestorationPath, data: [UInt8])] {
        pieces.keys.filter(isAnchored).sorted().map { ($0, pieces[$0] ?? []) }
    }

    /// The pieces dropped because an enclosing path is not preserved.
    package var orphans: [RestorationPath] { pieces.keys.filter { !isAnchored($0) }.sorted() }

    /// The data preserved at `path`, if it is preserved.
    package subscript(path: RestorationPath) -> [UInt8]? { isAnchored(path) ? pieces[path] : nil }

    private func isAnchored(_ path: RestorationPath) -> Bool {
        var current = path.parent
        while let parent = current {
            if pieces[parent] == nil { return false }
            current = parent.parent
        }
        return true
    }

    /// The archive's bytes (preserved pieces only), before sealing.
    func encoded() -> [UInt8] {
        var writer = BinaryWriter()
        writer.integer(UInt64(info.formatVersion), bytes: 2)
        writer.string(info.handler)
        writer.string(info.writerVersion)
        writer.string(info.agentVersion)
        writer.integer(UInt64(bitPattern: info.createdAt), bytes: 8)
        let kept = preservedPieces
        writer.integer(UInt64(kept.count), bytes: 4)
        for piece in kept {
            writer.string(piece.path.description)
            writer.blob(piece.data)
        }
        return writer.bytes
    }

    /// Decodes an archive; an unknown format version or any malformation throws (the caller discards).
    static func decode(_ bytes: [UInt8], file: String) throws(StateError) -> PreservationArchive {
        var reader = BinaryReader(bytes, file: file)
        let version = UInt16(truncatingIfNeeded: try reader.integer(bytes: 2))
        guard version == formatVersion else { throw StateError(.unsupportedFormatVersion(version), file: file) }
        let handler = try reader.string()
        let writerVersion = try reader.string()
        let agentVersion = try reader.string()
        let createdAt = Int64(bitPattern: try reader.integer(bytes: 8))
        var archive = PreservationArchive(
            info: Info(handler: handler, writerVersion: writerVersion, agentVersion: agentVersion, createdAt: createdAt)
        )
        let count = try reader.integer(bytes: 4)
        for _ in 0..<count {
            let pathString = try reader.string()
            let path: RestorationPath
            do {
                path = try RestorationPath(pathString)
            } catch {
                throw StateError(.undecodableArchive("bad restoration path \(pathString)"), file: file)
            }
            archive.preserve(try reader.blob(), at: path)
        }
        try reader.finish()
        return archive
    }
}
