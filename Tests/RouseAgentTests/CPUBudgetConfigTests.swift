import Foundation
import RouseAgent
import RouseAgentCore
import Testing

/// `[limits] background-cpu-percent` and `background-cpu-window-seconds` (issue 29, throttling): defaults, values
/// and bounds.
@Suite("Handler file: the background CPU budget's keys")
struct CPUBudgetConfigTests {
    static let head = "topic = \"a\"\ncommand = [\"/x\"]\n[limits]\n"

    @Test func theKeysParseWithDefaults() throws {
        let plain = try HandlerConfiguration.parse(Self.head, name: "example", file: "example.toml")
        #expect(plain.rules.backgroundCPU == CPUBudget(percent: 50, window: .seconds(30)))
        let set = try HandlerConfiguration.parse(
            Self.head + "background-cpu-percent = 10\nbackground-cpu-window-seconds = 2.5", name: "example",
            file: "example.toml")
        #expect(set.rules.backgroundCPU == CPUBudget(percent: 10, window: .milliseconds(2_500)))
        let off = try HandlerConfiguration.parse(
            Self.head + "background-cpu-percent = 0", name: "example", file: "example.toml")
        #expect(off.rules.backgroundCPU.percent == 0)
    }

    @Test func outOfBoundsValuesAreRejected() {
        let cores = max(1, ProcessInfo.processInfo.activeProcessorCount)
        let cases = [
            (
                "background-cpu-percent = \(100 * cores + 1)",
                "limits.background-cpu-percent must be a number from 0 to \(100 * cores)"
            ),
            ("background-cpu-window-seconds = 0.5", "limits.background-cpu-window-seconds must be at least 1"),
        ]
        for (line, expected) in cases {
            do {
                _ = try HandlerConfiguration.parse(Self.head + line, name: "example", file: "example.toml")
                Issue.record("parsed \(line)")
            } catch {
                #expect(error.description == "configuration: example.toml: " + expected)
            }
        }
    }
}
