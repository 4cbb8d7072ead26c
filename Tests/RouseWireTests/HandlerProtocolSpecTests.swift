import Foundation
import RouseWire
import Testing

/// docs/handler-protocol.md, the handler protocol's specification, checked against the types both ends use: every
/// example frame in its `json request` / `json event` blocks decodes as a known message, encodes back to the same
/// members (a member the types do not know would be lost and fail), and every message type of both directions
/// has an example; its `hex frame` block is a complete frame.
@Suite("docs/handler-protocol.md: every example frame is the Swift model's")
struct HandlerProtocolSpecTests {
    /// The specification's text.
    static let specification: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return (try? String(contentsOf: url.appendingPathComponent("docs/handler-protocol.md"), encoding: .utf8)) ?? ""
    }()

    /// The lines of the fenced blocks whose info string is `info`.
    static func blocks(_ info: String) -> [String] {
        var lines: [String] = []
        var inside = false
        for line in specification.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inside = !inside && line.dropFirst(3).trimmingCharacters(in: .whitespaces) == info
                continue
            }
            if inside, !line.trimmingCharacters(in: .whitespaces).isEmpty { lines.append(String(line)) }
        }
        return lines
    }

    static let requests = blocks("json request")
    static let events = blocks("json event")

    /// The example's members and those of its re-encoding, as Foundation objects (order and escaping aside).
    static func members(_ bytes: some Sequence<UInt8>) throws -> NSDictionary {
        guard let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary else {
            throw SpecError(description: "not a JSON object: \(String(decoding: Array(bytes), as: UTF8.self))")
        }
        return object
    }

    struct SpecError: Error, CustomStringConvertible { let description: String }

    /// Decodes `line` as a frame of `Message` through the frame decoder (length prefix added), checks it is a known
    /// type, and that encoding it again gives the same members.
    static func check<Message: IPCMessage>(_ line: String, as _: Message.Type) throws -> String {
        let body = Array(line.utf8)
        let length = UInt32(body.count)
        var decoder = FrameDecoder<Message>()
        decoder.append(
            [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
                + body)
        guard let frame = try decoder.next() else { throw SpecError(description: "incomplete frame: \(line)") }
        let encoded = FrameCodec.encode(frame)
        let again = try members(encoded.dropFirst(4))
        let written = try members(body)
        #expect(again == written, "\(line)\nencodes back as\n\(String(decoding: encoded.dropFirst(4), as: UTF8.self))")
        return frame.message.type
    }

    @Test func specificationIsRead() {
        #expect(Self.requests.count >= AgentRequest.Kind.allCases.count, "\(Self.requests.count) request examples")
        #expect(Self.events.count >= AgentEvent.Kind.allCases.count, "\(Self.events.count) event examples")
    }

    @Test func everyRequestExampleIsARequestOfTheModel() throws {
        var documented = Set<String>()
        for line in Self.requests {
            let type = try Self.check(line, as: AgentRequest.self)
            #expect(AgentRequest.Kind(rawValue: type) != nil, "unknown request type \(type): \(line)")
            documented.insert(type)
        }
        let missing = AgentRequest.Kind.allCases.map(\.rawValue).filter { !documented.contains($0) }
        #expect(missing.isEmpty, "AgentRequest types without an example in docs/handler-protocol.md: \(missing)")
    }

    @Test func everyEventExampleIsAnEventOfTheModel() throws {
        var documented = Set<String>()
        for line in Self.events {
            let type = try Self.check(line, as: AgentEvent.self)
            #expect(AgentEvent.Kind(rawValue: type) != nil, "unknown event type \(type): \(line)")
            documented.insert(type)
        }
        let missing = AgentEvent.Kind.allCases.map(\.rawValue).filter { !documented.contains($0) }
        #expect(missing.isEmpty, "AgentEvent types without an example in docs/handler-protocol.md: \(missing)")
    }

    /// The codec is RouseText's JSONCoding (no Foundation in the handler's libraries): every example frame is written
    /// byte for byte as Foundation's `JSONEncoder` (`.sortedKeys`) writes it, and read as `JSONDecoder` reads it.
    @Test func framesAreWhatFoundationsCodersMake() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        func compare<Message: IPCMessage>(_ line: String, _: Message.Type) throws {
            let theirs = try JSONDecoder().decode(IPCFrame<Message>.self, from: Data(line.utf8))
            var decoder = FrameDecoder<Message>()
            decoder.append(FrameCodec.encode(theirs))
            #expect(try decoder.next() == theirs, "\(line)")
            #expect(Array(FrameCodec.encode(theirs).dropFirst(4)) == Array(try encoder.encode(theirs)), "\(line)")
        }
        for line in Self.requests { try compare(line, AgentRequest.self) }
        for line in Self.events { try compare(line, AgentEvent.self) }
    }

    @Test func everyTypeHasItsHeadingOrTableRow() {
        // Each type is named in code font in the prose too, not only in an example.
        for type in AgentRequest.Kind.allCases.map(\.rawValue) + AgentEvent.Kind.allCases.map(\.rawValue) {
            #expect(Self.specification.contains("`\(type)`"), "\(type) is not described")
        }
    }

    @Test func hexFrameIsACompleteRegisterFrame() throws {
        let hex = Self.blocks("hex frame").joined(separator: " ").split(separator: " ")
        let bytes = hex.compactMap { UInt8($0, radix: 16) }
        #expect(bytes.count == hex.count && bytes.count > 4)
        var decoder = FrameDecoder<AgentRequest>()
        decoder.append(bytes)
        let frame = try #require(try decoder.next())
        #expect(frame == IPCFrame(.register(.init(handler: "phone"))))
        #expect(try decoder.next() == nil)
        #expect(FrameCodec.encode(AgentRequest.register(.init(handler: "phone"))) == bytes)
    }

    @Test func theStatedLimitsAreTheCodecs() {
        #expect(Self.specification.contains("1 ≤ N ≤ \(FrameCodec.maxFrameBytes)"))
        #expect(Self.specification.contains("`v` is `\(FrameCodec.version)`"))
    }
}
