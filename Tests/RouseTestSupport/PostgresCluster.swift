import Foundation
import Synchronization

/// A throwaway PostgreSQL cluster for one test: `initdb` in a temporary directory owned by an unprivileged user
/// (`postgres`, or `nobody`, through `runuser` when the tests run as root), a server on a free loopback port with
/// password authentication (SCRAM), stopped (`pg_ctl stop`) and removed when the test's scope ends, passed or failed.
/// Its processes carry the scope's tag in their environment, so the scope kills whatever a failed stop left.
///
/// Tests that need PostgreSQL fail when it cannot start: nothing is skipped.
public final class PostgresCluster: Sendable {
    /// The failure of a cluster operation, with the tool's output.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The role the tests connect as (the cluster's superuser).
    public let user = "rouse"
    /// Its password.
    public let password = "rouse-test"
    /// The server's TCP port on 127.0.0.1.
    public let port: Int
    /// The cluster's directory (data, log, password file).
    public let directory: String
    /// A file holding the password (for `passwordFile` settings).
    public let passwordFile: String
    private let bin: String
    private let owner: String?

    private var data: String { directory + "/data" }
    private var log: String { directory + "/server.log" }

    /// A libpq URL for `database` (default: the `postgres` database).
    public func url(database: String = "postgres") -> String {
        "postgresql://\(user):\(password)@127.0.0.1:\(port)/\(database)"
    }

    private init(bin: String, owner: String?, directory: String, port: Int) {
        self.bin = bin
        self.owner = owner
        self.directory = directory
        self.port = port
        passwordFile = directory + "/password"
    }

    /// Creates and starts a cluster, stopped when the running test's scope ends (the suite needs
    /// `.stopsWhatItStarts`).
    public static func start() async throws -> PostgresCluster {
        guard let scope = TestScope.current else {
            throw Failure(
                description: "PostgresCluster needs a test scope: give the suite the .stopsWhatItStarts trait")
        }
        let bin = try binaries()
        // At most `maxRunning` clusters at once in this test process: each costs an initdb and a few server
        // processes, and the suite runs its tests in parallel on small CI machines.
        await slots.acquire()
        scope.onEnd { await slots.release() }
        let owner = geteuid() == 0 ? (getpwnam("postgres") != nil ? "postgres" : "nobody") : nil
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "rouse-pg-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let started = Mutex<PostgresCluster?>(nil)
        scope.onEnd {
            if let cluster = started.withLock({ $0 }) { await cluster.stop(mode: "immediate") }
            try? FileManager.default.removeItem(atPath: directory)
        }
        let passwordFile = directory + "/password"
        try Data("rouse-test\n".utf8).write(to: URL(fileURLWithPath: passwordFile))
        if let owner {
            _ = try await ChildProcess.run("/bin/chown", ["-R", owner, directory])
        }
        var lastError = ""
        for _ in 0..<5 {
            let port = Int.random(in: 20_000..<60_000)
            let candidate = PostgresCluster(bin: bin, owner: owner, directory: directory, port: port)
            if started.withLock({ $0 }) == nil {
                try await candidate.run(
                    "initdb",
                    [
                        "-D", candidate.data, "-U", candidate.user, "--auth-local=trust", "--auth-host=scram-sha-256",
                        "--pwfile=\(passwordFile)", "--no-sync", "-E", "UTF8", "--no-instructions",
                    ])
            }
            started.withLock { $0 = candidate }
            do {
                try await candidate.startServer()
                return candidate
            } catch {
                lastError = "\(error)"
            }
        }
        throw Failure(description: "PostgreSQL did not start on a free port: \(lastError)")
    }

    /// Starts the server again after ``stop(mode:)`` (same port, same data).
    public func startServer() async throws {
        // fsync off: the tests never cut the machine's power; synchronous_commit stays on (the gateway sets it).
        let options =
            "-p \(port) -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off "
            + "-c max_connections=50 -c shared_buffers=16MB"
        try await run("pg_ctl", ["-D", data, "-l", log, "-w", "-t", "30", "-o", options, "start"])
    }

    /// Stops the server: `fast` (clients disconnected, a clean shutdown) or `immediate` (as a crash).
    public func stop(mode: String = "fast") async {
        _ = try? await run("pg_ctl", ["-D", data, "-m", mode, "-w", "-t", "30", "stop"])
    }

    /// Runs SQL through psql as the superuser; returns its output (unaligned, tuples only).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") async throws -> String {
        try await run(
            "psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url(database: database), "-c", sql])
    }

    /// Runs each statement as its own command (`psql -c … -c …`, each in its own transaction) through one session,
    /// as the superuser; returns everything psql printed, asynchronous notifications included.
    @discardableResult
    public func psqlSession(_ statements: [String], database: String = "postgres") async throws -> String {
        try await run(
            "psql",
            ["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url(database: database)]
                + statements.flatMap { ["-c", $0] })
    }

    /// The server's log so far (for failure messages).
    public var serverLog: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    @discardableResult
    private func run(_ tool: String, _ arguments: [String]) async throws -> String {
        let output =
            if let owner {
                try await ChildProcess.run("/usr/sbin/runuser", ["-u", owner, "--", bin + "/" + tool] + arguments)
            } else {
                try await ChildProcess.run(bin + "/" + tool, arguments)
            }
        guard output.status == 0 else {
            throw Failure(
                description: "\(tool) \(arguments.joined(separator: " ")): exit \(output.status): "
                    + output.stderr + output.stdout + "\n" + serverLog.suffix(2000))
        }
        return output.stdout
    }

    /// The newest installed server's binaries (Debian: /usr/lib/postgresql/<major>/bin).
    private static func binaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let majors = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap { Int($0) }
        for major in majors.sorted(by: >) {
            let bin = "\(root)/\(major)/bin"
            if FileManager.default.isExecutableFile(atPath: bin + "/initdb") { return bin }
        }
        throw Failure(
            description:
                "PostgreSQL server binaries not found under \(root): run deploy/install-deps.sh (postgresql-15)")
    }
}

/// The clusters running at once, at most ``maxRunning``; the others wait for a slot.
private let slots = ClusterSlots()

private actor ClusterSlots {
    static let maxRunning = 2
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if running < Self.maxRunning {
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
