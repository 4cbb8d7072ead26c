import FoundationEssentials
import RouseAPNs
import RouseSender
import RouseText

/// `rouse send`'s options merged with the environment and the config file, checked, turned into a sender
/// configuration and a push template.
struct SendSettings {
    var configuration: APNsSenderConfiguration
    var push: APNsPush
    var tokens: [String]
    /// The payload given with --payload (nil: the push type's default), for --via.
    var givenPayload: [UInt8]?

    init(command c: SendCommand) throws(SendUsageError) {
        let file = try Self.readConfig(c.config)
        let environment = ProcessInfo.processInfo.environment
        func value(_ option: String?, _ name: String) -> String? {
            if let option { return option }
            let variable = "ROUSE_APNS_" + name.uppercased().replacingAll("-", with: "_")
            if let fromEnvironment = environment[variable], !fromEnvironment.isEmpty { return fromEnvironment }
            return file[name]
        }
        let envText = value(c.env, "env") ?? "sandbox"
        guard let endpoint = SenderEndpoint.parse(envText) else {
            throw SendUsageError(message: "--env must be sandbox, production or https://host:port (got '\(envText)')")
        }
        var credentials = SenderCredentials.token(keyPEM: "", keyID: "", teamID: "")
        let authKey = value(c.authKey, "auth-key")
        let cert = value(c.cert, "cert")
        // With --via the service holds the credentials: none are read here.
        let given: (String?, String?) = c.via == nil ? (authKey, cert) : (nil, "")
        switch given {
        case (.none, .some) where c.via != nil: break
        case (.some, .some):
            throw SendUsageError(message: "give --auth-key (token auth) or --cert (certificate auth), not both")
        case (.none, .none):
            throw SendUsageError(message: "no credentials: give --auth-key with --key-id and --team-id, or --cert")
        case (.some(let keyFile), .none):
            guard let keyID = value(c.keyID, "key-id"), let teamID = value(c.teamID, "team-id") else {
                throw SendUsageError(message: "token auth needs --key-id and --team-id")
            }
            guard let pem = try? String(contentsOfFile: keyFile, encoding: .utf8) else {
                throw SendUsageError(message: "cannot read the key file \(keyFile)")
            }
            credentials = .token(keyPEM: pem, keyID: keyID, teamID: teamID)
        case (.none, .some(let certFile)):
            guard FileManager.default.isReadableFile(atPath: certFile) else {
                throw SendUsageError(message: "cannot read the certificate \(certFile)")
            }
            if certFile.hasSuffix(".p12") || certFile.hasSuffix(".pfx") {
                credentials = .pkcs12(file: certFile, password: value(c.password, "password") ?? "")
            } else {
                credentials = .certificatePEM(certificateFile: certFile, keyFile: value(c.key, "key") ?? certFile)
            }
        }
        var configuration = APNsSenderConfiguration(endpoint: endpoint, credentials: credentials)
        configuration.trustRootsFile = value(c.caFile, "ca-file")
        configuration.connections = max(1, min(c.connections, 64))
        guard c.deadline > 0, c.deadline <= 3600 else { throw SendUsageError(message: "--deadline must be 0–3600 s") }
        configuration.defaultDeadline = .milliseconds(Int64(c.deadline * 1000))
        switch c.transport {
        case "native": configuration.transport = .native
        case "curl": configuration.transport = .curl(proxy: c.proxy)
        default: throw SendUsageError(message: "--transport must be native or curl")
        }
        if c.proxy != nil && c.transport != "curl" {
            throw SendUsageError(message: "--proxy needs --transport curl")
        }
        self.configuration = configuration

        tokens = c.tokens
        if let tokensFile = c.tokensFile {
            guard let data = FileManager.default.contents(atPath: tokensFile) else {
                throw SendUsageError(message: "cannot read \(tokensFile)")
            }
            tokens.append(contentsOf: Self.tokenLines(data))
        }
        if tokens.isEmpty { throw SendUsageError(message: "no device token: give --token HEX or --tokens-file FILE") }
        if c.apnsID != nil && tokens.count > 1 {
            throw SendUsageError(message: "--apns-id names one push; it cannot be used with several tokens")
        }
        guard let bundle = value(c.topic, "topic") ?? (c.via != nil && c.app != nil ? "" : nil) else {
            throw SendUsageError(message: "--topic is required")
        }
        if c.app != nil && c.via == nil { throw SendUsageError(message: "--app needs --via") }
        let type: APNsPushType
        var payload: String
        var priority = c.priority.map { APNsPriority(rawValue: $0) }
        var expiration = c.expiration
        switch c.kind {
        case .voip:
            type = .voip
            payload = #"{"aps":{}}"#
            if expiration == nil { expiration = 0 }
        case .background:
            type = .background
            payload = #"{"aps":{"content-available":1}}"#
            if priority == nil { priority = .conservePower }
        case .alert:
            type = .alert
            payload = #"{"aps":{"alert":"Hello from Rouse"}}"#
        }
        if let given = c.payload {
            if given.hasPrefix("@") {
                let path = String(given.dropFirst())
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw SendUsageError(message: "cannot read the payload file \(path)")
                }
                payload = String(decoding: data, as: UTF8.self)
            } else {
                payload = given
            }
        }
        let suffix = type.topicSuffix ?? ""
        let topic = bundle.hasSuffix(suffix) ? bundle : bundle + suffix
        givenPayload = c.payload == nil ? nil : Array(payload.utf8)
        push = APNsPush(
            deviceToken: "", topic: topic, pushType: type, priority: priority, apnsID: c.apnsID,
            expiration: expiration, collapseID: c.collapseID, payload: Array(payload.utf8))
    }

    /// The tokens of a tokens file: one per line, blanks and tabs around it ignored, empty lines and `#` comments
    /// skipped. Read as bytes, not through `String` and Foundation's `trimmingCharacters` (which took ~0.6 s of CPU
    /// for 200,000 lines, see docs/send.md): a token is hex, so any other byte is kept verbatim and left to the
    /// pre-flight (`BadDeviceToken`).
    static func tokenLines(_ data: Data) -> [String] {
        var tokens: [String] = []
        tokens.reserveCapacity(data.count / 65 + 1)
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            let bytes = raw.bindMemory(to: UInt8.self)
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count && bytes[end] != UInt8(ascii: "\n") && bytes[end] != UInt8(ascii: "\r") {
                    end += 1
                }
                var first = start
                var last = end
                while first < last && (bytes[first] == UInt8(ascii: " ") || bytes[first] == UInt8(ascii: "\t")) {
                    first += 1
                }
                while last > first && (bytes[last - 1] == UInt8(ascii: " ") || bytes[last - 1] == UInt8(ascii: "\t")) {
                    last -= 1
                }
                if first < last && bytes[first] != UInt8(ascii: "#") {
                    tokens.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[first..<last]), as: UTF8.self))
                }
                start = end + 1
            }
        }
        return tokens
    }

    /// `name = value` lines; `#` starts a comment. A missing default file is fine; a missing named one is not.
    static func readConfig(_ path: String?) throws(SendUsageError) -> [String: String] {
        let file =
            path ?? (ProcessInfo.processInfo.environment["HOME"].map { $0 + "/.config/rouse/send.conf" } ?? "")
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            if path != nil { throw SendUsageError(message: "cannot read the config file \(file)") }
            return [:]
        }
        var values: [String: String] = [:]
        for line in text.split(whereSeparator: \.isNewline) {
            let trimmed = line.trimmingBlanks()
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let equals = trimmed.firstIndex(of: "=") else {
                throw SendUsageError(message: "\(file): expected name = value, got '\(trimmed)'")
            }
            let name = trimmed[..<equals].trimmingBlanks()
            values[name] = trimmed[trimmed.index(after: equals)...].trimmingBlanks()
        }
        return values
    }
}
