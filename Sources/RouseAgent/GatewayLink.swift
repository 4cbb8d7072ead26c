import Logging
import RouseAgentCore
import RouseReachability
import RouseWire

/// The gateway link's state: the device channel and what the agent knows of it, the gateway's reachability, the
/// pushes on their way to a handler, the handler report the gateway was last given, and the retry of failed token
/// requests. Owned by the ``Agent`` and touched only on its isolation; the agent performs the requests (enrollment,
/// tokens, the report) and tells the link how they went. The enrollment and the tokens themselves are durable
/// (``DurableState``).
final class GatewayLink {
    /// The gateway's device API.
    let api: GatewayAPI
    private let backoff: ChannelStateMachine.Backoff
    private let logger: Logger
    /// The device channel, once enrolled.
    private(set) var channel: DeviceChannel?
    /// The channel's state as it last told.
    private(set) var channelState: ChannelStateMachine.State = .waitingForNetwork
    /// Whether the gateway is reachable (reachability's verdict).
    private(set) var reachable = false
    private var monitor: ReachabilityMonitor?
    /// Pushes handed to a handler's rules and not acknowledged yet (by delivery id): a re-send meanwhile is ignored.
    private var inFlight: Set<String> = []
    /// The handler report the gateway last accepted (nil: none since the channel opened).
    private var reportSent: DeviceHandlerReport?
    /// A handler report is on its way to the gateway.
    private var reportSending = false
    /// The channel opened while a report was on its way: send once more when it is back.
    private var reportOwed = false
    private var reportTask: Task<Void, Never>?
    /// A pending retry of failed token requests, and the delay of the next one.
    private var tokenRetry: Task<Void, Never>?
    private var tokenRetryDelay = Duration.milliseconds(500)

    /// A link to the gateway at `api`, retrying with `backoff`.
    init(api: GatewayAPI, backoff: ChannelStateMachine.Backoff, logger: Logger) {
        self.api = api
        self.backoff = backoff
        self.logger = logger
    }

    /// The channel exists (after enrollment).
    func connected(_ channel: DeviceChannel) { self.channel = channel }

    /// Reachability is watched through `monitor` (stopped with the link).
    func watching(_ monitor: ReachabilityMonitor) { self.monitor = monitor }

    /// Records the gateway's reachability; true when it changed.
    func reachability(_ usable: Bool) -> Bool {
        defer { reachable = usable }
        return usable != reachable
    }

    /// Records the channel's state; true when it just opened (the report is then owed once more).
    func channelChanged(_ new: ChannelStateMachine.State) -> Bool {
        let was = channelState
        channelState = new
        guard new == .open && was != .open else { return false }
        // Once per channel: a gateway that missed a report (or lost it) catches up.
        reportSent = nil
        reportOwed = reportSending
        return true
    }

    // MARK: Pushes

    /// `id` is on its way to a handler; false when it already is.
    func beginDelivery(_ id: String) -> Bool { inFlight.insert(id).inserted }

    /// `id` was acknowledged, or goes back to the gateway's care.
    func endDelivery(_ id: String) { inFlight.remove(id) }

    /// Acknowledges `id` to the gateway (it is no longer on its way).
    func ack(_ id: String) {
        inFlight.remove(id)
        let channel = channel
        Task { await channel?.ack(id) }
    }

    // MARK: Handler report

    /// Whether `body` is to be sent now: not while one is on its way, before enrollment, with the channel not open,
    /// or when the gateway has it. When it is, the link counts it as on its way.
    func shouldReport(_ body: DeviceHandlerReport, enrolled: Bool) -> Bool {
        guard !reportSending, enrolled, channelState == .open, body != reportSent else { return false }
        reportSending = true
        return true
    }

    /// The report's request runs in `task`.
    func reporting(_ task: Task<Void, Never>) { reportTask = task }

    /// The report's request ended (`sent` accepted, or `error`); true when the report is to be looked at again.
    func reportDone(_ sent: DeviceHandlerReport?, error: (any Error)?) -> Bool {
        reportSending = false
        reportTask = nil
        if let error {
            logger.warning("handler report not accepted by the gateway", metadata: ["error": "\(error)"])
        } else {
            reportSent = sent
            logger.debug("handler report accepted", metadata: ["report": "\(sent?.json ?? "")"])
        }
        if reportOwed {
            // The channel opened while it was on its way: the once-per-open report is still owed (one attempt).
            reportOwed = false
            reportSent = nil
        } else if error != nil {
            return false  // retried at the next change or channel open
        }
        // Something may have changed while it was on its way.
        return true
    }

    // MARK: Tokens

    /// Every topic has its token: the next failure retries after the initial backoff.
    func tokensComplete() { tokenRetryDelay = backoff.initial }

    /// The delay of a retry of the failed token requests, or nil when none is to be armed (one is, or the gateway is
    /// unreachable: the channel opening again fetches what is missing). The next delay doubles.
    func nextTokenRetry() -> Duration? {
        guard tokenRetry == nil, reachable else { return nil }
        let delay = tokenRetryDelay
        tokenRetryDelay = min(tokenRetryDelay * 2, backoff.maximum)
        return delay
    }

    /// The retry runs in `task`.
    func retryingTokens(_ task: Task<Void, Never>) { tokenRetry = task }

    /// The retry fired.
    func tokenRetryFired() { tokenRetry = nil }

    /// Stops the channel, the reachability monitor and the requests on their way.
    func stop(isolation: isolated (any Actor)? = #isolation) async {
        await channel?.stop()
        reportTask?.cancel()
        tokenRetry?.cancel()
        monitor?.stop()
    }
}
