import Logging
import RouseClock
import RouseSystem
import RouseWire

/// One JSON object per log line on stderr: `{"time":…,"level":…,"label":…,"message":…,<metadata>}`.
package struct JSONLogHandler: LogHandler {
    let label: String
    /// The clock of the `time` field (UNIX seconds, microseconds kept).
    private let clock = SystemClock()
    package var logLevel: Logger.Level = .info
    package var metadata: Logger.Metadata = [:]

    /// A handler for `label` (pass it to `LoggingSystem.bootstrap`).
    package init(label: String) {
        self.label = label
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let time = Double(clock.wallMicroseconds) / 1_000_000
        var line = "{\"time\":\(time),\"level\":\"\(event.level)\""
        line += ",\"label\":\(quoted(label)),\"message\":\(quoted(event.message.description))"
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            line += ",\(quoted(key)):\(quoted(value.description))"
        }
        line += "}\n"
        // A full disk, a closed pipe or a journal stream shut down loses the line, not the process.
        Sys.writeStandardError(line)
    }

    private func quoted(_ text: String) -> String { JSONString.quoted(text) }
}

/// Every program's logging set-up: one JSON object per line on stderr (`json`), or swift-log's plain stderr lines,
/// at `level`. Called once by each `main`, before its first `Logger`.
package enum RouseLogging {
    package static func bootstrap(level: Logger.Level, json: Bool = false) {
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                json ? JSONLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
