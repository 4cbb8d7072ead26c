import Foundation
import RouseAPNs
import RousePushCore
import Testing

/// The request bodies' reader (`PushAPIJSONReader`, behind `PushAPIRequest.parse`): what it takes, and every kind of
/// garbage refused with its precise message, without a socket.
@Suite struct PushAPIJSONReaderTests {
    static func parse(_ text: String) throws(PushServiceError) -> PushAPIRequest {
        try PushAPIRequest.parse(json: Array(text.utf8))
    }

    static func message(_ bytes: [UInt8]) -> String? {
        do {
            _ = try PushAPIRequest.parse(json: bytes)
            return nil
        } catch {
            return error.message
        }
    }

    static func message(_ text: String) -> String? { message(Array(text.utf8)) }

    static func batchMessage(_ text: String, limit: Int = 3) -> String? {
        do {
            _ = try PushAPIRequest.parseBatch(json: Array(text.utf8), limit: limit)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func readsEveryField() throws {
        let request = try Self.parse(
            """
             { "app" : "a", "token":"ab12", "type":"alert", "topic":"com.x", "priority": 10, "expiration": 1700000000,
              "collapseID":"c\\u00e9\\n", "apnsID":"4b0d2d5e-0000-4000-8000-000000000001", "deadlineMs": 2500,
              "payload": { "aps" : { "alert" : "h\\"i \\/ \\ud83d\\ude00" , "list": [1, -2.5e3, true, false, null] } } }\t
            """)
        #expect(request.app == "a")
        #expect(request.token == "ab12")
        #expect(request.type == .alert)
        #expect(request.topic == "com.x")
        #expect(request.priority == 10)
        #expect(request.expiration == 1_700_000_000)
        #expect(request.collapseID == "cé\n")
        #expect(request.apnsID == "4b0d2d5e-0000-4000-8000-000000000001")
        #expect(request.deadlineMs == 2500)
        // An object payload keeps its bytes and key order; only the whitespace between tokens goes.
        #expect(
            request.payload
                == Array(#"{"aps":{"alert":"h\"i \/ \ud83d\ude00","list":[1,-2.5e3,true,false,null]}}"#.utf8))
        let json = try #require(request.payload)
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any])
        let aps = try #require(decoded["aps"] as? [String: Any])
        #expect(aps["alert"] as? String == "h\"i / 😀")
    }

    @Test func stringPayloadIsDecodedVerbatim() throws {
        let request = try Self.parse(#"{"token":"ab","type":"voip","payload":"{\"aps\":{},\"k\":\"\u00e9\"}"}"#)
        #expect(request.payload == Array(#"{"aps":{},"k":"é"}"#.utf8))
    }

    @Test func integersInOtherSpellings() throws {
        #expect(try Self.parse(#"{"token":"ab","type":"voip","priority":5.0}"#).priority == 5)
        #expect(try Self.parse(#"{"token":"ab","type":"voip","expiration":1e3}"#).expiration == 1000)
        #expect(try Self.parse(#"{"token":"ab","type":"voip","expiration":-0}"#).expiration == 0)
        #expect(
            try Self.parse(#"{"token":"ab","type":"voip","expiration":9223372036854775807}"#).expiration == Int64.max)
    }

    @Test(
        "each kind of malformed JSON is refused with what is wrong and where",
        arguments: [
            ("{", "body is not valid JSON: unexpected end where a field name belongs at byte 1"),
            (" \n\t ", "body is not valid JSON: unexpected end where a value belongs at byte 4"),
            (#"{"token":"ab","type":"voip"} x"#, "body is not valid JSON: unexpected 'x' after the value at byte 29"),
            (#"{"token":"ab","type":"voip"}{}"#, "body is not valid JSON: unexpected '{' after the value at byte 28"),
            (
                #"{"token":"ab" "type":"voip"}"#,
                "body is not valid JSON: unexpected '\"' where ',' or '}' belongs at byte 14"
            ),
            (#"{"token":"ab",}"#, "body is not valid JSON: unexpected '}' where a field name belongs at byte 14"),
            (#"{token:"ab"}"#, "body is not valid JSON: unexpected 't' where a field name belongs at byte 1"),
            (#"{"token" "ab"}"#, "body is not valid JSON: unexpected '\"' where ':' belongs at byte 9"),
            (#"{"token":'ab'}"#, "body is not valid JSON: unexpected ''' where a value belongs at byte 9"),
            (#"{"token":"ab"#, "body is not valid JSON: unterminated string at byte 12"),
            ("{\"token\":\"a\tb\"}", "body is not valid JSON: control character 0x9 in a string at byte 11"),
            (#"{"token":"a\qb"}"#, "body is not valid JSON: invalid escape: a backslash before 'q' at byte 12"),
            (#"{"token":"\u12"}"#, "body is not valid JSON: unexpected '\"' in a \\u escape at byte 14"),
            (
                #"{"token":"\ud83d"}"#,
                "body is not valid JSON: a high surrogate escape without its low surrogate at byte 16"
            ),
            (
                #"{"token":"\ude00"}"#,
                "body is not valid JSON: a low surrogate escape without its high surrogate at byte 16"
            ),
            (#"{"token":"ab","priority":01}"#, "body is not valid JSON: a number with a leading zero at byte 26"),
            (
                #"{"token":"ab","priority":-}"#,
                "body is not valid JSON: unexpected '}' where a digit belongs at byte 26"
            ),
            (
                #"{"token":"ab","priority":1.}"#,
                "body is not valid JSON: unexpected '}' where a digit belongs at byte 27"
            ),
            (
                #"{"token":"ab","priority":1e}"#,
                "body is not valid JSON: unexpected '}' where a digit belongs at byte 27"
            ),
            (
                #"{"token":"ab","priority":.5}"#,
                "body is not valid JSON: unexpected '.' where a value belongs at byte 25"
            ),
            (
                #"{"token":"ab","priority":NaN}"#,
                "body is not valid JSON: unexpected 'N' where a value belongs at byte 25"
            ),
            (#"{"token":"ab","app":nul}"#, "body is not valid JSON: unexpected 'n' where a value belongs at byte 20"),
            (#"{"token":"ab","app":[1,]}"#, "body is not valid JSON: unexpected ']' where a value belongs at byte 23"),
            (
                #"{"token":"ab","app":[1 2]}"#,
                "body is not valid JSON: unexpected '2' where ',' or ']' belongs at byte 23"
            ),
            (
                #"{"token":"ab","token":"cd","type":"voip"}"#,
                "body is not valid JSON: duplicate field 'token' at byte 22"
            ),
        ])
    func malformed(body: String, expected: String) {
        #expect(Self.message(body) == expected)
    }

    @Test func invalidUTF8AndRawBytes() {
        let prefix = Array(#"{"token":""#.utf8)
        let suffix = Array(#"","type":"voip"}"#.utf8)
        #expect(
            Self.message(prefix + [0xC3, 0x28] + suffix)
                == "body is not valid JSON: invalid UTF-8 in the string that ends at byte 12")
        #expect(
            Self.message(prefix + [0xED, 0xA0, 0x80] + suffix)
                == "body is not valid JSON: invalid UTF-8 in the string that ends at byte 13")
        #expect(
            Self.message([0xEF, 0xBB, 0xBF] + Array(#"{"token":"ab","type":"voip"}"#.utf8))
                == "body is not valid JSON: unexpected byte 0xEF where a value belongs at byte 0")
        #expect(
            Self.message(Array(#"{"token":"ab","type":"voip"}"#.utf8) + [0])
                == "body is not valid JSON: unexpected byte 0x0 after the value at byte 28")
        #expect(Self.message([]) == "empty body: a JSON object is required")
    }

    @Test func deepNestingIsRefusedNotRecursedInto() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(
            Self.message(#"{"token":"ab","type":"voip","payload":{"a":"# + deep)
                == "body is not valid JSON: nesting deeper than 64 levels at byte 105")
        // Level 64 (the body 1, the payload 2, then 62 arrays) is the deepest taken.
        let ok = String(repeating: "[", count: 62) + String(repeating: "]", count: 62)
        #expect(Self.message(#"{"token":"ab","type":"voip","payload":{"a":"# + ok + "}}") == nil)
        #expect(
            Self.message(String(repeating: "[", count: 100_000))
                == "body is not valid JSON: nesting deeper than 64 levels at byte 64")
    }

    @Test(
        "a valid body with wrong fields is refused with the field and the rule",
        arguments: [
            ("[1,2]", "body must be a JSON object"),
            (#""text""#, "body must be a JSON object"),
            ("null", "body must be a JSON object"),
            (#"{"token":"ab","type":"voip","colour":1}"#, "unknown field 'colour'"),
            (#"{"colour":1,"token":5}"#, "unknown field 'colour'"),
            (#"{"type":"voip"}"#, "missing 'token'"),
            (#"{"token":null,"type":"voip"}"#, "'token' must be a string"),
            (#"{"token":["ab"],"type":"voip"}"#, "'token' must be a string"),
            (#"{"token":"ab"}"#, "missing 'type' (voip, background, alert, …)"),
            (#"{"token":"ab","type":"fax"}"#, "'type': unknown push type 'fax'"),
            (#"{"token":"ab","type":"voip","payload":3}"#, "'payload' must be a JSON object or a string holding one"),
            (#"{"token":"ab","type":"voip","payload":[]}"#, "'payload' must be a JSON object or a string holding one"),
            (#"{"token":"ab","type":"voip","priority":"10"}"#, "'priority' must be an integer"),
            (#"{"token":"ab","type":"voip","priority":true}"#, "'priority' must be an integer"),
            (#"{"token":"ab","type":"voip","priority":5.5}"#, "'priority' must be an integer"),
            (#"{"token":"ab","type":"voip","expiration":1e400}"#, "'expiration' must be an integer"),
            (#"{"token":"ab","type":"voip","expiration":9223372036854775808}"#, "'expiration' must be an integer"),
            (#"{"token":"ab","type":"voip","deadlineMs":0}"#, "'deadlineMs' must be 1–3600000"),
            (#"{"token":"ab","type":"voip","app":{}}"#, "'app' must be a string"),
            // The order of the checks does not depend on the order of the fields.
            (#"{"apnsID":1,"priority":"x","token":"ab","type":"voip"}"#, "'priority' must be an integer"),
        ])
    func wrongFields(body: String, expected: String) {
        #expect(Self.message(body) == expected)
    }

    @Test func batches() throws {
        let push = #"{"app":"a","token":"ab","type":"voip"}"#
        let two = try PushAPIRequest.parseBatch(json: Array(#"{"pushes":[\#(push), \#(push)]}"#.utf8), limit: 3)
        #expect(two.count == 2)
        #expect(two[0] == PushAPIRequest(app: "a", token: "ab", type: .voip))
        #expect(Self.batchMessage(#"{"pushes":3}"#) == "'pushes' must be an array of pushes")
        #expect(Self.batchMessage(#"{}"#) == "'pushes' must be an array of pushes")
        #expect(Self.batchMessage(#"{"pushes":[]}"#) == "'pushes' is empty")
        #expect(Self.batchMessage(#"{"pushes":[],"x":1}"#) == "unknown field 'x'")
        #expect(Self.batchMessage(#"{"pushes":[\#(push),7]}"#) == "'pushes[1]' is not an object")
        #expect(
            Self.batchMessage(#"{"pushes":[\#(push),{"token":"ab"}]}"#)
                == "missing 'pushes[1].type' (voip, background, alert, …)")
        #expect(
            Self.batchMessage(#"{"pushes":[\#(push),{"token":"ab","type":"voip","k":1}]}"#)
                == "unknown field 'pushes[1].k'")
        // Too many wins over a wrong element, as the size is the first thing a client must fix.
        #expect(
            Self.batchMessage(#"{"pushes":[7,\#(push),\#(push),\#(push)]}"#) == "batch of 4 pushes exceeds 3")
        #expect(
            Self.batchMessage(#"{"pushes":[\#(push)],"pushes":[]}"#)
                == "body is not valid JSON: duplicate field 'pushes' at byte 60")
        #expect(
            Self.batchMessage(#"{"pushes":[\#(push),{"token":"ab","type":"voip"]}"#)
                == "body is not valid JSON: unexpected ']' where ',' or '}' belongs at byte 77")
    }

    @Test func roundTripsItsOwnJSON() throws {
        let request = PushAPIRequest(
            app: "a\"b", token: "ab", type: .background, topic: "t\\", payload: Array(#"{"aps":{"x":"\u0001"}}"#.utf8),
            priority: 1, expiration: -5, collapseID: "c", apnsID: "i", deadlineMs: 3_600_000)
        #expect(try Self.parse(request.json) == request)
    }

    /// Routes split the target on its bytes: a combining mark after a slash (one `Character` with it) still starts a
    /// segment, as it does for any HTTP server.
    @Test func routesSplitOnBytesNotCharacters() {
        #expect(
            PushAPIRoute.match(method: "POST", target: "/v1/apps/a/voip/\u{301}ab")
                == .success(.fastPath(app: "a", type: "voip", token: "\u{301}ab")))
        #expect(PushAPIRoute.match(method: "GET", target: "/health?x=/y") == .success(.health))
        if case .failure(let e) = PushAPIRoute.match(method: "GET", target: "/v1/\u{301}push") {
            #expect(e.status == 404)
            #expect(e.message == "no such path: /v1/\u{301}push")
        } else {
            Issue.record("a path with a combining mark is not /v1/push")
        }
    }
}
