import FoundationEssentials
import RouseAPNs
import RouseText

/// A push's outcome as the API answers it: the same fields, names and values as a `rouse send --json` line, so a
/// script reads either the same way.
package struct PushAPIOutcome: Sendable, Equatable {
    /// `delivered`, `rejected` or `failed`.
    package enum Kind: String, Sendable, Equatable, CaseIterable {
        case delivered, rejected, failed
    }
    /// The device token.
    package var token: String
    /// The push's `apns-id` (APNs' answer when delivered).
    package var apnsID: String?
    /// Which outcome.
    package var kind: Kind
    /// Rejected: the exact APNs reason string.
    package var reason: String?
    /// Rejected with 410: APNs' `timestamp` (UNIX ms).
    package var timestamp: Int64?
    /// Rejected by the pre-flight (nothing sent).
    package var preflight: Bool
    /// Failed: `kind: detail` of the transport error.
    package var error: String?
    /// Failed: `no` or `unknown`.
    package var processed: String?
    /// Requests put on the wire.
    package var attempts: Int
    /// Resends.
    package var retries: Int
    /// Submission to outcome, in milliseconds.
    package var latencyMs: Double

    /// An outcome.
    package init(
        token: String, apnsID: String?, kind: Kind, reason: String? = nil, timestamp: Int64? = nil,
        preflight: Bool = false, error: String? = nil, processed: String? = nil, attempts: Int, retries: Int,
        latencyMs: Double
    ) {
        self.token = token
        self.apnsID = apnsID
        self.kind = kind
        self.reason = reason
        self.timestamp = timestamp
        self.preflight = preflight
        self.error = error
        self.processed = processed
        self.attempts = attempts
        self.retries = retries
        self.latencyMs = latencyMs
    }

    /// One JSON object, byte for byte the shape of `rouse send --json`'s per-push line.
    package var json: String {
        var s = "{\"token\":" + JSONText.quoted(token)
        if let apnsID { s += ",\"apnsID\":" + JSONText.quoted(apnsID) }
        s += ",\"outcome\":\"\(kind.rawValue)\""
        switch kind {
        case .delivered: break
        case .rejected:
            s += ",\"reason\":" + JSONText.quoted(reason ?? "")
            if let timestamp { s += ",\"timestamp\":\(timestamp)" }
            if preflight { s += ",\"preflight\":true" }
        case .failed:
            s += ",\"error\":" + JSONText.quoted(error ?? "") + ",\"processed\":\"\(processed ?? "unknown")\""
        }
        s += ",\"attempts\":\(attempts),\"retries\":\(retries)"
        s += ",\"latencyMs\":" + Self.threeDecimals(latencyMs) + "}"
        return s
    }

    /// `value` with three decimals, as `%.3f` prints a latency (rounded to the microsecond, never negative), without
    /// Foundation's `String(format:)`: that was a tenth of rouse-pushd's CPU per push under load.
    package static func threeDecimals(_ value: Double) -> String {
        let clamped = value.isFinite ? min(max(value, 0), 1e12) : 0
        let thousandths = Int64((clamped * 1000).rounded())
        let fraction = thousandths % 1000
        return "\(thousandths / 1000)." + (fraction < 10 ? "00" : fraction < 100 ? "0" : "") + "\(fraction)"
    }

    /// Reads an outcome object (as `json` writes it).
    package static func parse(_ object: JSONValue) -> PushAPIOutcome? {
        guard let token = object["token"]?.string, let kind = object["outcome"]?.string.flatMap(Kind.init(rawValue:))
        else { return nil }
        return PushAPIOutcome(
            token: token, apnsID: object["apnsID"]?.string, kind: kind, reason: object["reason"]?.string,
            timestamp: object["timestamp"]?.int64, preflight: object["preflight"]?.bool ?? false,
            error: object["error"]?.string, processed: object["processed"]?.string,
            attempts: object["attempts"]?.int ?? 0, retries: object["retries"]?.int ?? 0,
            latencyMs: object["latencyMs"]?.double ?? 0)
    }

    /// The HTTP status of a single-push answer: 200 delivered, 422 rejected, 502 failed (the body tells which and
    /// why in every case), so a client that sees only the status (Kamailio's `http_client`) still knows.
    package var httpStatus: Int {
        switch kind {
        case .delivered: 200
        case .rejected: 422
        case .failed: 502
        }
    }
}
