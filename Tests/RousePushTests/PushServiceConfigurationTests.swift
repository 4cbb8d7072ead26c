import Foundation
import RousePushCore
import Testing

/// The configuration file: a good one parses, each mistake is named with its field.
@Suite("rouse-pushd configuration file")
struct PushServiceConfigurationTests {
    static let good = """
        {"unix":{"path":"/run/p.sock","mode":"0660","allowGIDs":[120]},
         "apps":{"a":{"topic":"com.x","endpoint":"sandbox","keyFile":"/k.p8","keyID":"ABCDEFGHIJ","teamID":"KLMNOPQRST"},
                 "b":{"topic":"com.y","endpoint":"https://127.0.0.1:2197","certFile":"/c.p12","certPassword":"pw"}}}
        """

    @Test func aGoodFileParses() throws {
        let c = try PushServiceConfiguration.parse(Data(Self.good.utf8))
        #expect(c.unixMode == 0o660)
        #expect(c.apps.keys.sorted() == ["a", "b"])
        #expect(c.unix.allowGIDs == [120])
    }

    static let mistakes: [(String, String)] = [
        ("{", "not valid JSON"),
        (#"{"apps":{}}"#, "missing 'unix'"),
        (#"{"unix":{"path":"/s"},"apps":{}}"#, "'apps' is empty"),
        (
            #"{"unix":{"path":"/s","mode":"rwx"},"apps":{"a":{"topic":"t","endpoint":"sandbox","certFile":"/c"}}}"#,
            "octal"
        ),
        (
            #"{"unix":{"path":"/s"},"apps":{"a b":{"topic":"t","endpoint":"sandbox","certFile":"/c"}}}"#,
            "app name 'a b'"
        ),
        (#"{"unix":{"path":"/s"},"apps":{"a":{"topic":"t","endpoint":"sandbox"}}}"#, "no credential"),
        (
            #"{"unix":{"path":"/s"},"apps":{"a":{"topic":"t","endpoint":"sandbox","keyFile":"/k","keyID":"short","teamID":"KLMNOPQRST"}}}"#,
            "10-character"
        ),
        (
            #"{"unix":{"path":"/s"},"apps":{"a":{"topic":"t","endpoint":"sandbox","certFile":"/c","keyFile":"/k"}}}"#,
            "not both"
        ),
        (
            #"{"unix":{"path":"/s"},"apps":{"a":{"topic":"t","endpoint":"sandbox","certFile":"/c","connections":0}}}"#,
            "connections' must be 1–64"
        ),
        (#"{"unix":{"path":"/s"},"apps":{"a":{"topic":"","endpoint":"sandbox","certFile":"/c"}}}"#, "topic' is empty"),
        (
            #"{"unix":{"path":"/s"},"apps":{"a":{"topic":"t","endpoint":"sandbox","certFile":"/c","ratePerSecond":-1}}}"#,
            "ratePerSecond"
        ),
        (
            #"{"unix":{"path":"/s"},"limits":{"maxBatch":0},"apps":{"a":{"topic":"t","endpoint":"sandbox","certFile":"/c"}}}"#,
            "maxBatch"
        ),
        (#"{"unix":{"path":7},"apps":{}}"#, "unix.path"),
    ]

    @Test("each mistake is named", arguments: mistakes)
    func mistakesAreNamed(_ text: String, _ message: String) {
        #expect {
            _ = try PushServiceConfiguration.parse(Data(text.utf8))
        } throws: { error in
            "\(error)".contains(message)
        }
    }
}
