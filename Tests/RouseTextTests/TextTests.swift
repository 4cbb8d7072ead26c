import Foundation
import Testing

@testable import RouseText

/// RouseText against Foundation's full module, which it replaces in the shipped programs: the same answers for the
/// inputs Rouse has (Foundation is linked here, in a test, on purpose: it is the reference).
@Suite struct TextTests {
    static let samples = [
        "", " ", "\t\n", "a", " a ", "\ta b\t", "\n x \r\n", "\u{00A0}nbsp\u{00A0}", "\u{2003}em\u{3000}",
        "\u{2028}line\u{2029}", "\u{0085}next\u{0085}", "é ", " 日本 ", "a\u{0301} ", "🎉 ",
    ]

    @Test(arguments: samples) func trimmingMatchesFoundation(_ text: String) {
        #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(text.trimmingBlanks() == text.trimmingCharacters(in: .whitespaces))
        let sub = Substring("x" + text + "x").dropFirst().dropLast()
        #expect(sub.trimmingWhitespace() == sub.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// U+200B ZERO WIDTH SPACE left Unicode's space separators in 4.0.1; Foundation on Linux still trims it, RouseText
    /// follows Unicode's White_Space property.
    @Test(arguments: [
        ("INVITE sip:a", "sip"), ("abc", ""), ("", "a"), ("ab", "abc"), ("café", "e\u{301}"),
    ])
    func includesIsContains(_ text: String, _ part: String) {
        #expect(text.includes(part) == text.contains(part), "\(text.debugDescription) \(part.debugDescription)")
        #expect(text.firstRange(ofText: part) == text.firstRange(of: part), "\(text.debugDescription)")
        if !part.isEmpty, part.utf8.allSatisfy({ $0 < 0x80 }) {
            #expect(text.replacingAll(part, with: "<\(part)>") == text.replacing(part, with: "<\(part)>"))
        }
    }

    /// `contains(_: String)` finds a part that starts inside a character; `includes` compares whole characters, as
    /// `firstRange(of:)` does.
    @Test func includesComparesWholeCharacters() {
        #expect("x\r\ny".contains("\n"))
        #expect(!"x\r\ny".includes("\n"))
        #expect("x\r\ny".firstRange(of: "\n") == nil)
    }

    /// An escape escapes every quote, one followed by a combining mark too (`replacing` compares whole characters and
    /// leaves that one).
    @Test func replacingAllComparesScalars() {
        let hostile = "a\"\u{301},b"
        #expect(hostile.replacing("\"", with: "\\\"") == hostile)
        #expect(hostile.replacingAll("\"", with: "\\\"") == "a\\\"\u{301},b")
    }

    @Test func replacingAllIsReplacing() {
        for (text, target, replacement) in [
            ("a\\b\"c", "\\", "\\\\"), ("aaa", "aa", "b"), ("rouse_gateway_x_total", "_total", ""), ("", "x", "y"),
            ("x\ny\n", "\n", "; "),
        ] {
            #expect(
                text.replacingAll(target, with: replacement) == text.replacing(target, with: replacement), "\(text)")
        }
    }

    @Test func zeroWidthSpaceIsNotWhiteSpace() {
        #expect(" \u{200B}zw\u{200B} ".trimmingWhitespace() == "\u{200B}zw\u{200B}")
    }

    @Test func fixedDecimalsMatchPrintf() {
        for value in [
            0.0, -0.0, 1, -1, 0.5, 2.5, 0.125, 0.04, 0.06, 1.25, 12.3456, 99.99, 1e-9, 123_456.789, -0.001, 3.7e12,
            0.9999,
        ] {
            for digits in 0...3 {
                #expect(NumberText.fixed(value, digits: digits) == String(format: "%.\(digits)f", value), "\(value)")
            }
        }
        #expect(NumberText.fixed(.nan, digits: 1) == "nan")
        #expect(NumberText.fixed(-.infinity, digits: 1) == "-inf")
    }

