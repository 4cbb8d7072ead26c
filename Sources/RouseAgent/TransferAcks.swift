/// The replies to transfer requests held until the transfer book they changed is saved (docs/agent.md, "Background
/// transfers"): a run of requests (a handler's frames queued on its connection) costs one save, and no reply
/// acknowledges what a crash could still lose. Pure: the agent holds a reply here and marks a flush owed (``owe()``)
/// after each request; it flushes when the connection has no more frames ready (the run's end), or at once when
/// ``isFull``. The flush saves, then sends what ``take()`` returns (errors instead when the save failed).
struct TransferAcks<Reply> {
    /// Most replies held for one save: a handler that never pauses still has its replies within 16 requests.
    static var limit: Int { 16 }

    /// The replies held, in the order they are to be sent.
    private(set) var replies: [Reply] = []
    /// Whether a flush is owed: replies are held or the book changed (until ``take()``).
    private(set) var owed = false

    /// Nothing held.
    init() {}

    /// Holds `reply` until the next flush.
    mutating func hold(_ reply: Reply) { replies.append(reply) }

    /// Whether nothing is held.
    var isEmpty: Bool { replies.isEmpty }

    /// Whether the flush must happen now, not later in the run.
    var isFull: Bool { replies.count >= Self.limit }

    /// A flush is owed at the end of the run.
    mutating func owe() { owed = true }

    /// The flush: the replies held, in order (none held afterwards, no flush owed).
    mutating func take() -> [Reply] {
        defer { (replies, owed) = ([], false) }
        return replies
    }
}
