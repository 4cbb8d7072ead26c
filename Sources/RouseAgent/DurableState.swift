import Logging
import RouseAgentCore

/// What the agent keeps across restarts (``AgentState`` in its ``AgentStateStore``), saved after every change:
/// the gateway link's enrollment and tokens, the pushes already handed over, each handler's strikes, the processes to
/// re-attach to, the background transfers. Each part reads and writes its own section through the methods here; a
/// save that fails is logged and the agent runs on (the transfers' save throws: its caller answers with errors).
final class DurableState {
    private let store: any AgentStateStore
    private let logger: Logger
    private var state: AgentState

    /// The stored state.
    init(store: any AgentStateStore, logger: Logger) throws {
        self.store = store
        self.logger = logger
        state = try store.load()
    }

    private func save() {
        do {
            try store.save(state)
        } catch {
            logger.error("state not saved", metadata: ["error": "\(error)"])
        }
    }

    // MARK: The gateway link's

    /// The enrolled device id (nil: not enrolled yet).
    var deviceID: String? { state.deviceID }

    /// The device credential from enrollment (nil before it, or with a device certificate).
    var credential: String? { state.credential }

    /// Enrollment succeeded.
    func enrolled(device: String, credential: String?) {
        state.deviceID = device
        state.credential = credential
        save()
    }

    /// The push tokens by topic.
    var tokens: [String: String] { state.tokens }

    /// The gateway gave `token` for `topic`.
    func setToken(_ token: String, topic: String) {
        state.tokens[topic] = token
        save()
    }

    /// The token of `topic` last handed to handler `name`.
    func handedToken(_ name: String, topic: String) -> String? { state.handedTokens[name]?[topic] }

    /// Handler `name` was handed `token` for `topic`.
    func handed(_ name: String, token: String, topic: String) {
        state.handedTokens[name, default: [:]][topic] = token
        save()
    }

    // MARK: Pushes

    /// Whether `push` was handed to a handler already (a window written by an older agent holds bare ids, without a
    /// space: still honoured until they age out).
    func wasHandled(_ push: AgentPush) -> Bool {
        state.handled.contains(push.deduplicationKey)
            || (!push.apnsID.contains(" ") && state.handled.contains(push.apnsID))
    }

    /// `push` was handed to a handler.
    func handled(_ push: AgentPush) {
        state.handled.insert(push.deduplicationKey)
        save()
    }

    // MARK: Handler lifecycle's

    /// What survives a restart of `name`'s rules.
    func handlerRecord(_ name: String) -> PersistedHandler? { state.handlers[name] }

    /// Keeps `record` for `name`; true when it changed.
    func setHandlerRecord(_ record: PersistedHandler?, for name: String) -> Bool {
        guard state.handlers[name] != record else { return false }
        state.handlers[name] = record
        save()
        return true
    }

    /// The processes a restarted agent may re-attach to, by handler.
    var processes: [String: HandlerIdentity] { state.processes ?? [:] }

    /// Changes the stored processes (saved once).
    func updateProcesses(_ body: (inout [String: HandlerIdentity]) -> Void) {
        var processes = state.processes ?? [:]
        body(&processes)
        state.processes = processes
        save()
    }

    /// Drops `name`'s stored process (it exited).
    func forgetProcess(_ name: String) {
        guard state.processes?[name] != nil else { return }
        state.processes?[name] = nil
        save()
    }

    // MARK: Transfers'

    /// The background-transfer tasks not yet handed back.
    var transfers: [TransferRecord] { state.transfers ?? [] }

    /// Keeps `records` as the transfer tasks: throws when they could not be saved (the caller answers the requests
    /// that changed them with an error, not an acknowledgement).
    func setTransfers(_ records: [TransferRecord]) throws {
        state.transfers = records
        try store.save(state)
    }

    // MARK: Notifications'

    /// The handlers' pending local notifications.
    var localNotifications: LocalNotificationBook { state.localNotifications ?? LocalNotificationBook() }

    /// Keeps `book` as the pending local notifications.
    func setLocalNotifications(_ book: LocalNotificationBook) {
        guard state.localNotifications != book else { return }
        state.localNotifications = book
        save()
    }

    // MARK: The UnifiedPush distributor's

    /// The distributor's registrations.
    var unifiedPush: UnifiedPushBook { state.unifiedPush ?? UnifiedPushBook() }

    /// Keeps `book` as the distributor's registrations.
    func setUnifiedPush(_ book: UnifiedPushBook) {
        guard state.unifiedPush != book else { return }
        state.unifiedPush = book
        save()
    }
}
