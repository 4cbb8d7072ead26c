import Foundation
import RouseText
import Testing

/// RouseText's JSON (JSONText, JSONCoding) and Base64 against Foundation's: the same texts read, the same bytes
/// written, the same errors for the same faults.
@Suite struct JSONCodingTests {
    /// Texts both read the same way, or both refuse.
    static let texts = [
        "0", "-0", "1E5", "1e-7", "0.0", "-1.5e+300", "12345678901234567890", "9223372036854775807",
        "-9223372036854775808", "1e400", "[1e-400]", "01", "1.", ".5", "-", "+1", "0x10", "1e", "[-]",
        #""\ud83d\ude00""#, #""\ud83d""#, #""\ude00""#, #""\ud83dx""#, #""\u00e9\u0000""#, #""\u12""#, #""\q""#,
        "\"tab\there\"", "\"a\u{1}\"", #""\/\\\"\b\f\n\r\t""#, "\"é€😀\"", "[]", "{}", " [ 1 , 2 ] ", "[1 2]",
        #"{"a" 1}"#, #"{,}"#, #"{"a":1 "b":2}"#, "{1:2}", "[", "]", "[[[]]]", "true", "truex", "nul",
        "null null", "\u{feff}1", "\n\r\t 1 \n", #"{"a":{"b":[{"c":null}]}}"#, #"{"a":1,"a":2}"#, "\"\u{7f}\"",
    ]

    @Test(arguments: texts) func readsWhatJSONDecoderReads(_ text: String) throws {
        let ours = try? JSONText.parse(Array(text.utf8))
        let theirs = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(ours == theirs, "\(text): ours \(String(describing: ours)), Foundation's \(String(describing: theirs))")
    }

