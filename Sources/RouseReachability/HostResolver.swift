import RouseNetlink

/// Resolves host names for `.host` targets. Called off the monitor thread; may block.
public protocol HostResolver: Sendable {
    /// The addresses of `host`, most preferred first; throw or return empty when it does not resolve.
    func resolve(_ host: String) throws -> [IPAddress]
}

/// The system resolver: `getaddrinfo(3)` (so `/etc/hosts`, `nsswitch.conf` and DNS apply).
public struct SystemHostResolver: HostResolver {
    /// Creates the system resolver.
    public init() {}

    public func resolve(_ host: String) throws -> [IPAddress] {
        try NetlinkSystem.resolve(host: host)
    }
}
