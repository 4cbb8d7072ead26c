import Glibc
import Synchronization

/// The signals a daemon acts on (rouse-agent: SIGTERM and SIGINT stop it gracefully, SIGHUP reloads its handler
/// files; rouse-gateway: SIGTERM and SIGINT), taken synchronously by the main thread (`sigwaitinfo`) and handed to
/// whoever registered for them. A signal that arrives before anyone registered is kept and delivered at
/// registration.
///
/// Why not ServiceLifecycle's signal handling: it traps signals with libdispatch sources, which start libdispatch's
/// worker pool and its once-a-second monitor timer (see ``LoopExecutor``).
package enum DaemonSignals {
    private struct State {
        var handlers: [Int32: @Sendable () -> Void] = [:]
        var pending: Set<Int32> = []
    }
    private static let state = Mutex(State())

    /// Calls `handler` (from the main thread: it must not block) for each `signal` from now on.
    package static func on(_ signal: Int32, _ handler: @escaping @Sendable () -> Void) {
        let missed = state.withLock { state in
            state.handlers[signal] = handler
            return state.pending.remove(signal) != nil
        }
        if missed { handler() }
    }

    /// Waits for the signals of `set` (blocked in every thread) for ever, handing each to its handler.
    package static func wait(for set: sigset_t) -> Never {
        var set = set
        while true {
            let signal = sigwaitinfo(&set, nil)
            guard signal > 0 else { continue }  // EINTR
            let handler = state.withLock { state in
                if state.handlers[signal] == nil { state.pending.insert(signal) }
                return state.handlers[signal]
            }
            handler?()
        }
    }
}
