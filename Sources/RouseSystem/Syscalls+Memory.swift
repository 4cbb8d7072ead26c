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
