/// A token bucket: `rate` pushes per second on average, bursts up to `burst`. A value type driven by the caller's
/// monotonic time, so tests step it without sleeping.
package struct RateLimiter: Sendable, Equatable {
    /// Pushes per second.
    package let rate: Double
    /// Bucket size.
    package let burst: Double
    private var tokens: Double
    private var last: Duration?

    /// A full bucket.
    package init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = max(1, burst)
        tokens = self.burst
    }

    /// Takes `count` tokens at `now` if there are enough; otherwise takes none and returns the wait until there
    /// would be (for `Retry-After`).
    package mutating func take(_ count: Int, now: Duration) -> Duration? {
        if let last {
            let elapsed = now - last
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            tokens = min(burst, tokens + max(0, seconds) * rate)
        }
        last = now
        let need = Double(count)
        if tokens >= need {
            tokens -= need
            return nil
        }
        return .milliseconds(Int64(((min(need, burst) - tokens) / rate * 1000).rounded(.up)))
    }
}
