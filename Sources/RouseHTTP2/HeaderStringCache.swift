import Glibc

/// The strings of the previous request's header block on one connection, reused when the next block repeats them.
/// A client sends the same names and mostly the same values on every request (`authorization`, `apns-topic`,
/// `user-agent`…, HPACK-indexed on the wire). The header callback, mostly making a `String` of each (a UTF-8 check
/// and, past 15 bytes, an allocation that a later release frees), was an eighth of the mock's instructions per
/// request; comparing the bytes with the string of the same position in the previous block costs a `memcmp`.
///
/// Bounded so that an idle connection keeps little: the first `maxEntries` fields, each at most `maxFieldBytes`
/// (name plus value). Loop-confined, like the connection that owns it.
struct HeaderStringCache {
    static let maxEntries = 16
    static let maxFieldBytes = 320

    private var entries: [(name: String, value: String)] = []
    private var position = 0

    /// A new header block begins.
    mutating func startBlock() { position = 0 }

    /// The strings for the next field of the block: the previous block's ones at this position when the bytes are
    /// the same, else new ones (kept for the next block when within the bounds).
    mutating func strings(
        name: UnsafePointer<UInt8>?, nameLength: Int, value: UnsafePointer<UInt8>?, valueLength: Int
    ) -> (name: String, value: String) {
        let index = position
        position += 1
        guard index < entries.count else {
            let made = (String(nghttp2: name, length: nameLength), String(nghttp2: value, length: valueLength))
            if index == entries.count && index < Self.maxEntries && nameLength + valueLength <= Self.maxFieldBytes {
                entries.append(made)
            }
            return made
        }
        var entry = entries[index]
        var changed = false
        if !Self.same(entry.name, name, nameLength) {
            entry.name = String(nghttp2: name, length: nameLength)
            changed = true
        }
        if !Self.same(entry.value, value, valueLength) {
            entry.value = String(nghttp2: value, length: valueLength)
            changed = true
        }
        if changed {
            if nameLength + valueLength <= Self.maxFieldBytes {
                entries[index] = entry
            } else {
                // Too big to keep: later positions are not cached either (the block's shape changed).
                entries.removeSubrange(index...)
            }
        }
        return entry
    }

    /// Whether `string`'s UTF-8 is exactly these bytes (a string made from invalid UTF-8 was repaired, so its bytes
    /// differ and it is never reused for them).
    @inline(__always)
    private static func same(_ string: String, _ bytes: UnsafePointer<UInt8>?, _ length: Int) -> Bool {
        string.utf8.withContiguousStorageIfAvailable { stored in
            guard stored.count == length else { return false }
            guard length > 0, let bytes, let base = stored.baseAddress else { return length == 0 }
            return memcmp(base, bytes, length) == 0
        } ?? false
    }
}
