import Foundation
import RouseChildProcess

/// What the attack benchmark needs beside `HalfOpenAttackScript` and `ProcessProbe`.
enum AttackClient {
    /// The interop venv's python (with h2), created by `deploy/interop-venv.sh` if it is not there yet.
    static func venvPython(repository: String) throws -> String {
        let output = try ChildProcess.runSync(
            "/bin/bash", [repository + "/deploy/interop-venv.sh", repository + "/.build/interop-venv"])
        guard output.status == 0, let python = output.stdout.split(separator: "\n").last.map(String.init) else {
            throw Bench.Failure(
                description: "deploy/interop-venv.sh failed (exit \(output.status)): \(output.stderr.suffix(1000)); "
                    + "or pass --python with a python that has h2")
        }
        return python
    }

    /// Waits (up to `timeout`) until process `pid` holds at most `count` sockets; the number it holds then.
    static func waitForSockets(_ pid: Int32, atMost count: Int, timeout: Duration) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        var now = ProcessProbe.sockets(pid)
        while now > count, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            now = ProcessProbe.sockets(pid)
        }
        return now
    }
}
