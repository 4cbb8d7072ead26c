import Glibc

// Anonymous memory mappings, in their own file so the descriptor and socket wrappers stay as they are.
//
// errno policy: a mapping that cannot be made (ENOMEM, the process's map count) is a value (`nil`) for the caller to
// fall back on. Unmapping can fail too, though the mapping is ours: unmapping a block in the middle of an area the
// kernel merged from neighbouring mappings splits it, and at `vm.max_map_count` areas the split is refused (ENOMEM).
// That is a value as well (`false`), never a trap: the caller releases the pages and counts the block as lost.
extension Sys {
    /// `mmap(2)` of `length` bytes of private anonymous memory, read-write, or `nil` when the kernel refuses. Pages
    /// count in the resident set only once written.
    package static func mapAnonymous(length: Int) -> UnsafeMutableRawPointer? {
        let pointer = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let pointer, pointer != MAP_FAILED else { return nil }
        return pointer
    }

    /// `munmap(2)` of a mapping made by `mapAnonymous`; `false` when the kernel refused (see the errno policy above),
    /// after giving the pages back with `madvise(MADV_DONTNEED)` so that only the address range stays taken.
    @discardableResult
    package static func unmap(_ pointer: UnsafeMutableRawPointer, length: Int) -> Bool {
        if munmap(pointer, length) == 0 { return true }
        _ = madvise(pointer, length, MADV_DONTNEED)
        return false
    }

    /// `vm.max_map_count`: how many memory areas the kernel lets one process have (65530 by default).
    package static let maximumMapCount: Int = {
        guard let text = readText("/proc/sys/vm/max_map_count", maxBytes: 64),
            let value = Int(text.filter { $0.isNumber })
        else { return 65530 }
        return value
    }()
}

// The C heap, for C libraries that take allocator callbacks or hand over strings to free (nghttp2, libpq): `nil` when
// the allocator has nothing left, for the caller to report as that library expects.
extension Sys {
    /// `malloc(3)`, or `calloc(3)` when `zeroed`.
    package static func allocate(_ size: Int, zeroed: Bool = false) -> UnsafeMutableRawPointer? {
        zeroed ? calloc(1, size) : malloc(size)
    }

    /// `realloc(3)`: the block moved or grown to `size` bytes, or `nil` (the old block then stays valid).
    package static func reallocate(_ pointer: UnsafeMutableRawPointer?, to size: Int) -> UnsafeMutableRawPointer? {
        realloc(pointer, size)
    }

    /// `free(3)` of a block from the C heap (``allocate(_:zeroed:)``, `strdup`, a C library).
    package static func free(_ pointer: UnsafeMutableRawPointer?) {
        Glibc.free(pointer)
    }
}
