import RouseAPNs
import RouseText

/// The key table the mock accepts for token authentication (`certs/keys.json` is one):
///
/// ```json
/// {
///   "keys": [
///     {"keyID": "ROUSEKEY01", "teamID": "ROUSETEAM1", "publicKey": "apns-key.pub.pem",
///      "topics": ["com.example.rouse", "com.example.rouse.voip"],
///      "environments": ["sandbox", "production"], "topicSpecific": false, "relatedKeyID": null}
///   ]
/// }
/// ```
/// - `publicKey`: a PEM file name resolved by the caller (relative to the JSON file), or the PEM text itself;
/// - `topics`: the bundle IDs (and/or full topics) the key may push to; absent means any topic;
/// - `environments`: absent means both; `topicSpecific` (default false) makes it a topic-specific key,
///   with its one `relatedKeyID`. Other members (such as `file`) are ignored.
public enum MockKeyFile {
    private struct File: Decodable {
        var keys: [Key]
    }

    private struct Key: Decodable {
        var keyID: String
        var teamID: String
        var publicKey: String
        var topics: [String]?
        var environments: [String]?
        var topicSpecific: Bool?
        var relatedKeyID: String?
    }

    /// Parses the key table; `readPEM` turns a `publicKey` file name into PEM text (`nil`: cannot read).
    public static func parse(json: [UInt8], readPEM: (String) -> String?) throws(MockAPNsError) -> APNsKeyRegistry {
        let file: File
        switch JSONFileDecoding.decode(File.self, from: json) {
        case .success(let decoded): file = decoded
        case .failure(let failure): throw .badKeysFile(failure.detail)
        }
        var registry = APNsKeyRegistry()
        for (index, key) in file.keys.enumerated() {
            let at = "$.keys[\(index)]"
            let pem: String
            if key.publicKey.includes("-----BEGIN") {
                pem = key.publicKey
            } else {
                guard let text = readPEM(key.publicKey) else {
                    throw .badKeysFile("\(at).publicKey: cannot read '\(key.publicKey)'")
                }
                pem = text
            }
            var environments = Set<APNsEnvironment>()
            for (position, name) in (key.environments ?? ["sandbox", "production"]).enumerated() {
                guard let environment = APNsEnvironment(rawValue: name) else {
                    throw .badKeysFile("\(at).environments[\(position)]: '\(name)' is not sandbox or production")
                }
                environments.insert(environment)
            }
            let scope: APNsSigningKey.Scope
            if key.topicSpecific == true {
                scope = .topics(Set(key.topics ?? []))
            } else {
                scope = .team(bundleIDs: key.topics.map { Set($0) })
            }
            do {
                registry.insert(
                    try APNsSigningKey(
                        teamID: key.teamID,
                        keyID: key.keyID,
                        publicKeyPEM: pem,
                        environments: environments,
                        scope: scope,
                        relatedKeyID: key.relatedKeyID
                    )
                )
            } catch {
                throw .badKeysFile("\(at).publicKey: not a P-256 public key PEM")
            }
        }
        return registry
    }
}
