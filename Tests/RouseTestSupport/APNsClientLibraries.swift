import Foundation

/// APNs client libraries nobody here wrote (aioapns, kalyke-apns, pyapns-client and apns2-up from PyPI), driven through
/// `Tests/Interop/apns_client.py` in a virtual environment that `deploy/interop-venv.sh` creates with the pinned
/// versions of `Tests/Interop/requirements.txt`. A library that cannot be installed fails the test with the reason.
public enum APNsClientLibraries {
    /// The libraries checked, by the name the driver takes.
    public enum Library: String, Sendable, CaseIterable, CustomStringConvertible {
        case aioapns
        case kalyke
        /// pyapns-client: httpx, PyJWT with a fractional `iat`; token auth only.
        case pyapnsClient = "pyapns_client"
        /// apns2-up (a maintained PyAPNs2 fork): hyper-up, PyJWT with a fractional `iat`.
        case apns2
        public var description: String { rawValue }

        /// Whether the library can authenticate with a client certificate (kalyke-apns: VoIP pushes only).
        public var supportsCertificate: Bool { self != .pyapnsClient }

        /// Whether the library hands its caller the HTTP status of a 200 (only aioapns does).
        public var surfacesSuccessStatus: Bool { self == .aioapns }

        /// Whether the library hands its caller the HTTP status of a rejection.
        public var surfacesRejectionStatus: Bool { self == .aioapns || self == .pyapnsClient }

        /// Whether the library hands its caller the `apns-id` of a 200.
        public var surfacesAPNsID: Bool { self == .aioapns || self == .kalyke }

        /// Whether the library can set `apns-id`.
        public var setsAPNsID: Bool { self != .apns2 }
    }

    /// How the push authenticates.
    public enum Auth: Sendable {
        /// ES256 provider token from a `.p8` key.
        case token(keyFile: String, keyID: String, teamID: String)
        /// TLS client certificate and key (PEM).
        case certificate(certificateFile: String, keyFile: String)
    }

    /// What the library surfaced for one push (its own result or exception, as the driver reports it).
    public struct Outcome: Sendable, CustomStringConvertible {
        public let library: Library
        /// The driver's JSON line.
        public let line: String
        /// The driver's exit code: 0 accepted, 1 rejected, 2 other error, 3 unsupported by the library.
        public let exitCode: Int32
        public let ok: Bool
        public let status: Int?
        public let reason: String?
        public let timestamp: Int64?
        public let apnsID: String?
        public let unsupported: String?

        public var description: String { "exit \(exitCode): \(line)" }

        /// Accepted, with `status` where the library exposes one (only aioapns surfaces the status of a 200).
        public func accepted(status expected: Int) -> Bool {
            ok && exitCode == 0 && status == (library.surfacesSuccessStatus ? expected : nil)
        }

        /// Rejected with `reason`, and `status` where the library exposes one.
        public func rejected(_ expected: String, status expectedStatus: Int) -> Bool {
            !ok && exitCode == 1 && reason == expected
                && status == (library.surfacesRejectionStatus ? expectedStatus : nil)
        }
    }

    /// The venv's python, installing the pinned libraries first (once per test process).
    public static func python() async throws -> String {
        try await installation.value
    }

    private static let installation = Task<String, any Error> {
        let venv = Repository.root + "/.build/interop-venv"
        let out = try await ChildProcess.run(
            "/bin/bash", [Repository.root + "/deploy/interop-venv.sh", venv], timeout: .seconds(600))
        guard out.status == 0 else {
            throw ChildProcess.Failure(
                description: "the APNs client libraries could not be installed (deploy/interop-venv.sh exit "
                    + "\(out.status)): \(out.stderr.suffix(2000))")
        }
        return venv + "/bin/python"
    }

    /// Sends one push with `library` to `host:port` trusting `caFile`, and returns what the library surfaced.
    public static func push(
        library: Library, host: String = "localhost", port: UInt16, caFile: String = Repository.cert("ca.pem"),
        auth: Auth, topic: String, deviceToken: String, pushType: String = "voip",
        payload: String = #"{"aps":{},"caller":"Alice"}"#, priority: Int? = nil, apnsID: String? = nil,
        timeToLive: Int? = nil
    ) async throws -> Outcome {
        let python = try await python()
        var arguments = [
            Repository.root + "/Tests/Interop/apns_client.py", "--library", library.rawValue, "--host", host,
            "--port", String(port), "--ca", caFile, "--topic", topic, "--device-token", deviceToken,
            "--push-type", pushType, "--payload", payload,
        ]
        switch auth {
        case .token(let keyFile, let keyID, let teamID):
            arguments += ["--auth", "token", "--key-file", keyFile, "--key-id", keyID, "--team-id", teamID]
        case .certificate(let certificateFile, let keyFile):
            arguments += ["--auth", "cert", "--cert-file", certificateFile, "--key-file", keyFile]
        }
        if let priority { arguments += ["--priority", String(priority)] }
        if let apnsID { arguments += ["--apns-id", apnsID] }
        if let timeToLive { arguments += ["--time-to-live", String(timeToLive)] }
        let out = try await ChildProcess.run(python, arguments, timeout: .seconds(60))
        guard let line = out.stdout.split(separator: "\n").last.map(String.init),
            let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
        else {
            throw ChildProcess.Failure(
                description: "\(library) driver printed no JSON line (exit \(out.status)): \(out.stdout) \(out.stderr)")
        }
        return Outcome(
            library: library, line: line, exitCode: out.status, ok: object["ok"] as? Bool ?? false,
            status: (object["status"] as? NSNumber)?.intValue, reason: object["reason"] as? String,
            timestamp: (object["timestamp"] as? NSNumber)?.int64Value, apnsID: object["apns_id"] as? String,
            unsupported: object["unsupported"] as? String)
    }
}
