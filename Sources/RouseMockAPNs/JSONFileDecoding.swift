import FoundationEssentials

/// Decodes a configuration file (off the hot path) and turns `DecodingError` into one precise line:
/// the JSON path of the problem and what was wrong there.
enum JSONFileDecoding {
    /// A decoding failure described in one line.
    struct Failure: Error {
        var detail: String
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> Result<T, Failure> {
        do {
            return .success(try JSONDecoder().decode(type, from: Data(bytes)))
        } catch let error as DecodingError {
            return .failure(Failure(detail: describe(error)))
        } catch {
            return .failure(Failure(detail: String(describing: error)))
        }
    }

    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = "$"
        for key in codingPath {
            if let index = key.intValue { text += "[\(index)]" } else { text += "." + key.stringValue }
        }
        return text
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(type)"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)): missing \(type) value"
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])): required key missing"
        case .dataCorrupted(let context):
            let underlying = context.underlyingError.map { " (\($0))" } ?? ""
            return "\(path(context.codingPath)): \(context.debugDescription)\(underlying)"
        @unknown default:
            return String(describing: error)
        }
    }
}

/// A coding key for error paths built by hand.
struct PathKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}
