import Testing

@testable import RouseState

/// Never crash on input: random and mutated bytes are rejected with an error, never a trap.
@Suite("Malformed input")
struct MalformedInputTests {
    @Test("random mutations of a sealed file are rejected as integrity failures (or leave it intact)")
    func mutatedSealedFiles() throws {
        let key = DataKey.random()
        let classKey = key.classKey(.none)
        let good = try SealedFile.seal(
            Array(repeating: 9, count: 64), name: "a.state", kind: "k", protection: .none, keyID: key.id,
            classKey: classKey)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var bytes = good
            switch Int.random(in: 0..<3, using: &generator) {
            case 0:
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] = UInt8.random(in: 0...255, using: &generator)
            case 1: bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &generator)))
            default: bytes += (0..<Int.random(in: 1...8, using: &generator)).map { _ in 0 }
            }
            do {
                let header = try SealedFile.parseHeader(bytes, name: "a.state", kind: "k")
                #expect(header.keyID == key.id || bytes != good)
                let plaintext = try SealedFile.open(bytes, header: header, classKey: classKey)
                #expect(bytes == good)
                #expect(plaintext == Array(repeating: 9, count: 64))
            } catch {
                #expect(error.isIntegrityFailure)
            }
        }
    }

    @Test("random bytes never decode as an archive or a launch record by accident of a trap")
    func randomArchives() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            var bytes = (0..<Int.random(in: 0..<64, using: &generator)).map { _ in
                UInt8.random(in: 0...255, using: &generator)
            }
            if bytes.count >= 2 && Bool.random(using: &generator) { (bytes[0], bytes[1]) = (0, 1) }
            _ = try? PreservationArchive.decode(bytes, file: "x")
            _ = try? LaunchRecord.decode(bytes, file: "x")
        }
    }
}
