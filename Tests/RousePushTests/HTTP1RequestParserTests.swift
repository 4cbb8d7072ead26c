import Foundation
import RouseAPNs
import RousePushCore
import RouseText
import Testing

/// The bounded HTTP/1.1 parser without sockets: complete requests, byte-by-byte feeding, pipelining, 100-continue,
/// and a precise refusal for each kind of garbage.
@Suite("HTTP/1.1 request parser")
struct HTTP1RequestParserTests {
    static func parse(_ text: String, limits: HTTP1RequestParser.Limits = .init()) -> HTTP1RequestParser.Step {
        var parser = HTTP1RequestParser(limits: limits)
        parser.append(Array(text.utf8))
        return parser.next()
    }

    @Test func aCompleteRequestFedByteByByte() {
        let text = "POST /v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-A:  b \r\n\r\nhello"
        var parser = HTTP1RequestParser()
        var steps: [HTTP1RequestParser.Step] = []
        for byte in text.utf8 {
            parser.append([byte])
            let step = parser.next()
            if step != .needMore { steps.append(step) }
        }
        #expect(
            steps == [
                .request(
                    HTTP1Request(
                        method: "POST", target: "/v1/push", version: "HTTP/1.1",
                        headers: [("host", "x"), ("content-length", "5"), ("x-a", "b")], body: Array("hello".utf8)))
            ])
    }

    @Test func pipelinedRequestsComeOneAfterTheOther() {
        var parser = HTTP1RequestParser()
        parser.append(Array("GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        guard case .request(let first) = parser.next(), case .request(let second) = parser.next() else {
            Issue.record("two requests expected")
            return
        }
        #expect(first.target == "/health")
        #expect(second.target == "/metrics")
        #expect(parser.next() == .needMore)
        #expect(!parser.inRequest)
    }

    @Test func expectContinueIsAnsweredOnceBeforeTheBody() {
        var parser = HTTP1RequestParser()
        parser.append(
            Array("POST /v1/push HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8))
        #expect(parser.next() == .expectContinue)
        #expect(parser.next() == .needMore)
        parser.append(Array("{}".utf8))
        guard case .request(let request) = parser.next() else {
            Issue.record("request expected")
            return
        }
        #expect(request.body == Array("{}".utf8))
    }

    @Test func keepAliveFollowsTheVersionAndConnectionHeader() {
        func keepAlive(_ text: String) -> Bool? {
            if case .request(let r) = Self.parse(text) { return r.keepAlive }
            return nil
        }
        #expect(keepAlive("GET / HTTP/1.1\r\nHost: x\r\n\r\n") == true)
        #expect(keepAlive("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.0\r\n\r\n") == false)
        #expect(keepAlive("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n") == true)
    }

    @Test func chunkedBodiesAreDecodedFedByteByByteWithExtensionsAndTrailers() {
        let text =
            "POST /wp/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=\"va;lue\"\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Checksum: 1\r\n\r\n"
            + "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"
        var parser = HTTP1RequestParser()
        var requests: [HTTP1Request] = []
        for byte in text.utf8 {
            parser.append([byte])
            while case .request(let request) = parser.next() { requests.append(request) }
        }
        #expect(requests.map(\.target) == ["/wp/a", "/next"])
        #expect(requests.first?.body == Array("hello0123456789".utf8))
        #expect(!parser.inRequest)
    }

    @Test func theLimitAppliesToTheDecodedChunkedSize() {
        var limits = HTTP1RequestParser.Limits()
        limits.maxBodyBytes = 8
        let head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        // 8 bytes in 8 chunks: far more than 8 bytes on the wire, not more than 8 decoded.
        let eight = String(repeating: "1\r\na\r\n", count: 8) + "0\r\n\r\n"
        guard case .request(let request) = Self.parse(head + eight, limits: limits) else {
            Issue.record("8 decoded bytes must be accepted")
            return
        }
        #expect(request.body.count == 8)
        guard case .failure(let error) = Self.parse(head + "4\r\naaaa\r\n5\r\n", limits: limits) else {
            Issue.record("9 decoded bytes must be refused")
            return
        }
        #expect(error.status == 413 && error.message.contains("exceeds 8 bytes"), "\(error)")
    }

    @Test func expectContinueIsAnsweredForAChunkedBody() {
        var parser = HTTP1RequestParser()
        parser.append(
            Array("POST / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n".utf8))
        #expect(parser.next() == .expectContinue)
        #expect(parser.next() == .needMore)
        parser.append(Array("2\r\n{}\r\n0\r\n\r\n".utf8))
        guard case .request(let request) = parser.next() else {
            Issue.record("request expected")
            return
        }
        #expect(request.body == Array("{}".utf8))
    }

    static let garbage: [(String, Int, String)] = [
        ("\u{16}\u{03}\u{01}\u{02}\r\n\r\n", 400, "request line must be"),
        ("GET /health HTTP/1.1\nHost: x\n\n", 400, "bare LF"),
        ("GET /x\0 HTTP/1.1\r\n\r\n", 400, "NUL byte"),
        ("G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "method is not an HTTP token"),
        ("GET http://x/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "origin-form"),
        ("GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "not supported"),
        ("GET / FTP/1.0\r\nHost: x\r\n\r\n", 400, "HTTP version"),
        ("GET / HTTP/1.1\r\n\r\n", 400, "without Host"),
        ("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", 400, "folding"),
        ("GET / HTTP/1.1\r\nHost x\r\n\r\n", 400, "without ':'"),
        ("GET / HTTP/1.1\r\nHo st: x\r\n\r\n", 400, "not an HTTP token"),
        ("GET / HTTP/1.1\r\nHost: x\u{01}\r\n\r\n", 400, "control byte"),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "'gzip' is not supported"),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400, "must end with chunked"),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
            "more than once"
        ),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
            "RFC 9112 §6.3"
        ),
        ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "HTTP/1.0 request"),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n", 413,
            "chunked body exceeds"
        ),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, "not hexadecimal"),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", 400, "not hexadecimal"),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2 x\r\nab\r\n0\r\n\r\n", 400,
            "other than ';'"
        ),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n", 400,
            "not followed by CRLF"
        ),
        ("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n0\r\n\r\n", 400, "bare LF"),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n", 400,
            "trailer line without ':'"
        ),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1;" + String(repeating: "e", count: 1100),
            400, "exceeds 1024 bytes"
        ),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", 413, "exceeds"),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n", 400, "not a decimal"),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400, "conflicting"),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400, "not a decimal"),
        ("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n", 413, "exceeds"),
        ("GET /" + String(repeating: "a", count: 3000) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414, "target exceeds"),
        ("GET / HTTP/1.1\r\nHost: x\r\n" + String(repeating: "X: y\r\n", count: 70) + "\r\n", 431, "header fields"),
        ("GET / HTTP/1.1\r\nHost: x\r\nA: " + String(repeating: "a", count: 17000), 431, "exceed"),
    ]

    @Test("garbage gets a precise refusal", arguments: garbage)
    func garbageIsRefused(_ text: String, _ status: Int, _ message: String) {
        guard case .failure(let error) = Self.parse(text) else {
            Issue.record("accepted: \(text.prefix(60))")
            return
        }
        #expect(error.status == status, "\(error)")
        #expect(error.message.contains(message), "\(error)")
    }
}

