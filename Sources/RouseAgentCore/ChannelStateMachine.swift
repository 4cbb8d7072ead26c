/// The device channel's connection logic as a value: inputs are reachability, connect results, channel
/// records and timers; outputs are ``ChannelStateMachine/Action``s for the libcurl shell.
///
/// Rules: unreachable ⇒ close at once and stop every timer; reachable again ⇒ connect at once (no backoff);
/// any other failure ⇒ jittered exponential backoff, towards the next gateway node when several are given (the
/// node is unreachable or ended the channel; the network is not at fault); preferred source address change ⇒
/// reconnect; while
/// open, a record must arrive within the heartbeat deadline (`2 × heartbeat + slack`) or the channel is
/// deemed dead (libcurl 7.88 cannot send HTTP/2 PINGs on multi handles, so the gateway's `heartbeat`
/// records plus TCP keepalive are the liveness probes).
package struct ChannelStateMachine: Sendable {
    /// Connection state.
    package enum State: String, Sendable, Equatable {
        /// The gateway is unreachable: no connection, no timers.
        case waitingForNetwork
        /// A channel request is in flight.
        case connecting
        /// The channel is open (hello received).
        case open
        /// Waiting for the backoff timer after a failure.
        case backingOff
        /// Revoked or stopped: nothing more.
        case stopped
    }

    /// What the shell must do.
    package enum Action: Sendable, Equatable {
        /// Open the channel (`GET /device/v1/channel`).
        case connect
        /// Close the current channel transfer.
        case close
        /// Arm the (single) timer to fire after this long.
        case armTimer(Duration)
        /// Cancel the timer.
        case cancelTimer
    }

    /// A failure of the channel.
    package enum Failure: Sendable, Equatable {
        /// Transport or HTTP failure that may pass: back off and retry.
        case retryable
        /// The device was revoked (`403 deviceRevoked` or a `revoked` record): stop.
        case fatal
    }

    /// Backoff: first delay, factor 2, cap; jitter draws each delay in [½, 1] × the nominal value.
    package struct Backoff: Sendable, Equatable {
        /// First delay.
        package var initial: Duration = .milliseconds(500)
        /// Largest delay.
        package var maximum: Duration = .seconds(60)
        /// Defaults.
        package init() {}
    }

    /// Current state.
    package private(set) var state: State = .waitingForNetwork
    /// Whether the gateway is reachable as far as we know.
    package private(set) var reachable = false
    /// Consecutive failures since the last open channel.
    package private(set) var failures = 0
    /// Heartbeat deadline while open (nil = none).
    package private(set) var heartbeatDeadline: Duration?
    /// The gateway node to connect to, among `gateways`.
    package private(set) var gateway = 0
    /// Gateway nodes to choose from (several nodes sharing a PostgreSQL store; 1: one gateway).
    package let gateways: Int
    private let backoff: Backoff
    private var random: SplitMix64

    /// A machine waiting for the first reachability answer; `seed` makes the jitter reproducible.
    package init(backoff: Backoff = Backoff(), seed: UInt64 = 0x5EED, gateways: Int = 1) {
        self.gateways = max(gateways, 1)
        self.backoff = backoff
        self.random = SplitMix64(seed: seed)
    }

    /// Reachability of the gateway host changed (or was first learnt).
    package mutating func reachability(_ usable: Bool) -> [Action] {
        let was = reachable
        reachable = usable
        guard state != .stopped else { return [] }
        if !usable {
            let wasConnected = state == .open || state == .connecting
            state = .waitingForNetwork
            failures = 0
            return wasConnected ? [.close, .cancelTimer] : [.cancelTimer]
        }
        if was && (state == .open || state == .connecting) { return [] }
        // Network back: connect at once, whatever the backoff said.
        failures = 0
        state = .connecting
        return [.cancelTimer, .connect]
    }

    /// The preferred source address towards the gateway changed: the old connection is bound to a stale
    /// address, so reconnect at once.
    package mutating func sourceAddressChanged() -> [Action] {
        guard reachable, state != .stopped else { return [] }
        let wasConnected = state == .open || state == .connecting
        state = .connecting
        return (wasConnected ? [.close] : []) + [.cancelTimer, .connect]
    }

    /// Largest heartbeat interval a gateway may announce (a day): the deadline arithmetic stays far from overflow,
    /// and a larger value is a broken or hostile gateway.
    package static let maxHeartbeatSeconds = 86_400

    /// Whether a `hello`'s heartbeat is one the agent accepts (0 = none, up to ``maxHeartbeatSeconds``).
    package static func acceptsHeartbeat(_ seconds: Int) -> Bool { (0...maxHeartbeatSeconds).contains(seconds) }

    /// The channel answered 200 and sent `hello` with its heartbeat interval in seconds (0 = none). A value the
    /// agent does not accept (``acceptsHeartbeat(_:)``) fails the channel like a transport error.
    package mutating func opened(heartbeatSeconds: Int) -> [Action] {
        guard state == .connecting else { return [] }
        guard Self.acceptsHeartbeat(heartbeatSeconds) else { return failed(.retryable) }
        state = .open
        failures = 0
        guard heartbeatSeconds > 0 else {
            heartbeatDeadline = nil
            return [.cancelTimer]
        }
        let deadline = Duration.seconds(heartbeatSeconds * 2 + 10)
        heartbeatDeadline = deadline
        return [.armTimer(deadline)]
    }

    /// Any record arrived on the open channel: the connection is alive.
    package mutating func recordReceived() -> [Action] {
        guard state == .open, let deadline = heartbeatDeadline else { return [] }
        return [.armTimer(deadline)]
    }

    /// The gateway ends the channel on purpose (`shutdown`, `replaced`): reconnect after a short backoff.
    package mutating func closedByGateway() -> [Action] {
        failed(.retryable)
    }

    /// Connecting failed, or the open channel ended with an error.
    package mutating func failed(_ failure: Failure) -> [Action] {
        guard state == .connecting || state == .open else { return [] }
        if failure == .fatal {
            state = .stopped
            return [.close, .cancelTimer]
        }
        guard reachable else {
            state = .waitingForNetwork
            return [.close, .cancelTimer]
        }
        state = .backingOff
        let delay = nextDelay()
        failures += 1
        // The next attempt goes to the next node, after the same backoff.
        gateway = (gateway + 1) % gateways
        return [.close, .armTimer(delay)]
    }

    /// The timer fired: backoff over ⇒ connect; heartbeat deadline passed ⇒ the channel is dead.
    package mutating func timerFired() -> [Action] {
        switch state {
        case .backingOff:
            state = .connecting
            return [.connect]
        case .open:
            return failed(.retryable)
        default:
            return []
        }
    }

    /// Stop for good (agent shutdown).
    package mutating func stop() -> [Action] {
        let wasConnected = state == .open || state == .connecting
        state = .stopped
        return (wasConnected ? [.close] : []) + [.cancelTimer]
    }

    private mutating func nextDelay() -> Duration {
        let exponent = min(failures, 20)
        let nominal = min(backoff.initial * (1 << exponent), backoff.maximum)
        let fraction = 0.5 + 0.5 * Double(random.next() >> 11) / Double(1 << 53)
        return nominal * fraction
    }
}

/// A small deterministic generator (SplitMix64), hand-written because the standard library's generator cannot be
/// seeded: backoff jitter here, and the benchmarks' workloads and fault schedules, which replay from a seed.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64
    package init(seed: UInt64) { state = seed }
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
