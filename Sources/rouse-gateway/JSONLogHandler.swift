import Foundation
import Logging
import RouseAPNs

/// One JSON object per log line on stderr: `{"time":…,"level":…,"label":…,"message":…,<metadata>}`.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        var line = "{\"time\":\(Date().timeIntervalSince1970),\"level\":\"\(event.level)\""
        line += ",\"label\":\(JSONText.quoted(label)),\"message\":\(JSONText.quoted(event.message.description))"
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) {
            line += ",\(JSONText.quoted(key)):\(JSONText.quoted(value.description))"
        }
        line += "}\n"
        FileHandle.standardError.write(Data(line.utf8))
    }
}
