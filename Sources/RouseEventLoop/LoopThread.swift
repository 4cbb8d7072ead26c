import CRouseSys
import Glibc
import Synchronization

/// A joinable `pthread` running one body: the loop's thread. Not Foundation's `Thread` (so a product without
/// Foundation, such as `rouse-reach`, can run a loop) and not libdispatch (whose worker pool, once started, keeps a
/// once-a-second monitor timer running for the life of the process).
final class LoopThread: Sendable {
    private let thread: pthread_t
    private let joined = Atomic<Bool>(false)

    /// Starts `body` on a new thread with a 1 MiB stack, named `name` (cut to the kernel's 15 bytes).
    init(name: String, _ body: @escaping () -> Void) {
        final class Start {
            let name: String
            let body: () -> Void
            init(name: String, body: @escaping () -> Void) {
                self.name = name
                self.body = body
            }
        }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, 1 << 20)
        let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, &attributes,
            { raw in
                guard let raw else { return nil }
                let start = Unmanaged<Start>.fromOpaque(raw).takeRetainedValue()
                _ = rouse_set_thread_name(start.name)
                start.body()
                return nil
            }, start)
        // EAGAIN (no thread left) or the like: a loop that cannot start is nothing a caller could recover from.
        precondition(result == 0, "pthread_create failed: \(result)")
        self.thread = thread
    }

    /// Waits for the body to return (once: a second call returns at once).
    func join() {
        guard !joined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pthread_join(thread, nil)
    }
}
