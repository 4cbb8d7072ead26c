import RouseCurl
import RouseSystem
import Synchronization

/// Bytes of spool one handler holds, against its budget: shared by its transfers' sinks (loop thread) and the
/// agent (which frees what it deletes).
final class SpoolAccount: Sendable {
    let limit: Int64
    private let used: Mutex<Int64>

    init(limit: Int64, used: Int64) {
        self.limit = limit
        self.used = Mutex(used)
    }

    /// Takes `count` bytes if they fit.
    func reserve(_ count: Int64) -> Bool {
        used.withLock { used in
            guard used + count <= limit else { return false }
            used += count
            return true
        }
    }

    /// Gives `count` bytes back (a file deleted or cut).
    func release(_ count: Int64) { used.withLock { $0 = max(0, $0 - count) } }

    var bytes: Int64 { used.withLock { $0 } }
}

/// One background transfer's file end on libcurl's loop thread: a download written into its spool file (resumed
/// at `resumeFrom` when the server answers `206`, started over on a `200`), or an upload read from its spool copy.
/// Progress goes to `onProgress` every ``progressStep`` bytes.
///
/// `@unchecked Sendable`: `state` is a `Mutex`; `fd`, `account`, `onProgress` are immutable.
final class SpoolSink: CurlBodySink, @unchecked Sendable {
    struct State {
        var offset: Int64
        var bytes: Int64 = 0
        var total: Int64?
        var validator: String?
        var spoolFull = false
        var writeError: String?
        var lastReported: Int64 = 0
        /// The current response is a redirect libcurl follows: its body is not the file.
        var redirect = false
        /// ``close()`` ran: the descriptor is gone and every later call refuses.
        var closed = false
    }

    static let progressStep: Int64 = 1 << 20
    let fd: Int32
    let upload: Bool
    private let account: SpoolAccount
    private let onProgress: @Sendable (Int64, Int64?, String?) -> Void
    let state: Mutex<State>

    /// `resumeFrom`: bytes already in the file (a download resumes there); an upload starts at 0.
    init(
        fd: Int32, upload: Bool, resumeFrom: Int64, account: SpoolAccount,
        onProgress: @escaping @Sendable (Int64, Int64?, String?) -> Void
    ) {
        self.fd = fd
        self.upload = upload
        self.account = account
        self.onProgress = onProgress
        state = Mutex(State(offset: resumeFrom))
    }

    // The descriptor lives as long as the sink: libcurl's loop may still call it after the awaiting task was
    // cancelled (until it detaches the handle), and the transfer it belongs to keeps the sink alive until then.
    deinit { state.withLock { if !$0.closed { Sys.close(fd) } } }

    /// Closes the descriptor now (the transfer ended; or it was cancelled and libcurl may still call, in which case
    /// the call refuses and the transfer aborts): a deleted spool file's blocks are freed before its result is
    /// delivered, not whenever the last reference to the sink goes. Every use of `fd` is under `state`'s lock.
    func close() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            Sys.close(fd)
        }
    }

    func head(status: Int, headers: [(name: String, value: String)]) -> Bool {
        guard !upload else { return true }
        func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name }?.value
        }
        let validator = header("etag") ?? header("last-modified")
        let length = header("content-length").flatMap { Int64($0) }
        return state.withLock { state in
            guard !state.closed else { return false }
            state.redirect = (300...399).contains(status)
            guard !state.redirect else { return true }
            state.validator = validator
            if status == 206, let range = header("content-range"), Self.rangeStart(range) == state.offset {
                // Resumed: the bytes already spooled stay; the total is in Content-Range.
                state.total = range.split(separator: "/").last.flatMap { Int64($0) }
            } else {
                // A full answer (the server ignored Range, or the resource changed: If-Range): start over.
                if state.offset > 0 {
                    do {
                        try AgentError.wrapping(try Sys.truncate(fd, to: 0))
                    } catch {
                        state.writeError = "\(error)"
                        return false
                    }
                    account.release(state.offset)
                }
                state.offset = 0
                state.total = length
            }
            state.bytes = state.offset
            return true
        }
    }

    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // An upload's response body (a status page) is not kept: its status is the result.
        guard !upload else { return true }
        let count = Int64(bytes.count)
        let report: (Int64, Int64?, String?)? = state.withLock { state in
            guard !state.closed else { return nil }
            if state.redirect { return (-1, nil, nil) }
            guard account.reserve(count) else {
                state.spoolFull = true
                return nil
            }
            do {
                try AgentError.wrapping(try Sys.writeAll(fd, bytes, at: state.offset))
            } catch {
                account.release(count)
                state.writeError = "\(error)"
                return nil
            }
            state.offset += count
            state.bytes = state.offset
            guard state.bytes - state.lastReported >= Self.progressStep else { return (-1, nil, nil) }
            state.lastReported = state.bytes
            return (state.bytes, state.total, state.validator)
        }
        guard let report else { return false }
        if report.0 >= 0 { onProgress(report.0, report.1, report.2) }
        return true
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let result: (count: Int, report: (Int64, Int64?)?)? = state.withLock { state in
            guard !state.closed else { return nil }
            do {
                let count = try AgentError.wrapping(try Sys.readSome(fd, into: buffer, at: state.offset))
                state.offset += Int64(count)
                state.bytes = state.offset
                guard state.bytes - state.lastReported >= Self.progressStep else { return (count, nil) }
                state.lastReported = state.bytes
                return (count, (state.bytes, state.total))
            } catch {
                state.writeError = "\(error)"
                return nil
            }
        }
        guard let result else { return nil }
        if let (bytes, total) = result.report { onProgress(bytes, total, nil) }
        return result.count
    }

    /// The first byte of a `Content-Range: bytes a-b/n`.
    static func rangeStart(_ value: String) -> Int64? {
        guard let rest = value.split(separator: " ").last, let dash = rest.firstIndex(of: "-") else { return nil }
        return Int64(rest[..<dash])
    }
}
