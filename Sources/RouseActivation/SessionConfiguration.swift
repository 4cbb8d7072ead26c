/// A validated category + mode + options triple. Options are normalized: `ambient` implies
/// `mixWithOthers`, and so do `duckOthers` and `interruptSpokenAudioAndMixWithOthers`.
///
/// As on iOS, options are not sticky: `changingCategory(to:options:)` takes the options again (the
/// caller re-asserts them), keeping the mode only when the new category accepts it.
public struct SessionConfiguration: Sendable, Hashable, Codable {
    /// The category.
    public let category: SessionCategory
    /// The mode.
    public let mode: SessionMode
    /// The effective (normalized) options.
    public let options: SessionOptions

    /// Validates and normalizes a configuration.
    /// - Throws: `ActivationError.incompatibleOption` or `.incompatibleMode`.
    public init(category: SessionCategory, mode: SessionMode = .default, options: SessionOptions = [])
        throws(ActivationError)
    {
        for option in options.members where !option.validCategories.contains(category) {
            throw ActivationError(.incompatibleOption, "\(option.rawValue) with \(category.rawValue)")
        }
        guard mode.validCategories.contains(category) else {
            throw ActivationError(.incompatibleMode, "\(mode.rawValue) with \(category.rawValue)")
        }
        var effective = options
        if category == .ambient || !options.isDisjoint(with: [.duckOthers, .interruptSpokenAudioAndMixWithOthers]) {
            effective.insert(.mixWithOthers)
        }
        self.category = category
        self.mode = mode
        self.options = effective
    }

    /// The configuration after a category change: `options` replace the old ones (they are not carried
    /// over), and the mode is kept if the new category accepts it, else reset to `default`.
    public func changingCategory(to category: SessionCategory, options: SessionOptions = []) throws(ActivationError)
        -> SessionConfiguration
    {
        let mode = mode.validCategories.contains(category) ? mode : .default
        return try SessionConfiguration(category: category, mode: mode, options: options)
    }

    /// Whether the session mixes with others (after normalization).
    public var isMixable: Bool { options.contains(.mixWithOthers) }

    /// The configuration the call path uses when the handler configured none: `playAndRecord` +
    /// `voiceChat`, non-mixable (CallKit's recommendation).
    public static let voiceCall = SessionConfiguration(valid: .playAndRecord, mode: .voiceChat, options: [])

    private init(valid category: SessionCategory, mode: SessionMode, options: SessionOptions) {
        self.category = category
        self.mode = mode
        self.options = options
    }

    private enum CodingKeys: String, CodingKey { case category, mode, options }

    /// Decodes and validates (a JSON peer is input: invalid combinations throw, never crash).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            category: container.decode(SessionCategory.self, forKey: .category),
            mode: container.decodeIfPresent(SessionMode.self, forKey: .mode) ?? .default,
            options: container.decodeIfPresent(SessionOptions.self, forKey: .options) ?? [])
    }
}
