import CNghttp2

/// Header fields that many requests share (`:method`, `:scheme`, `:authority`, a `:path` prefix and regular fields
/// such as `authorization` or `apns-topic`), laid out once as `nghttp2_nv` entries in C memory and reused by every
/// request that names it in ``HTTP2ClientRequest/shared``.
///
/// A bulk sender builds one per (credential, topic, push type, priority) instead of making, joining and copying the
/// same strings for every request: nghttp2 is told not to copy these names and values (`NGHTTP2_NV_FLAG_NO_COPY_*`),
/// so each request stores pointers to them until its HEADERS frame is encoded. The memory therefore lives as long as
/// the block, and each stream that used the block keeps it until the stream closes (after its HEADERS went out, or
/// never will). Immutable after `init`.
public final class HTTP2HeaderBlock: @unchecked Sendable {  // immutable after init; the C memory is only read.
    /// The pseudo-header entries (`:method`, `:scheme`, `:authority`), which go before `:path`.
    let pseudo: UnsafeMutablePointer<nghttp2_nv>
    let pseudoCount: Int
    /// The regular entries, which go after `:path` and before a request's own headers.
    let regular: UnsafeMutablePointer<nghttp2_nv>
    let regularCount: Int
    /// What every `:path` starts with; a request's `path` is appended to it.
    let pathPrefix: UnsafeMutableBufferPointer<UInt8>
    /// Whether `:path` is never indexed (APNs asks this).
    let pathNeverIndexed: Bool
    private let bytes: UnsafeMutablePointer<UInt8>

    /// A block for requests to `authority`; `headers` are the regular fields every request carries (lowercase names,
    /// no pseudo-headers). `pathPrefix` is put before each request's `path`.
    public init(
        method: String = "POST", scheme: String = "https", authority: String, pathPrefix: String = "",
        pathNeverIndexed: Bool = true, headers: [HTTP2Header]
    ) {
        let pseudoFields = [
            HTTP2Header(":method", method), HTTP2Header(":scheme", scheme), HTTP2Header(":authority", authority),
        ]
        var total = pathPrefix.utf8.count
        for h in pseudoFields + headers { total += h.name.utf8.count + h.value.utf8.count }
        let storage = UnsafeMutablePointer<UInt8>.allocate(capacity: max(total, 1))
        let pseudoEntries = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: pseudoFields.count)
        let regularEntries = UnsafeMutablePointer<nghttp2_nv>.allocate(capacity: max(headers.count, 1))
        var offset = 0
        func place(_ string: String) -> (UnsafeMutablePointer<UInt8>, Int) {
            let start = offset
            for byte in string.utf8 {
                storage[offset] = byte
                offset += 1
            }
            return (storage + start, offset - start)
        }
        func entry(_ h: HTTP2Header) -> nghttp2_nv {
            let (name, nameLength) = place(h.name)
            let (value, valueLength) = place(h.value)
            var flags = NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue
            if h.neverIndex { flags |= NGHTTP2_NV_FLAG_NO_INDEX.rawValue }
            return nghttp2_nv(name: name, value: value, namelen: nameLength, valuelen: valueLength, flags: UInt8(flags))
        }
        for (i, h) in pseudoFields.enumerated() { pseudoEntries[i] = entry(h) }
        for (i, h) in headers.enumerated() { regularEntries[i] = entry(h) }
        let (prefix, prefixLength) = place(pathPrefix)
        bytes = storage
        pseudo = pseudoEntries
        pseudoCount = pseudoFields.count
        regular = regularEntries
        regularCount = headers.count
        self.pathPrefix = UnsafeMutableBufferPointer(start: prefix, count: prefixLength)
        self.pathNeverIndexed = pathNeverIndexed
    }

    deinit {
        bytes.deallocate()
        pseudo.deallocate()
        regular.deallocate()
    }

    /// Entries a request using this block has besides its `:path` and own headers.
    var sharedCount: Int { pseudoCount + regularCount }
}
