import Foundation
import RouseSystem
import Testing

@testable import RouseState

@Suite("Key handling")
struct KeyStoreTests {
    static let systemdCreds = "/usr/bin/systemd-creds"

    @Test("a new key file is 32 bytes, mode 0600; it is loaded again, not replaced")
    func keyFile() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let first = try fixture.keyStore().load(preference: .keyFile)
        #expect(first.backend == .keyFile)
        let path = fixture.keyDirectory + "/state.key"
        let status = try #require(try Sys.status(path))
        #expect(status.mode & 0o777 == 0o600)
        #expect(status.size == 32)
        let second = try fixture.keyStore().load(preference: .auto)
        #expect(second.current.id == first.current.id)
        #expect(second.backend == .keyFile)
        #expect(
            fixture.lines().contains { $0.hasPrefix("state key backend: key file (an existing key keeps its backend)") }
        )
    }

    @Test("a key file readable by group or others is refused with a clear error", arguments: [0o640, 0o604, 0o644])
    func looseKeyFile(mode: Int) throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        _ = try fixture.keyStore().load(preference: .keyFile)
        let path = fixture.keyDirectory + "/state.key"
        #expect(chmod(path, mode_t(mode)) == 0)
        let error = #expect(throws: StateError.self) { try fixture.keyStore().load(preference: .keyFile) }
        #expect(error?.reason == "insecure-key-file")
        #expect(error?.description.contains("must be mode 0600") == true)
        #expect(error?.description.contains(String(mode, radix: 8)) == true)
    }

    @Test("a key file of the wrong size is refused")
    func shortKeyFile() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        try FileManager.default.createDirectory(atPath: fixture.keyDirectory, withIntermediateDirectories: true)
        let path = fixture.keyDirectory + "/state.key"
        #expect(
            FileManager.default.createFile(
                atPath: path, contents: Data([1, 2, 3]), attributes: [.posixPermissions: 0o600]))
        let error = #expect(throws: StateError.self) { try fixture.keyStore().load(preference: .keyFile) }
        #expect(error?.reason == "bad-key")
    }

    @Test("auto without systemd-creds falls back to a key file, and logs why")
    func fallback() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let loaded = try fixture.keyStore(systemdCreds: "/nonexistent/systemd-creds").load(preference: .auto)
        #expect(loaded.backend == .keyFile)
        let line = fixture.lines().first {
            $0.hasPrefix("state key backend: key file (systemd credentials unavailable)")
        }
        #expect(line?.contains("reason=/nonexistent/systemd-creds is not installed") == true)
    }

    @Test("requiring systemd credentials without systemd-creds fails with the reason")
    func requiredButMissing() throws {
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let error = #expect(throws: StateError.self) {
            try fixture.keyStore(systemdCreds: "/nonexistent/systemd-creds").load(preference: .systemdCredential)
        }
        #expect(error?.reason == "credentials-unavailable")
    }

    /// On this machine (Debian 12, systemd 252) `systemd-creds` works in host-key mode without systemd as
    /// PID 1; if it does not, this test fails with the reason instead of passing on a key file.
    @Test("systemd-creds: auto picks it, the key is wrapped (not in clear) and loads again")
    func systemdCredential() throws {
        try requireSystemdCreds()
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let first = try fixture.keyStore(systemdCreds: Self.systemdCreds).load(preference: .auto)
        #expect(first.backend == .systemdCredential)
        #expect(
            fixture.lines().contains { $0.hasPrefix("state key backend: systemd credential (systemd-creds works)") })
        let wrapped = try #require(try Sys.readFile(fixture.keyDirectory + "/state-key.cred"))
        #expect(!wrapped.contains(subsequence: first.current.bytes))
        let again = try fixture.keyStore(systemdCreds: Self.systemdCreds).load(preference: .systemdCredential)
        #expect(again.current.id == first.current.id)
        #expect(again.backend == .systemdCredential)
    }

    @Test("systemd-creds: a credential renamed to another name is refused (the name is embedded)")
    func systemdCredentialName() throws {
        try requireSystemdCreds()
        let fixture = try StateFixture()
        defer { fixture.remove() }
        _ = try fixture.keyStore(systemdCreds: Self.systemdCreds).load(preference: .systemdCredential)
        let other = KeyStore(
            directory: fixture.keyDirectory, logger: fixture.logger, credentialName: "another-key",
            systemdCreds: Self.systemdCreds, credentialsDirectory: "")
        let error = #expect(throws: StateError.self) { try other.load(preference: .systemdCredential) }
        #expect(error?.reason == "credentials-unavailable")
    }

    @Test("systemd-creds: the copy systemd decrypted into $CREDENTIALS_DIRECTORY is used")
    func credentialsDirectory() throws {
        try requireSystemdCreds()
        let fixture = try StateFixture()
        defer { fixture.remove() }
        let created = try fixture.keyStore(systemdCreds: Self.systemdCreds).load(preference: .systemdCredential)
        // What `LoadCredentialEncrypted=rouse-state-key:<keys>/state-key.cred` does at service start.
        let credentials = fixture.root + "/credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        #expect(
            FileManager.default.createFile(
                atPath: credentials + "/rouse-state-key", contents: Data(created.current.bytes),
                attributes: [.posixPermissions: 0o400]))
        let fromUnit = KeyStore(
            directory: fixture.keyDirectory, logger: fixture.logger, systemdCreds: "/nonexistent/systemd-creds",
            credentialsDirectory: credentials)
        let loaded = try fromUnit.load(preference: .auto)
        #expect(loaded.backend == .systemdCredential)
        #expect(loaded.current.id == created.current.id)
    }

    func requireSystemdCreds() throws {
        let creds = SystemdCreds(program: Self.systemdCreds, withKey: "auto")
        if let reason = creds.unavailableReason() {
            Issue.record("systemd-creds does not work here: \(reason) (deploy/install-deps.sh installs systemd)")
            throw StateError(.credentialsUnavailable(reason), file: Self.systemdCreds)
        }
    }
}
