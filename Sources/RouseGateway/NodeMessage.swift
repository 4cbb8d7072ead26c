/// What one gateway node tells another through the database (PostgreSQL `NOTIFY` on the receiving node's channel,
/// sent when the sender's transaction commits): one message a line, fields separated by tabs, the device id last
/// and percent-escaped (`%`, tab and newline), so no device id can forge a second message.
package enum NodeMessage: Sendable, Hashable {
    /// Pushes for the device were committed elsewhere, up to its sequence number `seq`: load them, in order.
    case pending(deviceID: String, seq: Int64)
    /// The device opened a newer channel elsewhere: close channel `channelID` (if still open here) with `replaced`.
    case replaced(deviceID: String, channelID: UInt64)
    /// The device was revoked: close its channel with `revoked`.
    case revoked(deviceID: String)

    /// The largest payload sent in one notification, before it is sealed (`NodeMessageSeal`: a header line, the
    /// nonce and tag, base64): PostgreSQL's limit is 8000 bytes.
    package static let maxPayloadBytes = 5000

    /// The message as one line (without its newline).
    package var line: String {
        switch self {
        case .pending(let deviceID, let seq): "p\t\(seq)\t\(Self.escape(deviceID))"
        case .replaced(let deviceID, let channelID): "c\t\(channelID)\t\(Self.escape(deviceID))"
        case .revoked(let deviceID): "r\t\(Self.escape(deviceID))"
        }
    }

    /// The failure to read one line.
    package struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        /// The line, cut to 80 characters.
        package var line: String
        /// What was wrong.
        package var reason: String
        package var description: String { "node message \"\(line)\": \(reason)" }
    }

    /// Reads a notification's payload: the messages of its well-formed lines, and an error for each other line.
    package static func parse(_ payload: String) -> (messages: [NodeMessage], errors: [ParseError]) {
        var messages: [NodeMessage] = []
        var errors: [ParseError] = []
        // Lines, fields and escapes are cut on bytes, not on Characters: a grapheme cluster may span a separator
        // ("\r\n" is one Character) or an escape ("%" and a combining mark), and the writer escapes scalars.
        for line in payload.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            switch parse(line: Substring(line)) {
            case .success(let message): messages.append(message)
            case .failure(let error): errors.append(error)
            }
        }
        return (messages, errors)
    }

    static func parse(line: Substring) -> Result<NodeMessage, ParseError> {
        func failure(_ reason: String) -> Result<NodeMessage, ParseError> {
            .failure(ParseError(line: String(line.prefix(80)), reason: reason))
        }
        let fields = line.utf8.split(separator: UInt8(ascii: "\t"), omittingEmptySubsequences: false)
            .map(Substring.init)
        guard let kind = fields.first else { return failure("empty") }
        let expected = kind == "r" ? 2 : 3
        guard fields.count == expected else { return failure("\(fields.count) fields, expected \(expected)") }
        guard let deviceID = unescape(fields[expected - 1]), !deviceID.isEmpty else {
            return failure("bad device id")
        }
        switch kind {
        case "p":
            guard let seq = Int64(fields[1]), seq > 0 else { return failure("bad sequence number") }
            return .success(.pending(deviceID: deviceID, seq: seq))
        case "c":
            guard let channelID = UInt64(fields[1]) else { return failure("bad channel id") }
            return .success(.replaced(deviceID: deviceID, channelID: channelID))
        case "r":
            return .success(.revoked(deviceID: deviceID))
        default:
            return failure("unknown kind")
        }
    }

    /// Joins messages into payloads of at most `maxPayloadBytes` each.
    package static func payloads(_ messages: [NodeMessage]) -> [String] {
        var payloads: [String] = []
        var current = ""
        for message in messages {
            let line = message.line
            if !current.isEmpty, current.utf8.count + 1 + line.utf8.count > maxPayloadBytes {
                payloads.append(current)
                current = ""
            }
            current += current.isEmpty ? line : "\n" + line
        }
        if !current.isEmpty { payloads.append(current) }
        return payloads
    }

    private static func escape(_ text: String) -> String {
        var result = ""
        for character in text.unicodeScalars {
            switch character {
            case "%": result += "%25"
            case "\t": result += "%09"
            case "\n": result += "%0A"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    private static func unescape(_ text: Substring) -> String? {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return String(text) }
        var result = String.UnicodeScalarView()
        var scalars = text.unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            guard scalar == "%" else {
                result.append(scalar)
                continue
            }
            switch String(String.UnicodeScalarView(scalars.prefix(2))) {
            case "25": result.append("%")
            case "09": result.append("\t")
            case "0A": result.append("\n")
            default: return nil
            }
            scalars = scalars.dropFirst(2)
        }
        return String(result)
    }
}
