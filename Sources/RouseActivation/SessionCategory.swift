/// What a session does with audio, as `AVAudioSession.Category`: it decides whether the session mixes with
/// others by default and which options and modes it accepts.
public enum SessionCategory: String, Sendable, Hashable, Codable, CaseIterable {
    /// Non-primary sound (game effects); always mixes with others (`mixWithOthers` implied).
    case ambient
    /// Non-primary sound that does not mix: activating it interrupts other non-mixable sessions.
    case soloAmbient
    /// Primary playback (music, podcasts); non-mixable unless a mixing option is set.
    case playback
    /// Capture only; never mixable.
    case record
    /// Capture and playback (the VoIP category); non-mixable unless a mixing option is set.
    case playAndRecord

    /// Whether a session of this category keeps the holder busy in the background (iOS's audio background
    /// mode): a handler holding an active session of such a category is not suspended.
    public var runsInBackground: Bool {
        switch self {
        case .ambient, .soloAmbient: false
        case .playback, .record, .playAndRecord: true
        }
    }
}

/// A specialization of a category, as `AVAudioSession.Mode`. Only `spokenAudio` changes arbitration (the
/// `interruptSpokenAudioAndMixWithOthers` option pauses such sessions); the others are carried for the
/// holder and the hook.
public enum SessionMode: String, Sendable, Hashable, Codable, CaseIterable {
    /// No specialization; valid with every category.
    case `default`
    /// Two-way voice (VoIP); `playAndRecord` only.
    case voiceChat
    /// Two-way video; `playAndRecord` or `record`.
    case videoChat
    /// Game voice chat; `playAndRecord` only.
    case gameChat
    /// Video capture; `playAndRecord` or `record`.
    case videoRecording
    /// Minimal signal processing; `playAndRecord`, `record` or `playback`.
    case measurement
    /// Film soundtrack; `playback` only.
    case moviePlayback
    /// Continuous speech (podcasts, audiobooks); `playback` only.
    case spokenAudio
    /// Short spoken prompts; `playback` or `playAndRecord`.
    case voicePrompt

    /// The categories this mode may be combined with.
    public var validCategories: Set<SessionCategory> {
        switch self {
        case .default: Set(SessionCategory.allCases)
        case .voiceChat, .gameChat: [.playAndRecord]
        case .videoChat, .videoRecording: [.playAndRecord, .record]
        case .measurement: [.playAndRecord, .record, .playback]
        case .moviePlayback, .spokenAudio: [.playback]
        case .voicePrompt: [.playback, .playAndRecord]
        }
    }
}

/// One category option, as `AVAudioSession.CategoryOptions`.
public enum SessionOption: String, Sendable, Hashable, Codable, CaseIterable {
    /// Mix with other sessions instead of interrupting them.
    case mixWithOthers
    /// Lower the volume of lower-priority sessions while this one is active; implies `mixWithOthers`.
    case duckOthers
    /// Interrupt spoken-audio sessions and mix with the rest; implies `mixWithOthers`.
    case interruptSpokenAudioAndMixWithOthers

    /// The categories this option may be set with (`ambient` accepts `mixWithOthers`, which it implies).
    public var validCategories: Set<SessionCategory> {
        switch self {
        case .mixWithOthers: [.ambient, .playback, .playAndRecord]
        case .duckOthers, .interruptSpokenAudioAndMixWithOthers: [.playback, .playAndRecord]
        }
    }
}

/// A set of category options.
public struct SessionOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8

    /// Creates a set from its bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Creates a set holding one option.
    public init(_ option: SessionOption) {
        switch option {
        case .mixWithOthers: self = .mixWithOthers
        case .duckOthers: self = .duckOthers
        case .interruptSpokenAudioAndMixWithOthers: self = .interruptSpokenAudioAndMixWithOthers
        }
    }

    /// See `SessionOption.mixWithOthers`.
    public static let mixWithOthers = SessionOptions(rawValue: 1 << 0)
    /// See `SessionOption.duckOthers`.
    public static let duckOthers = SessionOptions(rawValue: 1 << 1)
    /// See `SessionOption.interruptSpokenAudioAndMixWithOthers`.
    public static let interruptSpokenAudioAndMixWithOthers = SessionOptions(rawValue: 1 << 2)

    /// The options in the set, in declaration order.
    public var members: [SessionOption] {
        SessionOption.allCases.filter { contains(SessionOptions($0)) }
    }
}

extension SessionOptions: Codable {
    /// Decodes a JSON array of option names.
    public init(from decoder: any Decoder) throws {
        let names = try decoder.singleValueContainer().decode([SessionOption].self)
        self = SessionOptions(names.map(SessionOptions.init))
    }

    /// Encodes as a JSON array of option names.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(members)
    }
}
