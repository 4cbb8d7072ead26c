/// A number of seconds given on a command line or in a configuration, checked before it becomes a `Duration` (a
/// conversion of `1e300`, `inf` or `nan` would trap): finite, within `range`, to the millisecond.
package enum SecondsOption {
    /// Why a number of seconds was refused: names the option and the accepted range.
    package struct Invalid: Error, CustomStringConvertible, Sendable {
        package let description: String
    }

    /// Largest number of seconds any option takes: a year.
    package static let maximum = 366.0 * 86400

    /// `seconds` as a `Duration`, or ``Invalid`` naming `option` when it is not finite or not within `range`.
    package static func duration(
        _ seconds: Double, option: String, range: ClosedRange<Double> = 0.001...maximum
    ) throws(Invalid) -> Duration {
        guard seconds.isFinite, range.contains(seconds) else {
            throw Invalid(
                description:
                    "\(option) must be a number of seconds from \(range.lowerBound) to \(Int(range.upperBound)) (got \(seconds))"
            )
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }
}
