/// Per-stream state of a server connection (loop-confined).
final class ServerStream {
    let id: Int32
    var method = ""
    var path = ""
    var scheme = ""
    var authority = ""
    var headers: [HTTP2Header] = []
    var trailers: [HTTP2Header] = []
    var duplicatePseudo: [String] = []
    var seenPseudo: UInt8 = 0
    var headerListSize = 0
    var headerListTooLarge = false
    var body: [UInt8] = []
    var bodyLength = 0
    var bodyTruncated = false
    var dispatched = false
    /// When HEADERS arrived (monotonic ns), for the request deadline.
    var openedAt: UInt64 = 0
    /// Header and body bytes charged to the connection's buffer budget.
    var bufferedBytes = 0
    /// Reset by the server (budget or deadline): everything else it sends is dropped.
    var refused = false

    // Response side.
    var responseStarted = false
    var responseBody: [UInt8] = []
    var responseOffset = 0
    var responseFinished = false
    var responseTrailers: [HTTP2Header] = []
    var dataDeferred = false

    init(id: Int32) {
        self.id = id
        headers.reserveCapacity(12)
    }

    /// Records a pseudo-header; returns false if it was already present or is unknown.
    func setPseudo(_ name: String, _ value: String) -> Bool {
        let bit: UInt8
        switch name {
        case ":method":
            bit = 1
            method = value
        case ":path":
            bit = 2
            path = value
        case ":scheme":
            bit = 4
            scheme = value
        case ":authority":
            bit = 8
            authority = value
        default:
            duplicatePseudo.append(name)
            return false
        }
        if seenPseudo & bit != 0 {
            duplicatePseudo.append(name)
            return false
        }
        seenPseudo |= bit
        return true
    }
}
