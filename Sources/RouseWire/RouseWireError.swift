/// A device-channel line that is not a record this version can read. Equal when it names the same fault
/// (the wording of ``detail`` aside).
package struct ChannelRecordError: Error, Sendable, Equatable, CustomStringConvertible {
    private enum Code: Sendable, Equatable {
        case notJSON, notAnObject, noType, missingMember, badMember
    }

    private let code: Code
    /// The record's `type`, when the fault is in a member of a known record.
    package let record: String?
    /// The member at fault.
    package let member: String?
    /// What was wrong.
    package let detail: String

    private init(_ code: Code, record: String? = nil, member: String? = nil, detail: String) {
        self.code = code
        self.record = record
        self.member = member
        self.detail = detail
    }

    /// The line is not JSON.
    package static func notJSON(_ detail: String) -> Self {
        Self(.notJSON, detail: "not JSON: " + detail.prefix(200))
    }
    /// The line is JSON, but not an object.
    package static let notAnObject = Self(.notAnObject, detail: "not a JSON object")
    /// The object has no string `type`.
    package static let noType = Self(.noType, detail: "no string member type")
    /// A member the record needs is absent.
    package static func missingMember(_ member: String, in record: String) -> Self {
        Self(.missingMember, record: record, member: member, detail: "\(record) record: no member \(member)")
    }
    /// A member holds the wrong kind of value (`expected`: "a string", "an integer", …).
    package static func badMember(_ member: String, in record: String, expected: String) -> Self {
        Self(
            .badMember, record: record, member: member,
            detail: "\(record) record: member \(member) is not \(expected)")
    }

    /// The fault Foundation's decoder found, in our words (`record`: the `type`, once read).
    init(decoding error: DecodingError, record: String?) {
        func member(_ context: DecodingError.Context) -> String {
            context.codingPath.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, _):
            self = record.map { .missingMember(key.stringValue, in: $0) } ?? .noType
        case .typeMismatch(let type, let context), .valueNotFound(let type, let context):
            if context.codingPath.isEmpty {
                self = .notAnObject
            } else {
                self = record.map { .badMember(member(context), in: $0, expected: Self.describe(type)) } ?? .noType
            }
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                let underlying = context.underlyingError.map { "\($0)" } ?? context.debugDescription
                self = .notJSON(underlying)
            } else {
                self = record.map { .badMember(member(context), in: $0, expected: "valid") } ?? .noType
            }
        @unknown default:
            self = .notJSON("\(error)")
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        if type == String.self { return "a string" }
        if type == Int.self || type == Int64.self { return "an integer" }
        if type == UInt64.self { return "an integer ≥ 0" }
        return "a \(type)"
    }

    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.code == rhs.code && lhs.record == rhs.record && lhs.member == rhs.member
    }

    package var description: String { "channel record: \(detail)" }
}

/// Bytes from an IPC peer that are not a valid frame.
package struct FrameError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Short code sent back in the `error` frame: `malformedFrame`, `unsupportedVersion`.
    package let code: String
    /// What was wrong.
    package let detail: String

    /// The declared length exceeds ``FrameCodec/maxFrameBytes`` (or is zero).
    package static func badLength(_ length: Int) -> FrameError {
        FrameError(code: "malformedFrame", detail: "frame length \(length) not in 1...\(FrameCodec.maxFrameBytes)")
    }
    /// The body is not a JSON object with `v` and `type`, or a member of a known `type` has the wrong kind of
    /// value.
    package static func badJSON(_ detail: String) -> FrameError {
        FrameError(code: "malformedFrame", detail: "frame body is not a protocol message: \(detail)")
    }
    /// The version is not one this side speaks.
    package static func badVersion(_ version: Int) -> FrameError {
        FrameError(
            code: "unsupportedVersion", detail: "protocol version \(version) (supported: \(FrameCodec.version))")
    }

    package var description: String { "\(code): \(detail)" }
}
