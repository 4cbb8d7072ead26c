import Foundation

/// The suite run this test process belongs to. `deploy/test.sh` names each run (`ROUSE_TEST_RUN`), and the
/// fixtures put that name into what can outlive the test process — network namespaces — so that the check at the
/// end of the run finds exactly this run's leftovers, not those of a run from another checkout on the machine.
public enum TestRun {
    /// The run's name (`adhoc` when the tests were started without `deploy/test.sh`).
    public static let name: String = ProcessInfo.processInfo.environment["ROUSE_TEST_RUN"] ?? "adhoc"
}
