/// An invalid session configuration: an option or a mode that the category does not accept.
public struct ActivationError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// An option the category does not accept (e.g. `duckOthers` with `record`).
        public static let incompatibleOption = Code("incompatible-option")
        /// A mode the category does not accept (e.g. `voiceChat` with `playback`).
        public static let incompatibleMode = Code("incompatible-mode")
        public var description: String { name }
    }

    /// What was wrong.
    public let code: Code
    /// The category and the offending option or mode.
    public let context: String

    init(_ code: Code, _ context: String) {
        self.code = code
        self.context = context
    }

    public var description: String { "activation \(code): \(context)" }
}
