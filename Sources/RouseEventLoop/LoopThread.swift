import Glibc
import RouseSystem
import Synchronization

/// A loop's thread: a joinable `pthread` from `Sys.startJoinableThread` with a 1 MiB stack. Not Foundation's
/// `Thread` (so a product without Foundation, such as `rouse-reach`, can run a loop) and not libdispatch (whose
/// worker pool, once started, keeps a once-a-second monitor timer running for the life of the process).
final class LoopThread: Sendable {
    private let thread: pthread_t
    private let joined = Atomic<Bool>(false)

    /// Starts `body` on a new thread named `name` (cut to the kernel's 15 bytes).
    init(name: String, _ body: @escaping @Sendable () -> Void) {
        do {
            thread = try Sys.startJoinableThread(name: name, stackSize: 1 << 20, body)
        } catch {
            // EAGAIN (no thread left) or the like: a loop that cannot start is nothing a caller could recover from.
            preconditionFailure("\(name): \(error)")
        }
    }

    /// Waits for the body to return (once: a second call returns at once).
    func join() {
        guard !joined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Sys.joinThread(thread)
    }

    /// Lets the thread's resources go when it ends, without anyone waiting for it: a loop stopped from its own thread
    /// cannot join itself, and a joinable thread nobody joins keeps its stack.
    func detach() {
        guard !joined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        Sys.detachThread(thread)
    }
}
