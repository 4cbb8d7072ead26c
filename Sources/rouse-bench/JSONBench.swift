import Foundation
import RouseText
import RouseWire

/// `rouse-bench json [--frames N] [--json]`: the agent IPC's and the device channel's JSON, coded by RouseText's
/// JSONCoding (what the handler and the agent use since 2026-11-29) and by Foundation's JSONEncoder/JSONDecoder (what
/// they used before), on the same messages in the same run: a VoIP push event as the agent writes it, a reportCall
/// request as a handler writes it, and a push channel record. Each figure is the median of 5 rounds of N codings.
enum JSONBench {
    struct Row: Codable {
        var message: String
        var operation: String
        var rouseMicroseconds: Double
        var foundationMicroseconds: Double
        var ratio: Double
    }

    static func run(arguments: [String]) async throws {
        var frames = 20_000
        var json = false
        var index = 0
        while index < arguments.count {
            switch arguments[index] {
            case "--frames":
                index += 1
                guard index < arguments.count, let value = Int(arguments[index]), value > 0 else {
                    throw Bench.Failure(description: "--frames needs a positive number")
                }
                frames = value
            case "--json": json = true
            default: throw Bench.Failure(description: "unknown option \(arguments[index]) (--frames N, --json)")
            }
            index += 1
        }
        let push = IPCFrame(
            AgentEvent.push(
                .init(
                    pushID: "1842", pushType: "voip", topic: "com.example.phone.voip",
                    payload: Base64.encode(Array(#"{"caller":"alice@example.org","call":"a84f"}"#.utf8)),
                    apnsID: "8E7B6C2A-1B0C-4D3E-9F8A-7B6C5D4E3F2A", mustReport: true, seconds: 5)))
        let report = IPCFrame(
            AgentRequest.reportCall(
                .init(pushID: "1842", callID: "call-a84f", category: "playAndRecord", mode: "voiceChat")))
        let record = ChannelRecord.push(
            .init(
                id: "1842", token: "5f1c0a9e8d7b6a5f4e3d2c1b0a9f8e7d", topic: "com.example.phone.voip",
                pushType: "voip", priority: 10, apnsID: "8E7B6C2A-1B0C-4D3E-9F8A-7B6C5D4E3F2A", collapseID: nil,
                expiration: 0, receivedAt: 1_764_380_000_000,
                payload: Base64.encode(Array(#"{"aps":{},"caller":"alice"}"#.utf8))))
        var rows: [Row] = []
        rows += try measure("push event (IPC)", push, frames: frames)
        rows += try measure("reportCall request (IPC)", report, frames: frames)
        rows += try measure("push record (channel)", record, frames: frames)
        for row in rows {
            if json {
                let line = try JSONEncoder().encode(row)
                print(String(decoding: line, as: UTF8.self))
            } else {
                print(
                    "\(row.message), \(row.operation): JSONCoding \(fixed(row.rouseMicroseconds)) µs, Foundation "
                        + "\(fixed(row.foundationMicroseconds)) µs, ratio \(fixed(row.ratio))")
            }
        }
    }

    static func fixed(_ value: Double) -> String { NumberText.fixed(value, digits: 2) }

    /// Encode and decode `value` N times each way, 5 rounds; medians in microseconds per coding.
    static func measure<T: Codable & Equatable>(_ name: String, _ value: T, frames: Int) throws -> [Row] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = try JSONCoding.encode(value)
        let data = Data(bytes)
        guard Array(try encoder.encode(value)) == bytes else {
            throw Bench.Failure(description: "\(name): the two encoders differ")
        }
        guard try JSONCoding.decode(T.self, from: bytes) == value, try JSONDecoder().decode(T.self, from: data) == value
        else { throw Bench.Failure(description: "\(name): a decoder does not read back the value") }
        func median(_ body: () throws -> Void) rethrows -> Double {
            var rounds: [Double] = []
            for _ in 0..<5 {
                let start = ContinuousClock.now
                for _ in 0..<frames { try body() }
                let elapsed = start.duration(to: .now)
                rounds.append(
                    Double(elapsed.components.attoseconds) / 1e12 / Double(frames)
                        + Double(elapsed.components.seconds) * 1e6 / Double(frames))
            }
            return rounds.sorted()[2]
        }
        var sink = 0
        let ourEncode = try median { sink &+= try JSONCoding.encode(value).count }
        let theirEncode = try median { sink &+= try encoder.encode(value).count }
        let ourDecode = try median { sink &+= try JSONCoding.decode(T.self, from: bytes) == value ? 1 : 0 }
        let theirDecode = try median { sink &+= try JSONDecoder().decode(T.self, from: data) == value ? 1 : 0 }
        guard sink > 0 else { throw Bench.Failure(description: "nothing coded") }
        return [
            Row(
                message: name, operation: "encode", rouseMicroseconds: ourEncode, foundationMicroseconds: theirEncode,
                ratio: ourEncode / theirEncode),
            Row(
                message: name, operation: "decode", rouseMicroseconds: ourDecode, foundationMicroseconds: theirDecode,
                ratio: ourDecode / theirDecode),
        ]
    }
}
