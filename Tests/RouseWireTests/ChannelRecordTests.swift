import Foundation
import RouseWire
import Testing

@Suite("Device-channel records: one model, the gateway's writer, the agent's reader")
struct ChannelRecordTests {
    /// Lines written by the gateway before the model existed (`ChannelFrame`, recorded), with the value each
    /// one is: the wire format must not change.
    static let recorded: [(line: String, record: ChannelRecord)] = [
        (
            #"{"type":"hello","device":"d4c38bfb2684b08770636","channel":1,"heartbeat":240,"window":64}"#,
            .hello(.init(device: "d4c38bfb2684b08770636", channel: 1, heartbeat: 240, window: 64))
        ),
        (
            #"{"type":"hello","device":"dev\"ice\\\n\u0001é","channel":18446744073709551615,"heartbeat":0,"window":1}"#,
            .hello(.init(device: "dev\"ice\\\n\u{1}é", channel: .max, heartbeat: 0, window: 1))
        ),
        (
            #"{"type":"push","id":"12","token":"ab12","topic":"com.example.rouse.voip","pushType":"voip","priority":10,"#
                + #""apnsID":"3E1D5B0C-7C56-4D8E-9C2B-6A1E0E2A5F10","collapseID":"call/1","expiration":1700000100,"#
                + #""receivedAt":1700000000123,"payload":"eyJjYWxsIjoiYWxpY2UifQ=="}"#,
            .push(
                .init(
                    id: "12", token: "ab12", topic: "com.example.rouse.voip", pushType: "voip", priority: 10,
                    apnsID: "3E1D5B0C-7C56-4D8E-9C2B-6A1E0E2A5F10", collapseID: "call/1", expiration: 1_700_000_100,
                    receivedAt: 1_700_000_000_123, payload: "eyJjYWxsIjoiYWxpY2UifQ=="))
        ),
        (
            #"{"type":"push","id":"4611686018427387907","token":"cd34","topic":"com.example.rouse","priority":5,"#
                + #""apnsID":"x\"y","expiration":0,"receivedAt":1700000000000,"payload":"/wD+"}"#,
            .push(
                .init(
                    id: "4611686018427387907", token: "cd34", topic: "com.example.rouse", pushType: nil, priority: 5,
                    apnsID: "x\"y", collapseID: nil, expiration: 0, receivedAt: 1_700_000_000_000, payload: "/wD+"))
        ),
        (
            #"{"type":"push","id":"99","token":"cd34","topic":"t\u0007","pushType":"background","priority":1,"#
                + #""apnsID":"a","expiration":1700086400,"receivedAt":1700000000000,"payload":""}"#,
            .push(
                .init(
                    id: "99", token: "cd34", topic: "t\u{7}", pushType: "background", priority: 1, apnsID: "a",
                    collapseID: nil, expiration: 1_700_086_400, receivedAt: 1_700_000_000_000, payload: ""))
        ),
        (#"{"type":"heartbeat","time":1700000000777}"#, .heartbeat(.init(time: 1_700_000_000_777))),
        (
            #"{"type":"webpush","id":"7","subscription":"AbC-_","urgency":"very-low","topic":"score","#
                + #""expiration":1700000060,"receivedAt":1700000000001,"payload":"AQI="}"#,
            .webpush(
                .init(
                    id: "7", subscription: "AbC-_", urgency: .veryLow, topic: "score", expiration: 1_700_000_060,
                    receivedAt: 1_700_000_000_001, payload: "AQI="))
        ),
        (
            #"{"type":"webpush","id":"8","subscription":"x","urgency":"high","expiration":0,"#
                + #""receivedAt":1,"payload":""}"#,
            .webpush(
                .init(
                    id: "8", subscription: "x", urgency: .high, topic: nil, expiration: 0, receivedAt: 1, payload: "")
            )
        ),
        (#"{"type":"replaced"}"#, .replaced),
        (#"{"type":"revoked"}"#, .revoked),
        (#"{"type":"shutdown"}"#, .shutdown),
    ]

    @Test func everyKindIsRecorded() {
        let recorded = Set(Self.recorded.map(\.record.type))
        #expect(Set(ChannelRecord.Kind.allCases.map(\.rawValue)).isSubset(of: recorded))
    }

    @Test(arguments: recorded.indices)
    func theWriterWritesTheRecordedBytesAndTheReaderReadsThem(index: Int) throws {
        let (line, record) = Self.recorded[index]
        #expect(String(decoding: record.line, as: UTF8.self) == line + "\n")
        #expect(try ChannelRecord(line: Array(line.utf8)) == record)
    }

    static let samples: [ChannelRecord] =
        recorded.map(\.record) + [
            .unknown(type: "fromALaterVersion"),
            .push(
                .init(
                    id: "1", token: "\u{0}\u{1f}\t\r", topic: "\u{2028}😀", pushType: "", priority: 0, apnsID: "\\",
                    collapseID: "\"", expiration: .max, receivedAt: .min, payload: "")),
            .hello(.init(device: "", channel: 0, heartbeat: .min, window: .max)),
        ]

    @Test(arguments: samples)
    func roundTripsThroughTheWriterAndAgreesWithFoundationsEncoder(record: ChannelRecord) throws {
        let line = record.line
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(!line.dropLast().contains(UInt8(ascii: "\n")))
        #expect(try ChannelRecord(line: line.dropLast()) == record)
        // The same object as Foundation's encoding of the model, member for member.
        let fast = try JSONSerialization.jsonObject(with: Data(line)) as? NSDictionary
        let foundation = try JSONSerialization.jsonObject(with: JSONEncoder().encode(record)) as? NSDictionary
        #expect(fast != nil && fast == foundation)
    }

    @Test(arguments: [
        ("", ChannelRecordError.notJSON("")),
        ("{\"type\":", .notJSON("")),
        ("[1,2]", .notAnObject),
        ("\"push\"", .notAnObject),
        (#"{"kind":"push"}"#, .noType),
        (#"{"type":7}"#, .noType),
        (#"{"type":null}"#, .noType),
        (#"{"type":"push","id":"1"}"#, .missingMember("token", in: "push")),
        (
            #"{"type":"push","id":"1","token":"t","topic":"x","priority":"10","apnsID":"a","expiration":0,"#
                + #""receivedAt":0,"payload":""}"#,
            .badMember("priority", in: "push", expected: "an integer")
        ),
        (
            #"{"type":"push","id":1,"token":"t","topic":"x","priority":10,"apnsID":"a","expiration":0,"#
                + #""receivedAt":0,"payload":""}"#,
            .badMember("id", in: "push", expected: "a string")
        ),
        (
            #"{"type":"push","id":"1","token":"t","topic":"x","priority":10,"apnsID":"a","expiration":0,"#
                + #""receivedAt":0,"payload":null}"#,
            .badMember("payload", in: "push", expected: "a string")
        ),
        (
            #"{"type":"hello","device":"d","channel":-1,"heartbeat":1,"window":1}"#,
            .badMember("channel", in: "hello", expected: "an integer ≥ 0")
        ),
        (#"{"type":"hello","device":"d","channel":1,"heartbeat":1}"#, .missingMember("window", in: "hello")),
        (#"{"type":"heartbeat","time":1.5}"#, .badMember("time", in: "heartbeat", expected: "an integer")),
        (#"{"type":"heartbeat"}"#, .missingMember("time", in: "heartbeat")),
    ])
    func malformedLinesGivePreciseErrors(line: String, expected: ChannelRecordError) {
        #expect(throws: expected) { try ChannelRecord(line: Array(line.utf8)) }
    }

    @Test func errorsSayWhatAndWhere() {
        do {
            _ = try ChannelRecord(line: Array(#"{"type":"heartbeat","time":"noon"}"#.utf8))
            Issue.record("decoded")
        } catch {
            #expect(error.description == "channel record: heartbeat record: member time is not an integer")
        }
        do {
            _ = try ChannelRecord(
                line: Array(#"{"type":"hello","device":"d","channel":-1,"heartbeat":1,"window":1}"#.utf8))
            Issue.record("decoded")
        } catch {
            #expect(error.description == "channel record: hello record: member channel is not an integer ≥ 0")
        }
        do {
            _ = try ChannelRecord(line: Array("{x".utf8))
            Issue.record("decoded")
        } catch {
            #expect(error.description.hasPrefix("channel record: not JSON: "))
        }
    }

    @Test func unknownTypesAndUnknownMembersAreNotErrors() throws {
        #expect(try ChannelRecord(line: Array(#"{"type":"wake","at":1}"#.utf8)) == .unknown(type: "wake"))
        #expect(try ChannelRecord(line: Array(#"{"type":"revoked","why":"stolen"}"#.utf8)) == .revoked)
        #expect(
            try ChannelRecord(line: Array(#"{"type":"heartbeat","time":5,"extra":[1]}"#.utf8))
                == .heartbeat(.init(time: 5)))
    }

    @Test func theSplitterCutsLinesAcrossChunks() {
        var splitter = ChannelLineSplitter()
        #expect(splitter.append(Array("{\"type\":\"rep".utf8)).isEmpty)
        #expect(splitter.append(Array("laced\"}\n{\"type\"".utf8)) == [Array(#"{"type":"replaced"}"#.utf8)])
        #expect(splitter.append(Array(":\"revoked\"}\n\n".utf8)) == [Array(#"{"type":"revoked"}"#.utf8), []])
        // A line longer than the limit is dropped, the next one is read.
        _ = splitter.append([UInt8](repeating: UInt8(ascii: "x"), count: splitter.maxLine + 1))
        #expect(splitter.append(Array("y\n".utf8)) == [Array("y".utf8)])
    }
}
