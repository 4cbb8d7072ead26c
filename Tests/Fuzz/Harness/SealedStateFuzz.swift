import Crypto

@testable import RouseState

/// The agent's sealed state files as `SealedStore` reads them back from disk: `SealedFile.parseHeader` (magic,
/// version, class, lengths, name and kind), `SealedFile.open` (AES-GCM with the fixed class key below), and the
/// plaintexts inside: `PreservationArchive.decode` and `LaunchRecord.decode`, also fed the raw input directly (the
/// fuzzer cannot forge the GCM tag, so the decoders would otherwise see only the seeds' plaintexts).
enum SealedStateFuzz {
    static let target = FuzzTarget(
        name: "sealed-state",
        summary: "SealedFile.parseHeader/open, PreservationArchive.decode, LaunchRecord.decode (sealed state)",
        run: run)

    /// The class key of the seeds' sealed files (fixed bytes, not a secret).
    static let classKey = SymmetricKey(data: [UInt8](repeating: 2, count: 32))
    /// The name the seeds' sealed files carry.
    static let fileName = "fuzz-handler.archive"

    static func run(_ bytes: [UInt8]) {
        // The header's own name too, so inputs whose name the fuzzer changed still get past the name check.
        var names = [fileName]
        if bytes.count >= SealedFile.fixedHeaderLength {
            let end = min(bytes.count, SealedFile.fixedHeaderLength + Int(bytes[9]))
            names.append(String(decoding: bytes[SealedFile.fixedHeaderLength..<end], as: UTF8.self))
        }
        for name in names {
            guard let header = try? SealedFile.parseHeader(bytes, name: name, kind: nil) else { continue }
            guard let plaintext = try? SealedFile.open(bytes, header: header, classKey: classKey) else { continue }
            decode(plaintext)
        }
        decode(bytes)
    }

    private static func decode(_ plaintext: [UInt8]) {
        if let archive = try? PreservationArchive.decode(plaintext, file: fileName) {
            // What an archive read writes (its anchored pieces) must read back as the same archive.
            let written = archive.encoded()
            guard let again = try? PreservationArchive.decode(written, file: fileName), again.encoded() == written
            else { fatalError("sealed-state: \(archive) does not survive encoded()") }
        }
        _ = try? LaunchRecord.decode(plaintext, file: fileName)
    }
}
