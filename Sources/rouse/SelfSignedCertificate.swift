import ArgumentParser
import FoundationEssentials
import RouseNetlink
import RouseState
import RouseSystem

/// A self-signed TLS certificate for a private gateway (`rouse gateway init --self-signed`), made by the
/// `openssl` command: a P-256 key, 825 days, the host name as subject and as subjectAltName (DNS or IP),
/// usable as its own trust anchor (`rouse agent enroll --ca server.pem`, `curl --cacert server.pem`).
enum SelfSignedCertificate {
    /// Creates `server.pem` and `server.key` (mode 0600) in `directory`; returns their paths.
    static func create(hostname: String, directory: String, force: Bool) throws -> (
        certificate: String, privateKey: String
    ) {
        let certificate = directory + "/server.pem"
        let key = directory + "/server.key"
        for path in [certificate, key] where FileManager.default.fileExists(atPath: path) && !force {
            throw ValidationError("\(path) exists (--force replaces it)")
        }
        guard let openssl = ExecutableSearch.find("openssl") else {
            throw ValidationError("--self-signed needs the openssl command (apt install openssl)")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let subjectAltName = isIPAddress(hostname) ? "IP:\(hostname)" : "DNS:\(hostname)"
        let arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", key + ".new", "-out", certificate + ".new", "-days", "825", "-subj", "/CN=\(hostname)",
            "-addext", "subjectAltName=\(subjectAltName)", "-addext", "extendedKeyUsage=serverAuth",
        ]
        let run = try ShortChild.run(openssl, arguments, input: [])
        guard run.status == 0 else {
            throw ValidationError(
                "openssl req failed (exit \(run.status)): \(String(decoding: run.errors, as: UTF8.self))")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key + ".new")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: certificate + ".new")
        for path in [key, certificate] {
            if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
            try FileManager.default.moveItem(atPath: path + ".new", toPath: path)
        }
        return (certificate, key)
    }

    static func isIPAddress(_ text: String) -> Bool {
        IPAddress(text) != nil
    }
}

/// Finds a program the way a shell does (`$PATH`, then the usual system directories).
enum ExecutableSearch {
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        return directories.map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
