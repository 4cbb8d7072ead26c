import RouseAgent

/// A handler file as the agent reads it from /etc/rouse/handlers: `HandlerConfiguration.parse`, which runs the TOML
/// subset parser and every key's check.
enum HandlerTOMLFuzz {
    static let target = FuzzTarget(
        name: "handler-toml",
        summary: "HandlerConfiguration.parse (TOMLSubset and the handler file's keys)",
        run: run)

    static func run(_ bytes: [UInt8]) {
        _ = try? HandlerConfiguration.parse(
            String(decoding: bytes, as: UTF8.self), name: "fuzz", file: "fuzz.toml")
    }
}
