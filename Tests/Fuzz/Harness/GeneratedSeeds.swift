import Crypto
import Glibc
import RouseAPNs

@testable import RouseState

/// The seeds that must be computed (signed tokens, sealed files, binary archives); the hand-written ones are plain
/// files under Tests/Fuzz/corpus. `rouse-fuzz --seeds DIR` writes these into DIR/<target>/ with fixed names, so
/// running it again over the corpus changes only what an encoder changed.
enum GeneratedSeeds {
    static func write(into directory: String) -> Bool {
        var ok = true
        for (target, name, bytes) in seeds() {
            let folder = directory + "/" + target
            mkdir(folder, 0o755)
            let path = folder + "/" + name
            guard let file = fopen(path, "wb") else {
                printError("rouse-fuzz: cannot write \(path)")
                ok = false
                continue
            }
            if fwrite(bytes, 1, bytes.count, file) != bytes.count { ok = false }
            fclose(file)
        }
        return ok
    }

    private static func seeds() -> [(String, String, [UInt8])] {
        var seeds: [(String, String, [UInt8])] = []
        if let key = FuzzKeys.privateKey,
            let token = try? ProviderToken(
                keyID: FuzzKeys.keyID, teamID: FuzzKeys.teamID, issuedAt: FuzzKeys.now.seconds
            ).signed(with: key)
        {
            seeds.append(("jwt", "generated-valid-es256", Array(token.utf8)))
            let token = "bearer " + token
            let deviceToken = String(repeating: "ab", count: 32)
            let requests = [
                ("alert", "alert", "com.example.app", "{\"aps\":{\"alert\":\"hi\"}}"),
                ("voip", "voip", "com.example.app.voip", "{\"call\":1}"),
                ("background", "background", "com.example.app", "{\"aps\":{\"content-available\":1}}"),
            ]
            for (name, pushType, topic, body) in requests {
                let request =
                    "POST\n/3/device/\(deviceToken)\nauthorization: \(token)\napns-push-type: \(pushType)\n"
                    + "apns-topic: \(topic)\napns-priority: 10\napns-expiration: 0\n"
                    + "apns-id: 123e4567-e89b-12d3-a456-426614174000\napns-collapse-id: c1\n\n\(body)"
                seeds.append(("apns-request", "generated-\(name)", Array(request.utf8)))
            }
        }
        var archive = PreservationArchive(
            info: .init(handler: "com.example.app", writerVersion: "1.2", agentVersion: "0.9", createdAt: 1_767_225_600)
        )
        if let root = try? RestorationPath("window"), let child = try? RestorationPath("window/main") {
            archive.preserve(Array("root".utf8), at: root)
            archive.preserve(Array("{\"scroll\":12}".utf8), at: child)
        }
        let plaintext = archive.encoded()
        seeds.append(("sealed-state", "generated-archive-plaintext", plaintext))
        seeds.append(("sealed-state", "generated-launch-record", LaunchRecord(unfinishedLaunches: 2).encoded()))
        if let sealed = try? SealedFile.seal(
            plaintext, name: SealedStateFuzz.fileName, kind: "archive", protection: .untilFirstUnlock,
            keyID: [1, 2, 3, 4, 5, 6, 7, 8], classKey: SealedStateFuzz.classKey)
        {
            seeds.append(("sealed-state", "generated-sealed-archive", sealed))
        }
        return seeds
    }
}
