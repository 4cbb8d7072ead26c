import RouseText
import RouseWire

/// State the agent offers back at launch (the `restoration` message): the pieces a previous run of the
/// handler preserved, under the paths it preserved them at. Offered once; answer with
/// ``AgentClient/restore(_:identify:apply:)`` or ``AgentClient/refuseRestoration()``.
public struct OfferedRestoration: Sendable {
    /// Version the handler gave when it preserved (decide with it whether to accept).
    public let writerVersion: String
    /// Version of the agent that stored the archive.
    public let agentVersion: String
    /// The pieces, parents first.
    public let pieces: [(path: String, data: [UInt8])]

    /// The offer in a `restoration` message; nil when a piece is not base64.
    public init?(_ message: AgentEvent.Restoration) {
        var pieces: [(path: String, data: [UInt8])] = []
        for (path, text) in message.pieces {
            guard let data = Base64.decode(text) else { return nil }
            pieces.append((path, Array(data)))
        }
        // Parents first: a path sorts after every one of its prefixes.
        pieces.sort { $0.path.split(separator: "/").lexicographicallyPrecedes($1.path.split(separator: "/")) }
        self.pieces = pieces
        writerVersion = message.version
        agentVersion = message.agentVersion
    }
}

/// What a restore did (also reported to the agent).
public struct RestoreResult: Sendable, Equatable {
    /// Paths given back, in order.
    public var restored: [String] = []
    /// Paths whose identifier no longer matches current data: skipped, not an error.
    public var skipped: [String] = []
    /// The path whose restore failed; the rest was discarded and the handler starts clean.
    public var failedAt: String?
}

extension AgentClient {
    /// Largest encoded `preserve` frame: one frame, with room left for the version members the agent adds
    /// when it offers the same pieces back (`restoration`).
    public static let maxPreservedBytes = FrameCodec.maxFrameBytes - 1024

    /// Preserves the handler's state: restoration path (`calls/1234/ui`, `settings/editor`) → bytes, and the
    /// handler's `version` (read back at the next launch to decide whether to accept). A piece whose parent
    /// path is not preserved is dropped by the agent. Replaces what was preserved before. Answered with
    /// `preserved`, or an `error` (`badRequest`: a bad path or data; nothing is stored, the previous state
    /// stays). Throws `tooLarge` when the state does not fit in one frame.
    public func preserve(pieces: [String: [UInt8]], version: String) throws {
        let message = AgentRequest.preserve(
            .init(pieces: pieces.mapValues { Base64.encode($0) }, version: version))
        let size = FrameCodec.encode(message).count - 4
        guard size <= Self.maxPreservedBytes else {
            throw AgentClientError(
                code: "tooLarge",
                detail: "preserved state is \(size) bytes encoded (at most \(Self.maxPreservedBytes))")
        }
        try send(message)
    }

    /// Restores an offer: `identify` maps each path back to the current object it stands for (nil: it no
    /// longer exists — skipped, not an error); `apply` gives it its data. If `apply` throws, the rest is
    /// discarded and the handler should start clean. The outcome is reported to the agent.
    @discardableResult
    public func restore<Item>(
        _ offer: OfferedRestoration, identify: (String) -> Item?, apply: (Item, [UInt8]) throws -> Void
    ) throws -> RestoreResult {
        var result = RestoreResult()
        for piece in offer.pieces {
            guard let item = identify(piece.path) else {
                result.skipped.append(piece.path)
                continue
            }
            do {
                try apply(item, piece.data)
                result.restored.append(piece.path)
            } catch {
                result.failedAt = piece.path
                break
            }
        }
        try send(
            .restoreReply(
                .init(
                    accepted: true, skipped: result.skipped.isEmpty ? nil : result.skipped, failedAt: result.failedAt)))
        return result
    }

    /// Refuses the offered state (e.g. written by a version this one cannot read): it is discarded.
    public func refuseRestoration() throws {
        try send(.restoreReply(.init(accepted: false)))
    }
}
