// The pieces of text handling that the shipped programs took from Foundation's full module (`Foundation`, which links
// its internationalisation and the ICU data: 39 MB of the 75 MB binary), written here against the standard library so
// that nothing in the packages imports more than `FoundationEssentials` (checked by deploy/check-rules.sh, rule
// `foundation`). Each is a few lines with Foundation's meaning for the inputs Rouse has: configuration values, header
// fields, JSON members and command output.

extension StringProtocol {
    /// The text without leading and trailing white space or line breaks (Unicode's White_Space property: space, tab,
    /// CR, LF, the other space separators, U+0085, U+2028, U+2029), as Foundation's
    /// `trimmingCharacters(in: .whitespacesAndNewlines)`.
    package func trimmingWhitespace() -> String {
        trimming { $0.properties.isWhitespace }
    }

    /// The text without leading and trailing blanks (tab and the space separators, line breaks kept), as Foundation's
    /// `trimmingCharacters(in: .whitespaces)`.
    package func trimmingBlanks() -> String {
        trimming { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
    }

    // `contains(_: String)`, `firstRange(of:)` and `replacing(_:with:)` are `_StringProcessing`'s: one call to any of
    // them links the regex engine (1.4 MB of a static binary) into programs that use no regular expression. These
    // three, on the standard library alone, compare character by character as those do (`deploy/package.sh` fails
    // when a shipped module refers to `_StringProcessing`).

    /// Whether `part` (not empty) occurs in the text (`contains(_: String)`, which also finds a part that starts inside
    /// a character: "\n" in "\r\n"; this one compares whole characters).
    package func includes(_ part: some StringProtocol) -> Bool { !part.isEmpty && firstRange(ofText: part) != nil }

    /// Where `part` first occurs in the text (`firstRange(of:)`); an empty `part` occurs at the start.
    package func firstRange(ofText part: some StringProtocol) -> Range<Index>? {
        var start = startIndex
        while true {
            var here = start
            var matched = true
            for character in part {
                guard here < endIndex, self[here] == character else {
                    matched = false
                    break
                }
                here = index(after: here)
            }
            if matched { return start..<here }
            guard start < endIndex else { return nil }
            start = index(after: start)
        }
    }

    /// The text with every occurrence of `target` (not empty) replaced by `replacement`, left to right, compared
    /// scalar by scalar: what an escape needs (`replacing(_:with:)` compares whole characters, so a quote followed
    /// by a combining mark, one character, is not a quote to it and would go through unescaped).
    package func replacingAll(_ target: some StringProtocol, with replacement: some StringProtocol) -> String {
        precondition(!target.isEmpty, "replacingAll: an empty target")
        let scalars = Array(unicodeScalars)
        let wanted = Array(target.unicodeScalars)
        var result = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            if index + wanted.count <= scalars.count, scalars[index..<(index + wanted.count)].elementsEqual(wanted) {
                result.append(contentsOf: replacement.unicodeScalars)
                index += wanted.count
            } else {
                result.append(scalars[index])
                index += 1
            }
        }
        return String(result)
    }

    private func trimming(where isTrimmed: (Unicode.Scalar) -> Bool) -> String {
        let text = Substring(self)
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !isTrimmed($0) }),
            let last = scalars.lastIndex(where: { !isTrimmed($0) })
        else { return "" }
        return String(scalars[first...last])
    }
}

/// Decimal and hexadecimal renderings that `String(format:)` gave.
package enum NumberText {
    /// `value` with exactly `digits` digits after the point, as `%.Nf` prints it: ties to even, a negative value
    /// that rounds to zero keeps its sign (`-0.0`). One difference: the value is scaled before it is rounded, while
    /// printf rounds the binary value's exact expansion, so a value just below a tie (0.15 is 0.1499…) can come out
    /// one unit higher in the last digit (0.2 here, 0.1 there). Not finite: `nan`, `inf`, `-inf`.
    package static func fixed(_ value: Double, digits: Int) -> String {
        guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
        var scale = 1.0
        for _ in 0..<max(0, digits) { scale *= 10 }
        let scaled = (abs(value) * scale).rounded(.toNearestOrEven)
        // Beyond 2^63 the digits are not exact anyway: the shortest round-trip form.
        guard scaled < 9.2e18 else { return "\(value)" }
        let units = UInt64(scaled)
        let divisor = UInt64(scale)
        let sign = value.sign == .minus ? "-" : ""
        guard digits > 0 else { return sign + String(units) }
        let fraction = String(units % divisor)
        return sign + String(units / divisor) + "." + String(repeating: "0", count: digits - fraction.count) + fraction
    }
}

package enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Lower-case hexadecimal, two digits a byte (`%02x` each).
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// RFC 3986 percent-encoding.
package enum PercentEncoding {
    /// `text` with every byte of its UTF-8 but the unreserved characters (`A-Z a-z 0-9 - . _ ~`) written as `%XX`,
    /// as `addingPercentEncoding(withAllowedCharacters: .alphanumerics + "-._~")` did for ASCII letters and digits.
    package static func encode(_ text: String) -> String {
        var output: [UInt8] = []
        let digits = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.append(byte)
            default:
                output += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `text` with every `%XX` decoded; nil when a `%` is not followed by two hexadecimal digits or the result is not
    /// UTF-8 (as `removingPercentEncoding`).
    package static func decode(_ text: some StringProtocol) -> String? {
        var output: [UInt8] = []
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else {
                output.append(byte)
                continue
            }
            guard let high = bytes.next().flatMap(hexValue), let low = bytes.next().flatMap(hexValue) else {
                return nil
            }
            output.append(high << 4 | low)
        }
        return String(validating: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// File-system paths as text (`NSString`'s path helpers).
package enum PathText {
    /// The directory part of `path`: `/a/b` → `/a`, `/a` → `/`, `a` → `` (trailing slashes ignored), as
    /// `deletingLastPathComponent`.
    package static func parent(_ path: String) -> String {
        var text = Substring(path)
        while text.count > 1 && text.hasSuffix("/") { text = text.dropLast() }
        guard let slash = text.lastIndex(of: "/") else { return "" }
        if slash == text.startIndex { return "/" }
        var parent = text[..<slash]
        while parent.count > 1 && parent.hasSuffix("/") { parent = parent.dropLast() }
        return String(parent)
    }

    /// `name` without its extension (`ring.wav` → `ring`; `.hidden` and `name` unchanged), as
    /// `deletingPathExtension`.
    package static func removingExtension(_ name: String) -> String {
        let last = name.lastIndex(of: "/").map { name.index(after: $0) } ?? name.startIndex
        guard let dot = name[last...].lastIndex(of: "."), dot != last else { return name }
        return String(name[..<dot])
    }
}