    /// Where Foundation's parser is more lenient than RFC 8259, JSONText keeps to the RFC.
    @Test(arguments: ["[1,]", #"{"a":1,}"#]) func trailingCommasAreRefusedWhereFoundationTakesThem(_ text: String) {
        #expect((try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))) != nil)
        #expect((try? JSONText.parse(Array(text.utf8))) == nil)
    }

    @Test func syntaxErrorsSayWhatAndWhere() {
        #expect(throws: JSONText.SyntaxError(reason: "expected ',' or '}'", offset: 7)) {
            try JSONText.parse(Array(#"{"a":1 "b":2}"#.utf8))
        }
        #expect(throws: JSONText.SyntaxError(reason: "unterminated string", offset: 5)) {
            try JSONText.parse(Array(#"["abc"#.utf8))
        }
        #expect(throws: JSONText.SyntaxError(reason: "invalid UTF-8 in the string that ends", offset: 3)) {
            try JSONText.parse([0x22, 0xC3, 0x28, 0x22])
        }
        #expect(throws: JSONText.SyntaxError(reason: "nested deeper than 512", offset: 512)) {
            try JSONText.parse(Array((String(repeating: "[", count: 513) + String(repeating: "]", count: 513)).utf8))
        }
    }

    /// The deepest text read (512 levels) is read, decoded and written again on the stack of an event-loop thread
    /// (1 MiB), in this debug build too: the reader keeps its open containers on the heap (a recursive one overflowed
    /// it); the writer recurses, needing under 128 KiB in a release build and under 768 KiB in a debug one. Deeper
    /// is refused at 513, never a stack overflow.
    @Test func theDeepestTextFitsInASmallStack() async {
        let depth = JSONText.maxDepth
        let arrays = Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
        let objects = Array(
            (String(repeating: #"{"a":"#, count: depth - 1) + "{}" + String(repeating: "}", count: depth - 1)).utf8)
        let deeper = Array((String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1)).utf8)
        let results = await withCheckedContinuation { (continuation: CheckedContinuation<[Bool], Never>) in
            let thread = Thread {
                continuation.resume(returning: [
                    (try? JSONText.parse(arrays)) != nil,
                    (try? JSONCoding.decode(JSONValue.self, from: objects)).map { JSONText.bytes($0) == objects }
                        == true,
                    (try? JSONText.parse(deeper)) == nil,
                    (try? JSONText.parse(arrays)).map { JSONText.bytes($0) == arrays } == true,
                ])
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        #expect(results == [true, true, true, true])
    }

    struct Sample: Codable, Equatable {
        enum Kind: String, Codable { case one, two }
        struct Inner: Codable, Equatable {
            var name: String
            var values: [Int]
        }
        var text = "a/b \"q\" \u{1}\n é"
        var flag = true
        var count = -42
        var big: Int64 = 9_007_199_254_740_993
        var small: UInt8 = 200
        var ratio = 0.1
        var whole = 5.0
        var large = 1e20
        var tiny = 1e-7
        var single: Float = 0.1
        var kind = Kind.two
        var missing: String? = nil
        var present: String? = "here"
        var list = [Inner(name: "x", values: [1, 2]), Inner(name: "", values: [])]
        var map = ["z": 1, "a": 2, "B": 3, "a10": 4, "a9": 5]
        var nested: [[String: [Double]]] = [["k": [1.5, -0.0, 2]]]
    }

    @Test func writesWhatJSONEncoderWrites() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(try JSONCoding.encode(Sample()) == Array(try encoder.encode(Sample())))
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(try JSONCoding.encode(Sample(), escapingSlashes: false) == Array(try encoder.encode(Sample())))
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let pretty = try JSONCoding.encodePretty(Sample())
        #expect(
            String(decoding: pretty, as: UTF8.self) == String(decoding: try encoder.encode(Sample()), as: UTF8.self))
    }

    @Test func readsBackWhatEitherWrote() throws {
        let ours = try JSONCoding.encode(Sample())
        #expect(try JSONCoding.decode(Sample.self, from: ours) == Sample())
        #expect(try JSONDecoder().decode(Sample.self, from: Data(ours)) == Sample())
        let theirs = Array(try JSONEncoder().encode(Sample()))
        #expect(try JSONCoding.decode(Sample.self, from: theirs) == Sample())
    }

    struct Small: Codable, Equatable {
        var n: Int
        var s: String?
    }

    /// The same `DecodingError` case, at the same path, for the same fault.
    @Test(arguments: [
        #"{"s":"x"}"#, #"{"n":"1"}"#, #"{"n":null}"#, #"[]"#, #"{"n":1,"s":2}"#,
        #"{"n":5.0}"#, #"{"n":1,"s":null}"#, "{", #"{"n":-1}"#,
    ])
    func decodingErrorsAreJSONDecoders(_ text: String) {
        func outcome(_ decode: () throws -> Small) -> String {
            do {
                return "value \(try decode())"
            } catch let error as DecodingError {
                switch error {
                case .keyNotFound(let key, let context): return "keyNotFound \(key.stringValue) \(path(context))"
                case .typeMismatch(_, let context): return "typeMismatch \(path(context))"
                case .valueNotFound(_, let context): return "valueNotFound \(path(context))"
                case .dataCorrupted(let context): return "dataCorrupted \(path(context))"
                @unknown default: return "unknown"
                }
            } catch {
                return "other \(error)"
            }
        }
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map(\.stringValue).joined(separator: ".")
        }
        let ours = outcome { try JSONCoding.decode(Small.self, from: Array(text.utf8)) }
        let theirs = outcome { try JSONDecoder().decode(Small.self, from: Data(text.utf8)) }
        #expect(ours == theirs, "\(text)")
    }

    /// Foundation's decoder calls a number that does not fit its type "not valid JSON", without a path; JSONCoding
    /// says which member and what it found.
    @Test(arguments: [#"{"n":1.5}"#, #"{"n":1e30}"#, #"{"n":9223372036854775808}"#])
    func aNumberThatDoesNotFitIsATypeMismatchAtItsPath(_ text: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Small.self, from: Data(text.utf8)) }
        #expect {
            try JSONCoding.decode(Small.self, from: Array(text.utf8))
        } throws: { error in
            guard case .typeMismatch(_, let context) = error as? DecodingError else { return false }
            return context.codingPath.map(\.stringValue) == ["n"] && context.debugDescription.contains("found number")
        }
    }

    /// An integer just beyond Int64's range is not read as Int64.min (its double rounds to −2⁶³).
    @Test(arguments: ["-9223372036854775809", "-9223372036854775809.0", "18446744073709551616", "-1e19"])
    func integersBeyondSixtyFourBitsFitNoInteger(_ number: String) {
        let text = Array(#"{"n":\#(number)}"#.utf8)
        #expect(throws: DecodingError.self) { try JSONCoding.decode(Small.self, from: text) }
        struct Unsigned: Decodable { var n: UInt64 }
        #expect(throws: DecodingError.self) { try JSONCoding.decode(Unsigned.self, from: text) }
    }

    /// Encoding is linear: 20,000 members and elements.
    @Test func manyMembersAndElements() throws {
        let many = Dictionary(uniqueKeysWithValues: (0..<20_000).map { ("k\($0)", $0) })
        let bytes = try JSONCoding.encode(many)
        #expect(try JSONCoding.decode([String: Int].self, from: bytes) == many)
        let list = Array(0..<20_000)
        #expect(try JSONCoding.decode([Int].self, from: JSONCoding.encode(list)) == list)
    }

    @Test func theWholeUnsignedRangeIsKept() throws {
        struct Channel: Codable, Equatable { var channel: UInt64 }
        let text = #"{"channel":18446744073709551615}"#
        #expect(try JSONCoding.decode(Channel.self, from: Array(text.utf8)) == Channel(channel: .max))
        #expect(try JSONCoding.encode(Channel(channel: .max)) == Array(text.utf8))
        #expect(try JSONText.parse(Array(text.utf8))["channel"] == .unsigned(.max))
    }

    @Test func jsonValuesInsideCodableTypes() throws {
        struct Holder: Codable, Equatable {
            var any: JSONValue
            var maybe: JSONValue?
            var list: [JSONValue?]
        }
        let text = #"{"any":{"a":[1,"x",null]},"list":[null,2],"maybe":null}"#
        let holder = try JSONCoding.decode(Holder.self, from: Array(text.utf8))
        #expect(holder == (try JSONDecoder().decode(Holder.self, from: Data(text.utf8))))
        #expect(holder.maybe == nil && holder.list == [nil, .integer(2)])
        #expect(try JSONCoding.decode(Holder.self, from: JSONCoding.encode(holder)) == holder)
    }

    @Test func nonFiniteNumbersAreNotEncoded() {
        #expect(throws: EncodingError.self) { try JSONCoding.encode([Double.nan]) }
        #expect(throws: EncodingError.self) { try JSONCoding.encode(["x": Double.infinity]) }
    }

    @Test func base64IsFoundations() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Base64.encode(bytes)
            #expect(text == Data(bytes).base64EncodedString())
            #expect(Base64.decode(text) == bytes)
        }
        for text in [
            "", "QQ==", "QR==", "QUI=", "QUJD", "QQ", "QQ=", "Q===", "QUJD\n", "QU JD", "QUJ-", "QUJ_", "éé==",
        ] {
            #expect(Base64.decode(text) == Data(base64Encoded: text).map { Array($0) }, "\(text)")
        }
        // Foundation reads these, which are not base64 (padding inside a group, a group of padding alone).
        for text in ["QU=D", "===="] {
            #expect(Data(base64Encoded: text) != nil)
            #expect(Base64.decode(text) == nil, "\(text)")
        }
    }
}
