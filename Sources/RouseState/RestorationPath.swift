/// Where a piece of preserved state lives: a restoration-identifier path such as `calls/1234/ui` or
/// `settings/editor`. Components are non-empty, without `/`, `.` or `..`, at most 255 bytes in all.
package struct RestorationPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The identifiers, outermost first.
    package let components: [String]

    /// Parses `calls/1234/ui`.
    package init(_ string: String) throws(StateError) {
        let components = string.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        try self.init(components: components)
    }

    /// A path from its identifiers.
    package init(components: [String]) throws(StateError) {
        let joined = components.joined(separator: "/")
        guard !components.isEmpty, joined.utf8.count <= 255 else {
            throw StateError(.invalidPath("1 to 255 bytes"), file: joined)
        }
        for component in components {
            guard !component.isEmpty, component != ".", component != "..", !component.contains("/") else {
                throw StateError(.invalidPath("empty, \".\" or \"..\" component"), file: joined)
            }
        }
        self.components = components
    }

    /// The enclosing path (`calls/1234` for `calls/1234/ui`); `nil` at the top level.
    package var parent: RestorationPath? {
        components.count > 1 ? RestorationPath(unchecked: Array(components.dropLast())) : nil
    }

    /// The last identifier (`ui` for `calls/1234/ui`).
    package var identifier: String { components[components.count - 1] }

    /// A path one level below this one.
    package func appending(_ identifier: String) throws(StateError) -> RestorationPath {
        try RestorationPath(components: components + [identifier])
    }

    /// Whether `self` is `other` or lies below it.
    package func isWithin(_ other: RestorationPath) -> Bool {
        components.count >= other.components.count
            && Array(components.prefix(other.components.count)) == other.components
    }

    package var description: String { components.joined(separator: "/") }

    /// Parents sort before their children.
    package static func < (lhs: RestorationPath, rhs: RestorationPath) -> Bool {
        lhs.components.lexicographicallyPrecedes(rhs.components)
    }

    private init(unchecked components: [String]) { self.components = components }
}
