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
        var nameLength = 0
        for b in h.name.utf8 {
            namePointer[nameLength] = b
            nameLength += 1
        }
        offset += nameLength
        let valuePointer = bytes + offset
        var valueLength = 0
        for b in h.value.utf8 {
            valuePointer[valueLength] = b
            valueLength += 1
        }
        offset += valueLength
        nva[i] = nghttp2_nv(
            name: namePointer, value: valuePointer, namelen: nameLength, valuelen: valueLength,
            flags: UInt8(h.neverIndex ? NGHTTP2_NV_FLAG_NO_INDEX.rawValue : NGHTTP2_NV_FLAG_NONE.rawValue))
    }
    return body(nva, headers.count)
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
