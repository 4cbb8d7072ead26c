import RouseWire

/// The device channel as the agent reads it: `ChannelLineSplitter` cuts the stream into lines, `ChannelRecord(line:)`
/// decodes each. Every record read must survive the gateway's own writer (`line`) unchanged.
enum ChannelRecordFuzz {
    static let target = FuzzTarget(
        name: "channel-record",
        summary: "ChannelLineSplitter and ChannelRecord(line:) (the device channel's records), with a round trip",
        run: run)

    static func run(_ bytes: [UInt8]) {
        var splitter = ChannelLineSplitter()
        for line in splitter.append(bytes) {
            guard let record = try? ChannelRecord(line: line) else { continue }
            let written = record.line
            guard let again = try? ChannelRecord(line: written.dropLast()), again == record else {
                fatalError("channel-record: \(record) does not survive its own line")
            }
        }
    }
}
