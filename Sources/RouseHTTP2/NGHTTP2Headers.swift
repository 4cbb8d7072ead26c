import CNghttp2

/// Calls `body` with an `nghttp2_nv` array for `headers` (nghttp2 copies them; the memory lives for the call only).
func withNGHTTP2Headers<R>(
    _ headers: [HTTP2Header], _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
) -> R {
    var total = 0
    for h in headers { total += h.name.utf8.count + h.value.utf8.count }
    let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: max(total, 1))
    let nva = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: max(headers.count, 1))
    defer {
        bytes.deallocate()
        nva.deallocate()
    }
    var offset = 0
    for (i, h) in headers.enumerated() {
        let namePointer = bytes + offset
        let nameLength = copyUTF8(h.name, to: namePointer)
        offset += nameLength
        let valuePointer = bytes + offset
        let valueLength = copyUTF8(h.value, to: valuePointer)
        offset += valueLength
        nva[i] = nghttp2_nv(
            name: namePointer, value: valuePointer, namelen: nameLength, valuelen: valueLength,
            flags: UInt8(h.neverIndex ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue))
    }
    return body(nva, headers.count)
}

/// Copies `string`'s UTF-8 bytes to `destination` in one move (native strings are contiguous; a byte-by-byte walk
/// of the UTF-8 view was 6% of a bulk send's CPU); returns the count.
@inline(__always)
private func copyUTF8(_ string: String, to destination: UnsafeMutablePointer<UInt8>) -> Int {
    var string = string
    return string.withUTF8 { source in
        if let base = source.baseAddress { destination.update(from: base, count: source.count) }
        return source.count
    }
}

extension String {
    /// A string from bytes nghttp2 hands us (not NUL-terminated).
    init(nghttp2 pointer: UnsafePointer<UInt8>?, length: Int) {
        guard let pointer, length > 0 else {
            self = ""
            return
        }
        self = String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
    }
}
