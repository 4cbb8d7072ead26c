import RouseAPNs

/// Called once per push with its id, outcome, attempts and retries.
typealias PushCompletion = @Sendable (UInt64, PushOutcome, Int, Int) -> Void

/// A transport engine: takes pushes, reports exactly one outcome for each.
protocol PushEngine: Sendable {
    /// Queues a push; `completion` runs exactly once.
    func submit(id: UInt64, push: APNsPush, lane: PushLane, deadline: Duration, completion: @escaping PushCompletion)
    /// Pushes without an outcome yet.
    var unfinishedCount: Int { get }
    /// Provider tokens minted so far (token auth; 0 where the engine does not count them).
    var tokensMinted: Int { get }
    /// Fails waiting pushes, lets in-flight ones finish (bounded), closes connections.
    func shutdown() async
}

extension PushEngine {
    /// Engines that do not count their mints report 0.
    var tokensMinted: Int { 0 }
}
