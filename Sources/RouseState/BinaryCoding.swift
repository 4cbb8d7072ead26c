/// A tiny length-prefixed binary writer for archives and launch records (big-endian integers).
struct BinaryWriter {
    private(set) var bytes: [UInt8] = []

    mutating func integer(_ value: UInt64, bytes count: Int) {
        bytes.append(contentsOf: SealedFile.bigEndian(value, bytes: count))
    }

    mutating func blob(_ value: [UInt8]) {
        integer(UInt64(value.count), bytes: 4)
        bytes.append(contentsOf: value)
    }

    mutating func string(_ value: String) { blob(Array(value.utf8)) }
}

/// The matching reader: every read is bounds-checked and throws `undecodableArchive`, never traps.
struct BinaryReader {
    let bytes: [UInt8]
    let file: String
    private(set) var offset = 0

    init(_ bytes: [UInt8], file: String) {
        self.bytes = bytes
        self.file = file
    }

    private func need(_ count: Int) throws(StateError) {
        guard count >= 0, bytes.count - offset >= count else {
            throw StateError(.undecodableArchive("ends early at byte \(offset)"), file: file)
        }
    }

    mutating func integer(bytes count: Int) throws(StateError) -> UInt64 {
        try need(count)
        defer { offset += count }
        return SealedFile.readBigEndian(bytes, at: offset, bytes: count)
    }

    mutating func blob() throws(StateError) -> [UInt8] {
        let count = Int(try integer(bytes: 4))
        try need(count)
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func string() throws(StateError) -> String {
        let raw = try blob()
        guard let value = String(validating: raw, as: UTF8.self) else {
            throw StateError(.undecodableArchive("invalid UTF-8 at byte \(offset)"), file: file)
        }
        return value
    }

    func finish() throws(StateError) {
        guard offset == bytes.count else {
            throw StateError(.undecodableArchive("\(bytes.count - offset) unexpected trailing bytes"), file: file)
        }
    }
}
