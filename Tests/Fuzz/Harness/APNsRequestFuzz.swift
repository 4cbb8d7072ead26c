import RouseAPNs

/// APNs request validation (`APNsRequestValidator.validate`, which runs `APNsRules`, `APNsRequestHeaders.parse` and
/// `.validate`, `ProviderConnectionAuth.authenticate` and `.authorizeTopic`), as the mock and the gateway run it on
/// every request.
///
/// Input: lines. The first is `:method`, the second `:path`, then one header a line (`name: value`, lowercase as
/// HTTP/2 delivers them) up to an empty line; the bytes after it are the body (only its length counts). The same
/// request is validated twice on one connection, so the token caches of the second pass are covered too.
enum APNsRequestFuzz {
    static let target = FuzzTarget(
        name: "apns-request",
        summary: "APNsRequestValidator.validate (:method, :path, APNs headers, JWT auth, topic, payload size)",
        run: run)

    static func run(_ bytes: [UInt8]) {
        let request = HTTPRequestInput(bytes)
        var auth = ProviderConnectionAuth(serverEnvironment: .sandbox, keys: FuzzKeys.registry, certificate: nil)
        for _ in 0..<2 {
            _ = APNsRequestValidator.validate(
                method: request.method, path: request.path, headers: request.headers,
                duplicatePseudoHeaders: false, bodyLength: request.bodyLength, auth: &auth, now: FuzzKeys.now)
        }
        _ = APNsRequestValidator.echoedID(request.headers)
        _ = auth.maxConcurrentStreams(configured: 1000)
    }
}

/// An HTTP/2 request written as lines (see ``APNsRequestFuzz``).
struct HTTPRequestInput {
    var method = ""
    var path = ""
    var headers: [(name: String, value: String)] = []
    var bodyLength = 0

    init(_ bytes: [UInt8]) {
        let newline = UInt8(ascii: "\n")
        var lines = bytes.split(separator: newline, omittingEmptySubsequences: false)[...]
        var consumed = 0
        for index in 0..<2 {
            guard let line = lines.popFirst() else { break }
            consumed += line.count + 1
            if index == 0 {
                method = String(decoding: line, as: UTF8.self)
            } else {
                path = String(decoding: line, as: UTF8.self)
            }
        }
        while let line = lines.popFirst() {
            consumed += line.count + 1
            if line.isEmpty { break }
            let text = String(decoding: line, as: UTF8.self)
            if let colon = text.firstIndex(of: ":"), colon != text.startIndex {
                let value = text[text.index(after: colon)...]
                headers.append((String(text[..<colon]), String(value.drop { $0 == " " })))
            } else {
                headers.append((text, ""))
            }
        }
        bodyLength = max(0, bytes.count - consumed)
    }
}
