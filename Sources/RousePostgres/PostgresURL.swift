import RouseText

/// libpq connection URLs (`postgresql://user:password@host:port/database?key=value`), read without libpq: what
/// names one, where it points, and the URL without its secrets for logs.
package enum PostgresURL {
    /// True for a string that is a libpq URL (rather than, say, a file's path).
    package static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
    }

    /// `url` without its secrets: a password in the user info (which may itself hold `@`) becomes `***`, as does a
    /// `password=` query parameter; a text that is no URL but mentions a password is `<redacted>`.
    package static func redacted(_ url: String) -> String {
        guard let scheme = url.firstRange(ofText: "://") else { return url.includes("password") ? "<redacted>" : url }
        let rest = url[scheme.upperBound...]
        // The authority ends at the first `/` or `?` after the user info; the user info at the authority's last `@`.
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = String(rest[..<authorityEnd])
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            if let colon = userInfo.firstIndex(of: ":") {
                authority = String(userInfo[..<colon]) + ":***" + String(authority[at...])
            }
        }
        var tail = String(rest[authorityEnd...])
        if let question = tail.firstIndex(of: "?") {
            let query = tail[tail.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false)
                .map { pair -> String in
                    pair.lowercased().hasPrefix("password=") ? "password=***" : String(pair)
                }
            tail = String(tail[...question]) + query.joined(separator: "&")
        }
        return String(url[..<scheme.upperBound]) + authority + tail
    }

    /// The host of `url` (empty: the local socket; an IPv6 address keeps its brackets); nil for no URL.
    package static func host(_ url: String) -> String? {
        guard let scheme = url.firstRange(ofText: "://") else { return nil }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") {
            return authority.firstIndex(of: "]").map { String(authority[...$0]) } ?? String(authority)
        }
        return String(authority.split(separator: ":", maxSplits: 1).first ?? "")
    }
}