/// The API's models: routes, push requests with `rouse send`'s defaults, outcomes as `rouse send --json` writes them,
/// the rate limit.
@Suite("push API models")
struct PushAPIModelTests {
    @Test func routes() {
        #expect(PushAPIRoute.match(method: "POST", target: "/v1/push") == .success(.push))
        #expect(
            PushAPIRoute.match(method: "POST", target: "/v1/apps/a/voip/ab?x=1")
                == .success(.fastPath(app: "a", type: "voip", token: "ab")))
        #expect((try? PushAPIRoute.match(method: "GET", target: "/v1/push").get()) == nil)
        if case .failure(let e) = PushAPIRoute.match(method: "GET", target: "/v1/push") { #expect(e.status == 405) }
        if case .failure(let e) = PushAPIRoute.match(method: "POST", target: "/v1/apps//voip/ab") {
            #expect(e.status == 404)
        }
    }

    @Test func requestDefaultsAreRouseSends() throws {
        let voip = try PushAPIRequest.parse(json: Array(#"{"app":"a","token":"ab","type":"voip"}"#.utf8)).push(
            bundle: "com.x")
        #expect(voip.topic == "com.x.voip")
        #expect(voip.expiration == 0)
        #expect(voip.payload == Array(#"{"aps":{}}"#.utf8))
        let background = try PushAPIRequest.parse(
            json: Array(
                #"{"token":"ab","type":"background","topic":"com.y","payload":"{\"aps\":{\"content-available\":1},\"k\":1}"}"#
                    .utf8))
        #expect(background.push(bundle: "com.x").topic == "com.y")
        #expect(background.push(bundle: "com.x").priority?.rawValue == 5)
        #expect(background.payload == Array(#"{"aps":{"content-available":1},"k":1}"#.utf8))
        let roundTrip = try PushAPIRequest.parse(json: Array(background.json.utf8))
        #expect(roundTrip == background)
    }

    @Test func outcomeJSONRoundTrips() throws {
        let outcome = PushAPIOutcome(
            token: "ab", apnsID: "id", kind: .rejected, reason: "Unregistered", timestamp: 17, attempts: 1, retries: 0,
            latencyMs: 1.5)
        #expect(
            outcome.json
                == #"{"token":"ab","apnsID":"id","outcome":"rejected","reason":"Unregistered","timestamp":17,"attempts":1,"retries":0,"latencyMs":1.500}"#
        )
        let object = try JSONValue.parse(outcome.json.utf8)
        #expect(PushAPIOutcome.parse(object) == outcome)
        #expect(outcome.httpStatus == 422)
    }

    @Test func latencyPrintsAsPercentThreeF() {
        for value in [0, 0.0004, 0.0006, 0.412, 1.5, 12.0456, 1.9999, 87.25049, 12345.678] {
            #expect(PushAPIOutcome.threeDecimals(value) == String(format: "%.3f", value), "\(value)")
        }
        #expect(PushAPIOutcome.threeDecimals(-1) == "0.000")
        #expect(PushAPIOutcome.threeDecimals(.nan) == "0.000")
    }

    @Test func rateLimiterRefillsWithTime() {
        var limiter = RateLimiter(rate: 10, burst: 2)
        #expect(limiter.take(1, now: .zero) == nil)
        #expect(limiter.take(1, now: .zero) == nil)
        #expect(limiter.take(1, now: .zero) == .milliseconds(100))
        #expect(limiter.take(1, now: .milliseconds(100)) == nil)
        #expect(limiter.take(5, now: .seconds(10)) != nil)
    }
}
