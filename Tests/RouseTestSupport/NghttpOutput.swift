import Foundation
/// Reading `nghttp -v` output.
public enum NghttpOutput {
    /// The MAX_CONCURRENT_STREAMS values of every SETTINGS frame the server sent (nghttp's "recv"), in order.
    public static func streamLimits(_ verbose: String) -> [Int] {
        var received = false
        var limits: [Int] = []
        for line in verbose.split(separator: "\n") {
            if line.contains(" frame <") { received = line.contains("recv SETTINGS") }
            guard received, let r = line.range(of: "[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):") else { continue }
            if let n = Int(line[r.upperBound...].prefix { $0.isNumber }) { limits.append(n) }
        }
        return limits
    }
}
