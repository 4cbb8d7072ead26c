import RouseText

/// A body of the device REST API (`/device/v1/…`, docs/gateway.md), the third protocol two of our programs speak:
/// the agent writes the requests and reads the replies, the gateway reads the requests and writes the replies, the
/// tests do both. Each message writes itself with ``json`` (members in a fixed order, byte for byte what earlier
/// versions wrote) and is read with ``decode(_:)`` (``JSONCoding``, as Foundation's decoder reads: a missing member or one of the wrong kind
/// is an error naming its path; members this version does not know are ignored, as in channel records).
package protocol DeviceAPIMessage: Codable, Sendable, Equatable {
    /// The message as written on the wire: one JSON object, members in a fixed order, no newline.
    var json: String { get }
}

extension DeviceAPIMessage {
    /// Reads a body.
    package static func decode(_ body: some Collection<UInt8>) throws(DeviceAPIDecodingError) -> Self {
        do {
            return try JSONCoding.decode(Self.self, from: body)
        } catch let error as DecodingError {
            throw DeviceAPIDecodingError(error)
        } catch {
            throw DeviceAPIDecodingError(detail: "\(error)")
        }
    }

    /// ``json`` as bytes.
    package var bytes: [UInt8] { Array(json.utf8) }
}

/// A device-API body that is not the message it should be; ``detail`` names the JSON path at fault
/// (`$.ids[0]: expected String`, `$.topic: missing`). The gateway sends it as a 400 `badJSON`'s detail.
package struct DeviceAPIDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong, and where.
    package let detail: String

    /// An error with `detail`.
    package init(detail: String) { self.detail = detail }

    /// The fault Foundation's decoder found, with its path (`$`, `.member`, `[index]`).
    package init(_ error: DecodingError) {
        func path(_ context: DecodingError.Context) -> String {
            "$" + context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        }
        switch error {
        case .keyNotFound(let key, let context): detail = "\(path(context)).\(key.stringValue): missing"
        case .typeMismatch(let type, let context): detail = "\(path(context)): expected \(type)"
        case .valueNotFound(let type, let context): detail = "\(path(context)): expected \(type), found null"
        case .dataCorrupted(let context): detail = "\(path(context)): \(context.debugDescription)"
        @unknown default: detail = "\(error)"
        }
    }

    package var description: String { "device API body: \(detail)" }
}
