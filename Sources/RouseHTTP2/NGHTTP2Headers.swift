import CNghttp2

/// Calls `body` with an `nghttp2_nv` array for `headers` (nghttp2 copies them; the memory lives for the call only).
/// With `status` (three digits, 100...999), a `:status` field comes first (a response's header block, without a new
/// array and string for it).
func withNGHTTP2Headers<R>(
    status: Int? = nil, _ headers: [HTTP2Header], _ body: (UnsafePointer<nghttp2_nv>, Int) -> R
) -> R {
    let statusName: StaticString = ":status"
    let statusDigits = status.flatMap { (100...999).contains($0) ? $0 : nil }
    var total = statusDigits == nil ? 0 : statusName.utf8CodeUnitCount + 3
    for h in headers { total += h.name.utf8.count + h.value.utf8.count }
    let count = headers.count + (statusDigits == nil ? 0 : 1)
    let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: max(total, 1))
    let nva = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: max(count, 1))
    defer {
        bytes.deallocate()
        nva.deallocate()
    }
    var offset = 0
    var first = 0
    if let statusDigits {
        let length = statusName.utf8CodeUnitCount
        bytes.update(from: statusName.utf8Start, count: length)
        let value = bytes + length
        value[0] = UInt8(ascii: "0") + UInt8(statusDigits / 100)
        value[1] = UInt8(ascii: "0") + UInt8(statusDigits / 10 % 10)
        value[2] = UInt8(ascii: "0") + UInt8(statusDigits % 10)
        nva[0] = nghttp2_nv(
            name: bytes, value: value, namelen: length, valuelen: 3, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
        offset = length + 3
        first = 1
    }
    for (index, h) in headers.enumerated() {
        let i = first + index
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
    return body(nva, count)
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
