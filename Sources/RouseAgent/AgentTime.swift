import RouseClock

/// The agent's time on its clock (``AgentConfiguration/clock``): machine time counts from the agent's start (what
/// the rules machines' deadlines are in), wall time is the clock's. Every part reads time through it.
struct AgentTime: Sendable {
    /// The clock every "now" and timer of the agent reads.
    let clock: any RouseClock
    /// The agent's time zero on ``clock``.
    let epoch: RouseInstant
    /// UNIX time (milliseconds) at ``epoch``: maps strike times to wall time and back across restarts.
    let wallEpochMilliseconds: Int64

    /// Time starting now on `clock`.
    init(clock: any RouseClock) {
        self.clock = clock
        epoch = clock.now
        wallEpochMilliseconds = clock.wallMilliseconds
    }

    /// Machine time: since ``epoch``.
    var now: Duration { epoch.duration(to: clock.now) }

    /// The wall clock in UNIX milliseconds.
    var wallMilliseconds: Int64 { clock.wallMilliseconds }

    /// The instant of machine time `time`.
    func instant(_ time: Duration) -> RouseInstant { epoch.advanced(by: time) }

    /// The activation arbiter's clock: machine time in seconds.
    var seconds: Double { now.inSeconds }

    /// A timer on the clock.
    func timer() -> AgentTimer { AgentTimer(clock: clock) }
}
