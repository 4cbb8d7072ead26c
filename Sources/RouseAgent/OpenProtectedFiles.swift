import RouseState

/// The `complete-unless-open` files handlers hold open (docs/agent.md, "completeUnlessOpen"): each open file keeps
/// its own file key, so reads and writes through its handle go on after the session locks. Kept per handler, at most
/// ``limit`` each; all of a handler's files close when its connection closes or its process exits. Owned by the
/// ``SessionLink``, touched only on the agent's isolation.
struct OpenProtectedFiles {
    /// At most this many open files per handler; more are refused (`tooManyOpenFiles`, counted in ``refused``).
    static let limit = 16

    private var files: [String: [Int: SealedStore.OpenFile]] = [:]
    private var nextHandle = 1
    /// Opens refused because the handler held ``limit`` files (status).
    private(set) var refused = 0

    /// Keeps `file` open for `handler`; its handle, or nil when the handler holds ``limit`` files already.
    mutating func add(_ file: SealedStore.OpenFile, handler: String) -> Int? {
        guard files[handler, default: [:]].count < Self.limit else {
            refused += 1
            return nil
        }
        let handle = nextHandle
        nextHandle += 1
        files[handler, default: [:]][handle] = file
        return handle
    }

    /// The open file `handle` of `handler`.
    func file(_ handle: Int, handler: String) -> SealedStore.OpenFile? { files[handler]?[handle] }

    /// Closes `handle`; false when `handler` had no such open file.
    mutating func close(_ handle: Int, handler: String) -> Bool {
        files[handler]?.removeValue(forKey: handle) != nil
    }

    /// Closes every file of `handler` (its connection closed, its process exited); how many were open.
    mutating func closeAll(handler: String) -> Int {
        files.removeValue(forKey: handler)?.count ?? 0
    }

    /// Closes the files named `name` of `handler` (the file was removed).
    mutating func closeAll(named name: String, handler: String) {
        files[handler] = files[handler]?.filter { $0.value.name != name }
    }

    /// Open files, all handlers together (status).
    var count: Int { files.values.reduce(0) { $0 + $1.count } }
}
