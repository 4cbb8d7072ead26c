import FoundationEssentials
import RouseDBus
import RouseText

/// What an alert push shows, read from its payload's `aps` dictionary (docs/agent.md, "Notifications"): the
/// alert's title, subtitle and body (a string alert is the body), the sound, the thread and the interruption level.
/// Localized forms (`title-loc-key`, `loc-key`, with their `-args`) have no localization tables here: the key is
/// used as the format, its `%@` and `%n$@` replaced by the arguments, when the plain member is absent.
package struct AlertContent: Equatable {
    /// Longest text kept of each field (a notification bubble shows far less; the payload is at most 4 KiB anyway).
    static let fieldLimit = 1024

    package var title = ""
    package var subtitle = ""
    package var body = ""
    package var sound: String?
    package var threadID: String?
    package var interruptionLevel = "active"

    /// Reads the base64 `payload`; nil when it is not JSON with an `aps.alert` (nothing to show).
    package init?(payload: String) {
        guard let data = Data(base64Encoded: payload),
            let root = try? JSONValue.parse(data), let aps = root["aps"], aps.object != nil, let alert = aps["alert"]
        else { return nil }
        if let text = alert.string {
            body = text
        } else if let fields = alert.object {
            title = Self.text(fields, "title", localized: "title-loc-key", arguments: "title-loc-args")
            subtitle = Self.text(fields, "subtitle", localized: "subtitle-loc-key", arguments: "subtitle-loc-args")
            body = Self.text(fields, "body", localized: "loc-key", arguments: "loc-args")
        } else {
            return nil
        }
        if let name = aps["sound"]?.string ?? aps["sound"]?["name"]?.string {
            sound = Self.soundName(name)
        }
        threadID = aps["thread-id"]?.string.map { String($0.prefix(Self.fieldLimit)) }
        if let level = aps["interruption-level"]?.string { interruptionLevel = level }
        title = String(title.prefix(Self.fieldLimit))
        subtitle = String(subtitle.prefix(Self.fieldLimit))
        body = String(body.prefix(Self.fieldLimit))
    }

    /// Content given field by field (a local notification).
    package init(
        title: String, subtitle: String, body: String, sound: String?, threadID: String?, interruptionLevel: String
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.sound = sound.map(Self.soundName)
        self.threadID = threadID
        self.interruptionLevel = interruptionLevel
    }

    /// The `urgency` hint: passive → low, active → normal, time-sensitive and critical → critical (the
    /// freedesktop servers keep critical ones until dismissed, as iOS breaks through focus for them).
    package var urgency: Notifications.Urgency {
        switch interruptionLevel {
        case "passive": .low
        case "time-sensitive", "critical": .critical
        default: .normal
        }
    }

    /// The notification to show for `appName` (the handler), replacing `replacesID` (0: none). The freedesktop
    /// protocol has no subtitle: it leads the body on a line of its own.
    package func notification(appName: String, replacesID: UInt32) -> Notifications.Notification {
        let text = subtitle.isEmpty ? body : subtitle + "\n" + body
        var notification = Notifications.Notification(
            appName: appName, summary: title.isEmpty ? appName : title, body: text)
        notification.replacesID = replacesID
        notification.category = threadID
        notification.soundName = sound
        notification.urgency = urgency
        notification.actions = [("default", "Open")]
        return notification
    }

    /// APNs names a sound file of the app's bundle (`ring.caf`) or `default`; the freedesktop hint is a sound-theme
    /// name: `default` becomes `message-new-instant`, a file name loses its extension.
    package static func soundName(_ name: String) -> String {
        if name == "default" { return "message-new-instant" }
        let base = PathText.removingExtension(name)
        return String((base.isEmpty ? name : base).prefix(128))
    }

    private static func text(_ fields: [String: JSONValue], _ plain: String, localized: String, arguments: String)
        -> String
    {
        if let text = fields[plain]?.string { return text }
        guard let key = fields[localized]?.string else { return "" }
        return format(key, (fields[arguments]?.array ?? []).map(\.plainText))
    }

    /// `format` with `%@` taking the arguments in turn and `%n$@` the n-th; `%%` is a percent sign.
    package static func format(_ format: String, _ arguments: [String]) -> String {
        var result = ""
        var next = 0
        var characters = Array(format)[...]
        while let character = characters.popFirst() {
            guard character == "%" else {
                result.append(character)
                continue
            }
            if characters.first == "%" {
                characters.removeFirst()
                result.append("%")
            } else if characters.first == "@" {
                characters.removeFirst()
                if next < arguments.count { result += arguments[next] }
                next += 1
            } else if let dollar = characters.firstIndex(of: "$"), dollar - characters.startIndex <= 2,
                let position = Int(String(characters[characters.startIndex..<dollar])),
                characters.index(after: dollar) < characters.endIndex,
                characters[characters.index(after: dollar)] == "@"
            {
                characters = characters[characters.index(dollar, offsetBy: 2)...]
                if position >= 1 && position <= arguments.count { result += arguments[position - 1] }
            } else {
                result.append(character)
            }
        }
        return result
    }
}