    @Test func hexIsTwoLowerCaseDigitsPerByte() {
        let bytes: [UInt8] = [0, 1, 0x0f, 0x10, 0xab, 0xff]
        #expect(Hex.encode(bytes) == bytes.map { String(format: "%02x", $0) }.joined())
        #expect(Hex.encode([]) == "")
    }

    @Test func percentEncodingMatchesFoundation() {
        let unreserved = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        for text in ["", "abc", "a b&c=d", "tok/en+=", "ü", "日本", "~-._", "%"] {
            #expect(PercentEncoding.encode(text) == text.addingPercentEncoding(withAllowedCharacters: unreserved))
            #expect(PercentEncoding.decode(PercentEncoding.encode(text)) == text)
        }
        for text in ["%41%62", "a%2Fb", "%e6%97%a5", "%", "%4", "%zz", "%ff", "plain"] {
            #expect(PercentEncoding.decode(text) == text.removingPercentEncoding, "\(text)")
        }
    }

    @Test func pathsMatchNSString() {
        for path in ["/a/b", "/a/b/", "/a", "/", "a/b", "/a/b.c/d"] {
            #expect(PathText.parent(path) == (path as NSString).deletingLastPathComponent, "\(path)")
        }
        for name in ["ring.caf", "ring", ".hidden", "a.b.c", "dir.d/file", "dir.d/file.wav", "x."] {
            #expect(PathText.removingExtension(name) == (name as NSString).deletingPathExtension, "\(name)")
        }
    }
}

@Suite struct JSONValueTests {
    @Test func readsWhatJSONSerializationReads() throws {
        let text = #"{"a":1,"b":-2.5,"c":"x\u00e9\/","d":[true,false,null],"e":{"f":1e3},"big":12345678901234}"#
        let value = try JSONValue.parse(text.utf8)
        #expect(value["a"] == .integer(1))
        #expect(value["b"]?.double == -2.5)
        #expect(value["c"]?.string == "xé/")
        #expect(value["d"] == [true, false, nil])
        #expect(value["e"]?["f"]?.int64 == 1000)
        #expect(value["big"]?.int64 == 12_345_678_901_234)
        #expect(value["missing"] == nil)
        #expect(value["a"]?.string == nil)
    }

    @Test func scalarsAtTheTopAreJSON() {
        #expect(JSONValue(parsing: "3") == .integer(3))
        #expect(JSONValue(parsing: #""s""#) == .string("s"))
        #expect(JSONValue(parsing: "null") == .null)
    }

    @Test(arguments: ["", "{", "{\"a\":}", "tru", "{'a':1}", "\"\\x\"", "01", "{\"a\":1}x", "NaN"])
    func garbageIsRefused(_ text: String) {
        #expect(JSONValue(parsing: text) == nil)
        #expect((try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) == nil)
    }

    @Test func deepNestingIsRefusedNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(JSONValue(parsing: deep) == nil)
    }

    @Test func writesSortedCompactWithSlashesKept() {
        let value: JSONValue = ["b": [1, "x/y"], "a": ["c": nil, "d": true], "n": .double(0.5)]
        #expect(value.text == #"{"a":{"c":null,"d":true},"b":[1,"x/y"],"n":0.5}"#)
        #expect(JSONValue(parsing: value.text) == value)
        #expect(JSONValue.number(3) == .integer(3))
        #expect(JSONValue.number(.nan) == .null)
        #expect(JSONValue.string("q\"\n").text == #""q\"\n""#)
    }

    @Test func plainTextIsTheStringOrTheJSON() {
        #expect(JSONValue.string("a b").plainText == "a b")
        #expect(JSONValue.integer(7).plainText == "7")
        #expect(JSONValue.bool(false).plainText == "false")
    }
}

extension TextTests {
    /// Foundation's `deletingLastPathComponent` traps on a path without a slash ("" or "a") on Linux; RouseText
    /// answers "", and keeps doubled slashes that Foundation collapses.
    @Test func pathsFoundationCannotAnswer() {
        #expect(PathText.parent("") == "")
        #expect(PathText.parent("a") == "")
        #expect(PathText.parent("//a//b") == "//a")
    }
}
