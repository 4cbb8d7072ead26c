import RouseSystem

/// Why a sealed file, a key or a preservation archive could not be used, with the file and (for system
/// calls) the call and `errno` involved.
package struct StateError: Error, Sendable, Equatable, CustomStringConvertible {
    enum Code: Sendable, Equatable {
        case system(call: String, errno: Int32)
        case notSealedFile
        case unsupportedFormatVersion(UInt16)
        case foreignFile(name: String, kind: String)
        case truncated(expected: Int, actual: Int)
        case trailingBytes(expected: Int, actual: Int)
        case wrongKey(keyID: String)
        case authenticationFailed
        case locked(ProtectionClass)
        case wrongClass(ProtectionClass)
        case insecureKeyFile(mode: UInt32, owner: UInt32)
        case badKey(String)
        case credentialsUnavailable(String)
        case invalidName(String)
        case invalidPath(String)
        case undecodableArchive(String)
        case simulatedCrash(String)
    }

    let code: Code
    /// The file involved (a path or a sealed file's name), when there is one.
    package let file: String

    init(_ code: Code, file: String) {
        self.code = code
        self.file = file
    }

    /// A system call failed on `file`.
    static func system(_ call: String, errno: Int32, file: String) -> StateError {
        StateError(.system(call: call, errno: errno), file: file)
    }

    /// RouseSystem's failure of a call on a file, as a state error naming that file.
    init(_ error: SystemError) {
        self.init(.system(call: error.call, errno: error.errno), file: error.path ?? "")
    }

    /// Runs a call of RouseSystem's syscall layer, its `SystemError` thrown as a `StateError`.
    @discardableResult
    static func wrapping<T>(_ body: @autoclosure () throws(SystemError) -> T) throws(StateError) -> T {
        do { return try body() } catch { throw StateError(error) }
    }

    /// The system call and `errno`, when this is a system call failure.
    package var systemCall: (call: String, errno: Int32)? {
        if case .system(let call, let errno) = code { return (call, errno) }
        return nil
    }

    /// True for the failures that mean the file's content cannot be trusted (tampered, truncated, foreign,
    /// unknown format, sealed under a key we do not hold): such a file is discarded, never half-used.
    package var isIntegrityFailure: Bool {
        switch code {
        case .notSealedFile, .unsupportedFormatVersion, .foreignFile, .truncated, .trailingBytes, .wrongKey,
            .authenticationFailed, .undecodableArchive:
            return true
        default:
            return false
        }
    }

    /// True when the file is intact but its protection class key is not loaded (session locked).
    package var isLocked: Bool {
        if case .locked = code { return true }
        return false
    }

    /// A short, stable reason for logs (`tampered`, `truncated`, `foreign`, …).
    package var reason: String {
        switch code {
        case .system: "system-call-failed"
        case .notSealedFile: "not-a-sealed-file"
        case .unsupportedFormatVersion: "unsupported-format-version"
        case .foreignFile: "foreign"
        case .truncated: "truncated"
        case .trailingBytes: "trailing-bytes"
        case .wrongKey: "wrong-key"
        case .authenticationFailed: "tampered"
        case .locked: "locked"
        case .wrongClass: "wrong-class"
        case .insecureKeyFile: "insecure-key-file"
        case .badKey: "bad-key"
        case .credentialsUnavailable: "credentials-unavailable"
        case .invalidName: "invalid-name"
        case .invalidPath: "invalid-path"
        case .undecodableArchive: "undecodable-archive"
        case .simulatedCrash: "simulated-crash"
        }
    }

    package var description: String {
        switch code {
        case .system(let call, let errno):
            "\(file): \(call): \(Errno(rawValue: errno)) (errno \(errno))"
        case .notSealedFile:
            "\(file): not a sealed file (bad magic)"
        case .unsupportedFormatVersion(let version):
            "\(file): sealed-file format version \(version) is not supported"
        case .foreignFile(let name, let kind):
            "\(file): foreign file (header says name \(name), kind \(kind))"
        case .truncated(let expected, let actual):
            "\(file): truncated (\(actual) of \(expected) bytes)"
        case .trailingBytes(let expected, let actual):
            "\(file): \(actual - expected) bytes after the end of the sealed payload"
        case .wrongKey(let keyID):
            "\(file): sealed under key \(keyID), which is not loaded"
        case .authenticationFailed:
            "\(file): authentication failed (tampered, or a wrong key)"
        case .locked(let protection):
            "\(file): protection class \(protection.rawValue) is locked"
        case .wrongClass(let protection):
            "\(file): of class \(protection.rawValue), not complete-unless-open: it cannot be opened"
        case .insecureKeyFile(let mode, let owner):
            "\(file): key file must be mode 0600 and owned by us (mode \(String(mode & 0o777, radix: 8)), "
                + "owner uid \(owner))"
        case .badKey(let why):
            "\(file): bad key: \(why)"
        case .credentialsUnavailable(let why):
            "\(file): systemd credentials unavailable: \(why)"
        case .invalidName(let why):
            "\(file): invalid name: \(why)"
        case .invalidPath(let why):
            "invalid restoration path \(file): \(why)"
        case .undecodableArchive(let why):
            "\(file): undecodable archive: \(why)"
        case .simulatedCrash(let step):
            "\(file): simulated crash at \(step)"
        }
    }
}
