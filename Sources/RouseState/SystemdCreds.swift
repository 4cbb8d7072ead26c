import FoundationEssentials
import RouseText

/// Wraps and unwraps a data key with `systemd-creds` (AES-256-GCM under the host key
/// `/var/lib/systemd/credential.secret` and/or a TPM2 key; the credential name is embedded and checked).
struct SystemdCreds: Sendable {
    /// Path of the `systemd-creds` program.
    let program: String
    /// `--with-key=` mode: `auto` (host+TPM2 when a TPM2 is present, else host), `host`, `tpm2`, `host+tpm2`.
    let withKey: String

    /// Why `systemd-creds` cannot be used here, or `nil` when a probe encryption worked.
    func unavailableReason() -> String? {
        guard FileManager.default.isExecutableFile(atPath: program) else {
            return "\(program) is not installed (Debian package systemd)"
        }
        do {
            let wrapped = try encrypt(Array("probe".utf8), name: "rouse-probe")
            guard try decrypt(wrapped, name: "rouse-probe") == Array("probe".utf8) else {
                return "systemd-creds did not round-trip a probe"
            }
            return nil
        } catch {
            return error.description
        }
    }

    /// The credential text for `plaintext` under the credential name `name`.
    func encrypt(_ plaintext: [UInt8], name: String) throws(StateError) -> [UInt8] {
        try run(["encrypt", "--name=\(name)", "--with-key=\(withKey)", "-", "-"], input: plaintext, name: name)
    }

    /// The plaintext of a credential; fails when the name does not match the embedded one.
    func decrypt(_ credential: [UInt8], name: String) throws(StateError) -> [UInt8] {
        try run(["decrypt", "--name=\(name)", "-", "-"], input: credential, name: name)
    }

    private func run(_ arguments: [String], input: [UInt8], name: String) throws(StateError) -> [UInt8] {
        let result: (status: Int32, output: [UInt8], errors: [UInt8])
        do {
            result = try ShortChild.run(program, arguments, input: input)
        } catch {
            throw StateError(.credentialsUnavailable("cannot run \(program): \(error)"), file: name)
        }
        guard result.status == 0 else {
            let message = String(decoding: result.errors, as: UTF8.self)
                .split(separator: "\n").filter { !$0.includes("not located on encrypted media") }
                .joined(separator: "; ")
            throw StateError(
                .credentialsUnavailable("systemd-creds \(arguments[0]) exited \(result.status): \(message)"),
                file: name)
        }
        return result.output
    }
}
