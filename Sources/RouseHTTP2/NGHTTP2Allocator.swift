import CNghttp2
import Glibc
import RouseSystem
import Synchronization

/// The allocator (`nghttp2_mem`) of every nghttp2 session, server and client. It does two things malloc does not:
///
/// - **Counts** what nghttp2 holds (`liveBytes`, `liveSessions`), so the memory of an idle HTTP/2 connection can be
///   stated exactly instead of inferred from the resident set (docs/gateway.md has the breakdown).
/// - **Maps large blocks** (`mappedThreshold` bytes and more) from the kernel instead of the heap. Each session
///   allocates its frame buffer at once: one 16 KiB chunk (`NGHTTP2_FRAMEBUF_CHUNKLEN`), of which an idle device
///   channel writes only the first page (SETTINGS, HEADERS, small DATA frames). Carved from the heap, that chunk was
///   recycled memory and resident in full; mapped, only the pages written count (about 10 KiB less per idle TLS
///   connection in `rouse-bench gateway --channels`). Small blocks stay on malloc; a refused mapping falls back to
///   malloc too, and so does every large block beyond `mappingLimit` live mappings (a quarter of the kernel's
///   `vm.max_map_count`): each live mapping can be a memory area of its own once its neighbours are gone, and
///   unmapping one in the middle of a merged area needs one more, so staying far below the limit keeps `munmap` from
///   being refused. Should it be refused anyway, the pages are released and the block counted in `lostMappings`.
///
/// Each block carries a 16-byte header (its size and where it came from) in front of what nghttp2 sees, so that
/// `free` and `realloc` know how to give it back; 16 bytes keep malloc's alignment.
enum NGHTTP2Allocator {
    /// Blocks at least this large get their own mapping.
    static let mappedThreshold = 16 * 1024
    private static let headerSize = 16
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// Live mappings beyond which large blocks come from malloc.
    static let mappingLimit = Sys.maximumMapCount / 4

    private static let bytes = Atomic<Int>(0)
    private static let sessions = Atomic<Int>(0)
    private static let mappings = Atomic<Int>(0)
    private static let lost = Atomic<Int>(0)

    /// Mappings the kernel refused to unmap (their pages were released; their address range stays taken).
    static var lostMappings: Int { lost.load(ordering: .relaxed) }
    /// Large blocks living in mappings of their own now.
    static var liveMappings: Int { mappings.load(ordering: .relaxed) }

    /// Bytes nghttp2 holds in all sessions of this process (what it asked for, without headers or page rounding).
    static var liveBytes: Int { bytes.load(ordering: .relaxed) }
    /// Sessions created with `memory` and not yet deleted.
    static var liveSessions: Int { sessions.load(ordering: .relaxed) }

    /// The allocator to pass to `nghttp2_session_*_new3` (nghttp2 copies the struct). `nonisolated(unsafe)`: written
    /// once, by the lazy initializer, and only read after.
    nonisolated(unsafe) static let memory: UnsafeMutablePointer<nghttp2_mem> = {
        let memory = UnsafeMutablePointer<nghttp2_mem>.allocate(capacity: 1)
        memory.initialize(
            to: nghttp2_mem(
                mem_user_data: nil,
                malloc: { size, _ in NGHTTP2Allocator.allocate(size, zeroed: false) },
                free: { pointer, _ in NGHTTP2Allocator.release(pointer) },
                calloc: { count, size, _ in
                    let (total, overflow) = count.multipliedReportingOverflow(by: size)
                    return overflow ? nil : NGHTTP2Allocator.allocate(total, zeroed: true)
                },
                realloc: { pointer, size, _ in NGHTTP2Allocator.reallocate(pointer, size) }))
        return memory
    }()

    /// A session was created with `memory`.
    static func sessionCreated() { sessions.add(1, ordering: .relaxed) }
    /// A session created with `memory` was deleted.
    static func sessionDeleted() { sessions.subtract(1, ordering: .relaxed) }

    // Header words: the size nghttp2 asked for, and the mapping's length (0: the block came from malloc).

    private static func allocate(_ size: Int, zeroed: Bool) -> UnsafeMutableRawPointer? {
        let total = size + headerSize
        var block: UnsafeMutableRawPointer?
        var mappedLength = 0
        if size >= mappedThreshold, mappings.add(1, ordering: .relaxed).newValue <= mappingLimit {
            let length = (total + pageSize - 1) / pageSize * pageSize
            block = Sys.mapAnonymous(length: length)  // Zero-filled by the kernel.
            if block != nil { mappedLength = length }
        }
        if size >= mappedThreshold, mappedLength == 0 { mappings.subtract(1, ordering: .relaxed) }
        if block == nil { block = Sys.allocate(total, zeroed: zeroed) }
        guard let block else { return nil }
        block.storeBytes(of: size, as: Int.self)
        block.storeBytes(of: mappedLength, toByteOffset: 8, as: Int.self)
        bytes.add(size, ordering: .relaxed)
        return block + headerSize
    }

    private static func release(_ pointer: UnsafeMutableRawPointer?) {
        guard let pointer else { return }
        let block = pointer - headerSize
        let size = block.load(as: Int.self)
        let mappedLength = block.load(fromByteOffset: 8, as: Int.self)
        bytes.subtract(size, ordering: .relaxed)
        if mappedLength > 0 {
            mappings.subtract(1, ordering: .relaxed)
            if !Sys.unmap(block, length: mappedLength) { lost.add(1, ordering: .relaxed) }
        } else {
            Sys.free(block)
        }
    }

    private static func reallocate(_ pointer: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
        guard let pointer else { return allocate(size, zeroed: false) }
        let block = pointer - headerSize
        let oldSize = block.load(as: Int.self)
        let mappedLength = block.load(fromByteOffset: 8, as: Int.self)
        if mappedLength == 0 && size < mappedThreshold {
            guard let grown = Sys.reallocate(block, to: size + headerSize) else { return nil }
            grown.storeBytes(of: size, as: Int.self)
            bytes.add(size - oldSize, ordering: .relaxed)
            return grown + headerSize
        }
        // Into or out of a mapping: a new block, the bytes copied, the old one given back.
        guard let moved = allocate(size, zeroed: false) else { return nil }
        moved.copyMemory(from: pointer, byteCount: min(oldSize, size))
        release(pointer)
        return moved
    }
}
