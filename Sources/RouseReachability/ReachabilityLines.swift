import Glibc
import RouseNetlink
import RouseSystem
import RouseWire

/// One line per notice, as `rouse reach watch` prints them: text, or one JSON object (keys sorted,
/// timestamps in microseconds). Plain string building, cheap enough to run on the monitor thread for
/// every event: no formatter objects, no Foundation.
public enum ReachabilityLines {
    /// Writes the line of `notice` (if it has one) to stdout with one `write(2)`: nothing buffered, on the
    /// calling thread (the monitor's, from a synchronous handler). A closed stdout ends the process, as
    /// it ends `ip monitor`.
    public static func print(_ notice: ReachabilityNotice, json: Bool) {
        guard let line = json ? Self.json(notice) : text(notice) else { return }
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        let failure = bytes.withUnsafeBytes { raw -> SystemError? in
            do throws(SystemError) {
                try Sys.writeAll(1, raw)
                return nil
            } catch {
                return error
            }
        }
        if let failure { Sys.exit(failure.code == .brokenPipe ? 0 : 1) }
    }

    /// The text line of a notice: every `.changed` (a path change says `path:`) and every overflow; nil
    /// for `.sourceAddressChanged`, whose change was printed just before it with the new source.
    public static func text(_ notice: ReachabilityNotice) -> String? {
        switch notice {
        case .event(.changed(let change)):
            let label = change.kind == .path ? " path:" : ""
            return "\(timestamp(change.timestamp)) \(change.target)\(label) \(change.result)"
                + " usable=\(change.result.isUsable) — \(change.reason)"
        case .event(.sourceAddressChanged):
            return nil
        case .overflow(let overflow):
            return "\(timestamp(overflow.timestamp)) overflow: the kernel dropped events (ENOBUFS, "
                + "\(overflow.overruns) so far); re-dumped, every target decided again"
        }
    }

    /// The JSON line of a notice: `"event"` is `"changed"`, `"pathChanged"` or `"overflow"`; nil for
    /// `.sourceAddressChanged` (see `text(_:)`).
    public static func json(_ notice: ReachabilityNotice) -> String? {
        var object = JSONLine()
        switch notice {
        case .event(.changed(let change)):
            object.string("event", change.kind == .path ? "pathChanged" : "changed")
            object.string("kind", change.kind.rawValue)
            if let previous = change.previous { object.raw("previous", resultObject(previous)) }
            object.string("reason", change.reason)
            object.raw("result", resultObject(change.result))
            object.string("target", change.target.description)
            object.time(change.timestamp)
        case .event(.sourceAddressChanged):
            return nil
        case .overflow(let overflow):
            object.string("event", "overflow")
            object.raw("overruns", String(overflow.overruns))
            object.time(overflow.timestamp)
        }
        return object.text
    }

    /// The JSON object of a result (keys sorted).
    public static func resultObject(_ result: ReachabilityResult) -> String {
        var object = JSONLine()
        object.raw("expensive", result.path.isExpensive ? "true" : "false")
        let flags = result.flags.description.dropFirst().dropLast().split(separator: ",")
        object.raw("flags", "[" + flags.map { JSONLine.quoted(String($0)) }.joined(separator: ",") + "]")
        if let gateway = result.path.gateway { object.string("gateway", gateway.description) }
        if let interface = result.path.interface {
            var nested = JSONLine()
            nested.raw("index", String(interface.index))
            nested.string("name", interface.name)
            nested.string("type", interface.type.rawValue)
            object.raw("interface", nested.text)
        }
        if let remote = result.path.remoteAddress { object.string("remote", remote.description) }
        if let source = result.path.sourceAddress { object.string("source", source.description) }
        object.string("status", result.path.status.description)
        object.raw("supportsDNS", result.path.supportsDNS ? "true" : "false")
        object.raw("supportsIPv4", result.path.supportsIPv4 ? "true" : "false")
        object.raw("supportsIPv6", result.path.supportsIPv6 ? "true" : "false")
        object.raw("usable", result.isUsable ? "true" : "false")
        return object.text
    }

    /// `2026-11-24T07:11:24.548123Z` for a wall-clock time in seconds since 1970: UTC, microseconds (proleptic Gregorian, from days since 1970).
    public static func timestamp(_ seconds: Double) -> String {
        let micros = Int64((seconds * 1_000_000).rounded())
        let (day, microOfDay) = micros.quotientAndRemainder(dividingBy: 86_400_000_000)
        let (year, month, dayOfMonth) = civil(fromDays: microOfDay < 0 ? day - 1 : day)
        let inDay = microOfDay < 0 ? microOfDay + 86_400_000_000 : microOfDay
        let second = inDay / 1_000_000
        return "\(year)-\(padded(month, 2))-\(padded(dayOfMonth, 2))T\(padded(second / 3600, 2)):"
            + "\(padded(second / 60 % 60, 2)):\(padded(second % 60, 2)).\(padded(inDay % 1_000_000, 6))Z"
    }

    /// Howard Hinnant's `civil_from_days`: days since 1970-01-01 → (year, month, day).
    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// A JSON object written key by key (callers add keys in sorted order, as `JSONSerialization`'s
/// `.sortedKeys` did for the earlier output).
struct JSONLine {
    private var members: [String] = []

    mutating func raw(_ key: String, _ value: String) { members.append(Self.quoted(key) + ":" + value) }
    mutating func string(_ key: String, _ value: String) { raw(key, Self.quoted(value)) }

    /// `"time"` (ISO 8601, microseconds) and `"timestampUs"` (microseconds since 1970).
    mutating func time(_ seconds: Double) {
        string("time", ReachabilityLines.timestamp(seconds))
        raw("timestampUs", String(Int64((seconds * 1_000_000).rounded())))
    }

    var text: String { "{" + members.joined(separator: ",") + "}" }

    static func quoted(_ text: String) -> String { JSONString.quoted(text) }
}
