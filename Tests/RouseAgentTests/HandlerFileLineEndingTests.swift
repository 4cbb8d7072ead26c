import RouseAgent
import RouseAgentCore
import Testing

/// Handler files with CRLF line endings (found while fuzzing the handler-file parser, docs/fuzzing.md): the parser
/// cut lines on Characters, where "\r\n" is one, so such a file was read as its first line and every later key,
/// `[limits]` included, was silently ignored.
@Suite("Handler files with CRLF line endings")
struct HandlerFileLineEndingTests {
    @Test("every line of a CRLF file counts")
    func crlfFileParsesEveryKey() throws {
        let text =
            "topic = \"com.example.rouse\"\r\ncommand = [\"/usr/bin/handler\"]\r\npush-types = [\"voip\"]\r\n"
            + "[limits]\r\nstrikes = 7\r\n"
        let handler = try HandlerConfiguration.parse(text, name: "example", file: "example.toml")
        #expect(handler.command == ["/usr/bin/handler"])
        #expect(handler.topics == ["com.example.rouse.voip"])
        #expect(handler.rules.strikeLimit == 7)
    }

    @Test("an error in a CRLF file names its own line")
    func crlfErrorNamesTheLine() {
        let text = "topic = \"a\"\r\ncommand = [\"/x\"]\r\ntopic = \"b\"\r\n"
        #expect {
            _ = try HandlerConfiguration.parse(text, name: "example", file: "example.toml")
        } throws: { error in
            "\(error)" == "configuration: example.toml:3: duplicate key topic"
        }
    }
}
