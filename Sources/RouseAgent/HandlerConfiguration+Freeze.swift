import RouseAgentCore

/// The handler-file keys of ``FreezeRules`` (top level):
///
/// ```toml
/// exits-on-suspend = false                 # true: terminated where it would be frozen
/// listening-sockets = "report"             # or "terminate": a listening socket at freeze time ends it
/// exclusive-files = ["/var/lib/app/db.lock"]  # a lock held on one of these at freeze time ends it
/// silent-audio-grace-seconds = 10          # a held playback session protects from freezing only while audible
/// ```
extension HandlerConfiguration {
    /// The keys parsed here.
    static let freezeKeys: Set<String> = [
        "exits-on-suspend", "listening-sockets", "exclusive-files", "silent-audio-grace-seconds",
    ]
    /// Most exclusive files a handler may declare (each is looked up in `/proc/locks` at every freeze).
    static let maxExclusiveFiles = 16

    /// Reads the freeze keys of a parsed file into ``freeze``.
    mutating func parseFreezeRules(_ values: [String: TOMLSubset.Value], file: String) throws(AgentError) {
        if let value = values["exits-on-suspend"] {
            guard case .bool(let flag) = value else {
                throw .configuration("\(file): exits-on-suspend must be true or false")
            }
            freeze.exitsOnSuspend = flag
        }
        if let value = values["listening-sockets"] {
            guard case .string(let text) = value, let policy = ListeningSocketPolicy(rawValue: text) else {
                throw .configuration("\(file): listening-sockets must be \"report\" or \"terminate\"")
            }
            freeze.listeningSockets = policy
        }
        if let value = values["exclusive-files"] {
            guard case .array(let items) = value, items.count <= Self.maxExclusiveFiles else {
                throw .configuration(
                    "\(file): exclusive-files must be an array of at most \(Self.maxExclusiveFiles) absolute paths")
            }
            var paths: [String] = []
            for item in items {
                guard case .string(let path) = item, path.hasPrefix("/"), !path.utf8.contains(0),
                    path.utf8.count <= 4096
                else {
                    throw .configuration("\(file): exclusive-files: each entry is an absolute path")
                }
                paths.append(path)
            }
            freeze.exclusiveFiles = paths
        }
        if let value = values["silent-audio-grace-seconds"] {
            let seconds: Double
            switch value {
            case .integer(let n): seconds = Double(n)
            case .float(let x): seconds = x
            default: seconds = -1
            }
            guard seconds >= 0.1, seconds <= 3600 else {
                throw .configuration("\(file): silent-audio-grace-seconds must be a number from 0.1 to 3600")
            }
            freeze.silentAudioGrace = .milliseconds(Int64((seconds * 1000).rounded()))
        }
    }
}
