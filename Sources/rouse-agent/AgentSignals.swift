import Glibc
import Synchronization

/// The signals the agent acts on, taken synchronously by the main thread (`sigwaitinfo`) and handed to whoever
/// registered for them: SIGTERM and SIGINT stop the agent gracefully, SIGHUP reloads its handler files. A signal
/// that arrives before anyone registered is kept and delivered at registration.
enum AgentSignals {
    private struct State {
        var handlers: [Int32: @Sendable () -> Void] = [:]
        var pending: Set<Int32> = []
    }
    private static let state = Mutex(State())

    /// Calls `handler` (from the main thread: it must not block) for each `signal` from now on.
    static func on(_ signal: Int32, _ handler: @escaping @Sendable () -> Void) {
        let missed = state.withLock { state in
            state.handlers[signal] = handler
            return state.pending.remove(signal) != nil
        }
        if missed { handler() }
    }

    /// Waits for the signals of `set` (blocked in every thread) for ever, handing each to its handler.
    static func wait(for set: sigset_t) -> Never {
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
