import Glibc

// Anonymous memory mappings, in their own file so the descriptor and socket wrappers stay as they are.
//
// errno policy: a mapping that cannot be made (ENOMEM, the process's map count) is a value (`nil`) for the caller to
// fall back on; unmapping what we mapped cannot fail short of a bug.
extension Sys {
    /// `mmap(2)` of `length` bytes of private anonymous memory, read-write, or `nil` when the kernel refuses. Pages
    /// count in the resident set only once written.
    package static func mapAnonymous(length: Int) -> UnsafeMutableRawPointer? {
        let pointer = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let pointer, pointer != MAP_FAILED else { return nil }
        return pointer
    }

    /// `munmap(2)` of a mapping made by `mapAnonymous`.
    package static func unmap(_ pointer: UnsafeMutableRawPointer, length: Int) {
        if munmap(pointer, length) != 0 { preconditionFailure("munmap of a mapping we did not make") }
    }
}
