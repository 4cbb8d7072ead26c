import RouseNetlink

/// What a monitor watches, in the spirit of `SCNetworkReachabilityCreateWith…`.
public enum ReachabilityTarget: Hashable, Sendable, CustomStringConvertible {
    /// A host name, resolved asynchronously (never on the monitor thread) and re-resolved when the
    /// network changes.
    case host(String)
    /// One IPv4 or IPv6 address.
    case address(IPAddress)
    /// Can `remote` be reached from the local address `local` (e.g. a socket's bound source)?
    case addressPair(local: IPAddress, remote: IPAddress)
    /// The "any network" token (`0.0.0.0` / `::`): the general routing status, IPv4 and IPv6.
    case anyNetwork

    /// Parses command-line text: `0.0.0.0`, `::` or `any` → `.anyNetwork`; `LOCAL,REMOTE` → a pair;
    /// an IP literal → `.address`; otherwise a host name (RFC 1123 letters, digits, `-`, `.`).
    public init(parsing text: String) throws(ReachabilityError) {
        let trimmed = text.trimmingSpaces
        if trimmed == "any" { self = .anyNetwork; return }
        if trimmed.contains(",") {
            let parts = trimmed.split(separator: ",", omittingEmptySubsequences: false).map {
                String($0).trimmingSpaces
            }
            guard parts.count == 2 else {
                throw ReachabilityError(.badTarget, "'\(text)': an address pair is LOCAL,REMOTE (two addresses)")
            }
            guard let local = IPAddress(parts[0]) else {
                throw ReachabilityError(.badTarget, "'\(text)': local '\(parts[0])' is not an IP address")
            }
            guard let remote = IPAddress(parts[1]) else {
                throw ReachabilityError(.badTarget, "'\(text)': remote '\(parts[1])' is not an IP address")
            }
            guard local.family == remote.family else {
                throw ReachabilityError(.badTarget, "'\(text)': local and remote are of different families")
            }
            self = .addressPair(local: local, remote: remote)
            return
        }
        if let address = IPAddress(trimmed) {
            self = address.isUnspecified ? .anyNetwork : .address(address)
            return
        }
        guard Self.isValidHostName(trimmed) else {
            throw ReachabilityError(.badTarget, "'\(text)' is neither an IP address nor a valid host name")
        }
        self = .host(trimmed.lowercased())
    }

    static func isValidHostName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 253 else { return false }
        let labels =
            name.hasSuffix(".")
            ? name.dropLast().split(separator: ".", omittingEmptySubsequences: false)
            : name.split(separator: ".", omittingEmptySubsequences: false)
        guard !labels.isEmpty else { return false }
        for label in labels {
            guard !label.isEmpty, label.utf8.count <= 63, label.first != "-", label.last != "-" else { return false }
            guard
                label.unicodeScalars.allSatisfy({
                    $0.properties.isASCIIHexDigit || ("a"..."z").contains($0)
                        || ("A"..."Z").contains($0) || $0 == "-"
                })
            else { return false }
        }
        // An all-numeric last label is a mistyped address, not a name.
        if let last = labels.last, last.allSatisfy({ $0.isNumber }) { return false }
        return true
    }

    public var description: String {
        switch self {
        case .host(let name): return name
        case .address(let address): return address.description
        case .addressPair(let local, let remote): return "\(local),\(remote)"
        case .anyNetwork: return "any"
        }
    }
}

extension String {
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while scalars.first?.isWhitespace == true { scalars.removeFirst() }
        while scalars.last?.isWhitespace == true { scalars.removeLast() }
        return String(scalars)
    }
}
