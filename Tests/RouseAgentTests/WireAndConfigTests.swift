import Foundation
import RouseAgent
import RouseAgentClient
import RouseAgentCore
import Testing

@Suite("IPC frames, de-duplication window, handler files", .timeLimit(.minutes(1)))
struct WireAndConfigTests {
    @Test func framesRoundTripInPieces() throws {
        let message = AgentEvent.push(
            .init(
                pushID: "7", pushType: "voip", topic: "t", payload: "", apnsID: "a", mustReport: true, seconds: 5))
        let bytes = FrameCodec.encode(message) + FrameCodec.encode(AgentEvent.ok(.init()))
        var decoder = FrameDecoder<AgentEvent>()
        var out: [AgentEvent] = []
        for byte in bytes {
            decoder.append([byte])
            while let next = try decoder.next() { out.append(next.message) }
        }
        #expect(out == [message, .ok(.init())])
    }

    static func decode(_ bytes: [UInt8]) throws -> IPCFrame<AgentEvent>? {
        var decoder = FrameDecoder<AgentEvent>()
        decoder.append(bytes)
        return try decoder.next()
    }

    @Test func malformedFramesAreErrors() {
        #expect(throws: FrameError.self) { _ = try Self.decode([0xFF, 0xFF, 0xFF, 0xFF]) }
        #expect(throws: FrameError.self) { _ = try Self.decode([0, 0, 0, 3] + Array("{x}".utf8)) }
        #expect(throws: FrameError.badVersion(9)) {
            _ = try Self.decode([0, 0, 0, 20] + Array(#"{"v":9,"type":"ok"} "#.utf8))
        }
    }

    @Test func dedupWindowEvictsOldest() {
        var window = DedupWindow(capacity: 2)
        let first = window.insert("a")
        let again = window.insert("a")
        #expect(first && !again)
        window.insert("b")
        window.insert("c")
        #expect(!window.contains("a") && window.contains("b") && window.contains("c"))
    }

    @Test("the dedup window keeps the newest keys across its compactions and round-trips through JSON")
    func dedupWindowOverManyInserts() throws {
        var window = DedupWindow(capacity: 3)
        for index in 0..<10 { window.insert("k\(index)") }
        #expect(Array(window.order) == ["k7", "k8", "k9"])
        #expect(!window.contains("k6") && window.contains("k7"))
        let again = window.insert("k8")
        #expect(!again)
        let decoded = try JSONDecoder().decode(DedupWindow.self, from: JSONEncoder().encode(window))
        #expect(decoded == window)
        var fresh = DedupWindow(capacity: 3)
        for key in ["k7", "k8", "k9"] { fresh.insert(key) }
        #expect(fresh == window)
    }

    @Test("the dedup window is shared fairly by topic: one provider's flood evicts its own keys, not another's")
    func dedupWindowPartitionedByTopic() throws {
        var window = DedupWindow(capacity: 8)
        window.insert("com.example.voip A1")
        window.insert("com.example.voip A2")
        for index in 0..<1000 { window.insert("com.flood.app F\(index)") }
        // Before: one queue, oldest first: the flood evicted A1 and A2, which a reconnect would hand over again.
        #expect(window.contains("com.example.voip A1") && window.contains("com.example.voip A2"))
        #expect(window.count(partitionOf: "com.flood.app x") == 6)
        #expect(window.contains("com.flood.app F999") && !window.contains("com.flood.app F993"))
        #expect(window.order.count == 8)
        // The persisted form (oldest first) round-trips, partitions and all.
        let decoded = try JSONDecoder().decode(DedupWindow.self, from: JSONEncoder().encode(window))
        #expect(decoded == window && decoded.contains("com.example.voip A1"))
        var again = decoded
        let repeated = again.insert("com.example.voip A2")
        #expect(!repeated)
        again.insert("com.example.voip A3")
        #expect(again.contains("com.example.voip A1") && again.count(partitionOf: "com.flood.app x") == 5)
    }

    @Test func handlerFileParses() throws {
        let text = """
            # example
            topic = "com.example.rouse"
            command = ["/usr/bin/handler", "--mode", "report"]  # trailing comment
            push-types = ["voip", "background"]
            [limits]
            voip-deadline-seconds = 1.5
            strikes = 2
            """
        let handler = try HandlerConfiguration.parse(text, name: "example", file: "example.toml")
        #expect(handler.topics == ["com.example.rouse.voip", "com.example.rouse"])
        #expect(handler.rules.voipDeadline == .milliseconds(1500))
        #expect(handler.rules.strikeLimit == 2)
        #expect(!handler.allowRoot && handler.environment.isEmpty)
        let privileged = try HandlerConfiguration.parse(
            text.replacingOccurrences(
                of: "[limits]", with: "allow-root = true\nenvironment = [\"TZ\", \"A=b=c\"]\n[limits]"),
            name: "example", file: "example.toml")
        #expect(privileged.allowRoot && privileged.environment == ["TZ", "A=b=c"])
    }

    @Test(arguments: [
        ("topic = com", "example.toml:1: unsupported value 'com' at column 12"),
        ("topic = \"a\"\ncommand = [\"rel\"]", "example.toml: command[0] must be an absolute path"),
        ("topic = \"a\"\nbogus = 1", "example.toml: unknown key bogus"),
        ("topic = \"a\"\ntopic = \"b\"", "example.toml:2: duplicate key topic"),
        // Numbers that would overflow the deadline arithmetic, and input nested past the parser's depth.
        (
            "topic = \"a\"\ncommand = [\"/x\"]\n[limits]\nvoip-deadline-seconds = 1e300",
            "example.toml: limits.voip-deadline-seconds must be a number from 0 to 31622400"
        ),
        (
            "topic = \"a\"\ncommand = [\"/x\"]\n[limits]\nstrikes = 9223372036854775807",
            "example.toml: limits.strikes must be a number from 0 to 1000000"
        ),
        (
            "topic = \"a\"\ncommand = [\"/x\"]\n[limits]\nbackground-burst = -1",
            "example.toml: limits.background-burst must be a number from 0 to 1000000"
        ),
        (
            "topic = " + String(repeating: "[", count: 100_000),
            "example.toml:1: arrays nested more than 8 deep at column 18"
        ),
        ("topic = \"a\"\ncommand = [\"/x\"]\nallow-root = 1", "example.toml: allow-root must be true or false"),
        (
            "topic = \"a\"\ncommand = [\"/x\"]\nenvironment = [\"A B=1\"]",
            "example.toml: environment: each entry is NAME or NAME=value (NAME: A-Z, a-z, 0-9, _)"
        ),
    ])
    func handlerFileErrorsArePrecise(_ text: String, _ expected: String) {
        do {
            _ = try HandlerConfiguration.parse(text, name: "example", file: "example.toml")
            Issue.record("parsed")
        } catch {
            #expect(error.description == "configuration: " + expected)
        }
    }
}
