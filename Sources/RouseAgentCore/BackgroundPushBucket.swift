import RouseClock

/// The background-push token bucket of one handler (iOS delivers background pushes at a limited rate: a burst, then
/// `background-per-hour`): a part of ``HandlerMachine`` that owns only this state.
struct BackgroundPushBucket: Sendable, Equatable {
    /// Tokens at ``at`` (fractional: the refill is continuous).
    private var tokens: Double
    /// When ``tokens`` was last set; nil: never spent (full, or as restored with no time yet).
    private var at: Duration?

    /// A full bucket of `burst` tokens.
    init(burst: Int) { tokens = Double(burst) }

    /// Tokens available at `now`: those left plus the refill since, at most `burst`.
    func available(now: Duration, burst: Int, perHour: Double) -> Double {
        guard let at else { return tokens }
        let gained = (now - at).inSeconds * perHour / 3600
        return min(Double(burst), tokens + gained)
    }

    /// Spends one token at `now`.
    mutating func take(now: Duration, burst: Int, perHour: Double) {
        tokens = available(now: now, burst: burst, perHour: perHour) - 1
        at = now
    }

    /// Restores a preserved count at `now`, clamped to 0…`burst` (a file's number is not trusted).
    mutating func restore(tokens: Double, now: Duration, burst: Int) {
        self.tokens = min(Double(burst), max(0, tokens))
        at = now
    }
}
