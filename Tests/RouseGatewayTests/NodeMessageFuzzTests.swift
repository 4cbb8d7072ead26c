import RouseGateway
import Testing

/// Inputs `deploy/fuzz.sh` found (target `node-message`; docs/fuzzing.md), each at the cause it exposed: the
/// reader cut lines, fields and escapes on Characters while the writer escapes Unicode scalars, so a grapheme
/// cluster spanning a separator or an escape changed what a line meant.
@Suite("Node messages: inputs the fuzzer found")
struct NodeMessageFuzzTests {
    @Test("a device id with '%' and a combining mark after it survives its own line (the fuzzer's find)")
    func percentThenCombiningMark() {
        let message = NodeMessage.revoked(deviceID: "x%\u{33E}\t\n")
        let parsed = NodeMessage.parse(message.line)
        #expect(parsed.errors.isEmpty)
        #expect(parsed.messages == [message])
    }

    @Test("'%' with a combining mark is no escape: the line is refused with its reason, not read as a literal '%'")
    func combinedPercentIsRefused() {
        let parsed = NodeMessage.parse("r\tok\nr\tx%\u{33E}%0A\nr\tok2")
        #expect(parsed.messages == [.revoked(deviceID: "ok"), .revoked(deviceID: "ok2")])
        #expect(parsed.errors.map(\.reason) == ["bad device id"])
    }

    @Test("a device id ending in a carriage return does not swallow the next message (\"\\r\\n\" is one Character)")
    func carriageReturnBeforeNewline() {
        let messages: [NodeMessage] = [.revoked(deviceID: "a\r"), .pending(deviceID: "b", seq: 3)]
        let payloads = NodeMessage.payloads(messages)
        #expect(payloads.count == 1)
        let parsed = NodeMessage.parse(payloads[0])
        #expect(parsed.errors.isEmpty)
        #expect(parsed.messages == messages)
    }
}
