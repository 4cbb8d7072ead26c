import RouseGateway

/// What one gateway node reads from another's PostgreSQL `NOTIFY` payload: `NodeMessage.parse`. Every message read
/// must survive `payloads` (its own writer) unchanged.
enum NodeMessageFuzz {
    static let target = FuzzTarget(
        name: "node-message",
        summary: "NodeMessage.parse (gateway node-to-node NOTIFY payloads), with a round trip",
        run: run)

    static func run(_ bytes: [UInt8]) {
        let (messages, _) = NodeMessage.parse(String(decoding: bytes, as: UTF8.self))
        for message in messages {
            let (again, errors) = NodeMessage.parse(message.line)
            guard errors.isEmpty, again == [message] else {
                fatalError("node-message: \(message) does not survive its own line")
            }
        }
    }
}
