import RouseText

extension ChannelRecord {
    /// The record as the gateway writes it: one JSON object and `\n`, members in a fixed order, no newline
    /// inside. Hand-written (the gateway's hot path); byte for byte what earlier gateways wrote.
    package var line: [UInt8] {
        var text: String
        switch self {
        case .hello(let hello):
            text = "{\"type\":\"hello\",\"device\":\(JSONString.quoted(hello.device)),\"channel\":\(hello.channel)"
            text += ",\"heartbeat\":\(hello.heartbeat),\"window\":\(hello.window)}"
        case .push(let push):
            text = "{\"type\":\"push\",\"id\":\(JSONString.quoted(push.id)),\"token\":\(JSONString.quoted(push.token))"
            text += ",\"topic\":\(JSONString.quoted(push.topic))"
            if let pushType = push.pushType { text += ",\"pushType\":\(JSONString.quoted(pushType))" }
            text += ",\"priority\":\(push.priority),\"apnsID\":\(JSONString.quoted(push.apnsID))"
            if let collapseID = push.collapseID { text += ",\"collapseID\":\(JSONString.quoted(collapseID))" }
            text += ",\"expiration\":\(push.expiration),\"receivedAt\":\(push.receivedAt)"
            text += ",\"payload\":\(JSONString.quoted(push.payload))}"
        case .heartbeat(let heartbeat):
            text = "{\"type\":\"heartbeat\",\"time\":\(heartbeat.time)}"
        case .webpush(let webpush):
            text = webpush.text
        case .replaced, .revoked, .shutdown, .unknown:
            text = "{\"type\":\(JSONString.quoted(type))}"
        }
        var bytes = Array(text.utf8)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Reads one line (without its `\n`).
    package init(line: some Collection<UInt8>) throws(ChannelRecordError) {
        do {
            self = try JSONCoding.decode(ChannelRecord.self, from: line)
        } catch let error as ChannelRecordError {
            throw error
        } catch let error as DecodingError {
            throw ChannelRecordError(decoding: error, record: nil)
        } catch {
            throw .notJSON("\(error)")
        }
    }
}

/// Splits the channel's byte stream into lines (without their `\n`). A line longer than ``maxLine`` is
/// dropped: no record comes near it (a push with a 5 KiB payload is about 7 KiB).
package struct ChannelLineSplitter: Sendable {
    private var buffer: [UInt8] = []
    /// Longest line kept.
    package let maxLine = 1 << 20

    /// An empty splitter.
    package init() {}

    /// Appends bytes read from the channel; the lines they complete.
    package mutating func append(_ bytes: some Sequence<UInt8>) -> [[UInt8]] {
        buffer += bytes
        var lines: [[UInt8]] = []
        while let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) {
            lines.append(Array(buffer[..<newline]))
            buffer.removeSubrange(...newline)
        }
        if buffer.count > maxLine { buffer.removeAll() }
        return lines
    }
}
