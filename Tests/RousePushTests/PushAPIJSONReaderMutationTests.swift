import Foundation
import RousePushCore
import Testing

/// Seeded byte mutations of valid request bodies: the reader never crashes, and its verdict on the syntax agrees with
/// Foundation's `JSONSerialization` (an independent JSON parser) wherever both define it.
@Suite struct PushAPIJSONReaderMutationTests {
    /// A small deterministic generator (SplitMix64), so a failure names an input that can be replayed.
    struct Seeded {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    }

    static let seeds: [String] = [
        #"{"app":"a","token":"ab12","type":"voip"}"#,
        #"{"token":"ab","type":"alert","priority":10,"expiration":-1.5e3,"payload":{"aps":{"alert":"h\u00e9\"i","n":[1,2.5,true,null]}}}"#,
        #"{"token":"ab","type":"background","payload":"{\"aps\":{}}","collapseID":"c\\d\/e","deadlineMs":100}"#,
    ]

    @Test func mutationsNeverCrashAndAgreeWithFoundationOnSyntax() throws {
        var random = Seeded(state: 30)
        let alphabet = Array(#"{}[]":,\ "-+.0123456789eEtrufalsn"#.utf8) + [0x00, 0x0A, 0x1F, 0x7F, 0xC3, 0xA9, 0xFF]
        var checked = 0
        for round in 0..<6000 {
            var bytes = Array(Self.seeds[round % Self.seeds.count].utf8)
            for _ in 0..<(1 + random.below(3)) {
                let at = random.below(bytes.count + 1)
                switch random.below(3) {
                case 0 where at < bytes.count: bytes.remove(at: at)
                case 1 where at < bytes.count: bytes[at] = alphabet[random.below(alphabet.count)]
                default: bytes.insert(alphabet[random.below(alphabet.count)], at: at)
                }
            }
            let message: String?
            do {
                _ = try PushAPIRequest.parse(json: bytes)
                message = nil
            } catch {
                message = error.message
            }
            // Where the two parsers' rules differ on purpose, only "no crash" is checked: duplicate fields (refused
            // here), surrogate escapes, a top level that is not an object, an empty body, and a trailing comma
            // before '}' or ']' (RFC 8259 has none; Foundation takes it).
            let text = String(decoding: bytes, as: UTF8.self)
            if message?.contains("duplicate field") == true || message?.contains("surrogate") == true
                || text.contains("\\u") || text.contains(",}") || text.contains(",]")
                || bytes.first != UInt8(ascii: "{") || message?.hasPrefix("empty body") == true
            {
                continue
            }
            let foundationAccepts = (try? JSONSerialization.jsonObject(with: Data(bytes))) != nil
            let readerAccepts = !(message?.hasPrefix("body is not valid JSON") ?? false)
            #expect(
                foundationAccepts == readerAccepts,
                "round \(round): \(bytes.map { String($0, radix: 16) }.joined(separator: " ")): \(message ?? "taken")")
            checked += 1
        }
        #expect(checked > 3000)
    }
}
