import CRouseCurl

/// Which destinations a request with ``CurlRequest/publicDestinationsOnly`` may reach, for checks before libcurl
/// runs (the same rule its socket callback applies to every address it connects to).
package enum CurlDestination {
    /// Whether `url`'s host is a name or address a public-only request refuses before resolving anything: an
    /// internal address literal (loopback, link-local, private, unique-local, multicast, unspecified) or
    /// `localhost` (and names under it). A public name is checked when libcurl connects.
    package static func isInternal(url: String) -> Bool {
        guard let host = host(of: url)?.lowercased() else { return false }
        if host == "localhost" || host == "localhost." || host.hasSuffix(".localhost") { return true }
        return rouse_curl_literal_is_internal(host) == 1
    }

    /// The host of an absolute URL: between `://` (and any `user@`) and the port, path, query or fragment;
    /// brackets of an IPv6 literal removed.
    static func host(of url: String) -> String? {
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else { return nil }
        var authority = url[url.index(colon, offsetBy: 3)...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        return String(authority.prefix { $0 != ":" })
    }
}
