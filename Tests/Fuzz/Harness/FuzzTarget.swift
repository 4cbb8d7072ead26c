import Glibc

/// One parser fed by libFuzzer: a name (the corpus directory under Tests/Fuzz/corpus), what it covers, and the
/// function that feeds it one input. `run` must not trap on any input; it traps (`fatalError`) only when the parser
/// broke a promise the harness checks (a value that does not survive its own encoding, for example).
struct FuzzTarget: Sendable {
    /// The corpus directory's name and the first argument of `rouse-fuzz`.
    let name: String
    /// One line: which parser, through which entry point.
    let summary: String
    /// Feeds one input.
    let run: @Sendable ([UInt8]) -> Void

    /// Where `rouse-fuzz` leaves the chosen target for the C callback.
    static let environmentVariable = "ROUSE_FUZZ_TARGET"

    /// Every target, in the order deploy/fuzz.sh runs them.
    static let all: [FuzzTarget] = [
        APNsRequestFuzz.target,
        JWTFuzz.target,
        ChannelRecordFuzz.target,
        DeviceAPIFuzz.target,
        IPCFrameFuzz.target,
        NodeMessageFuzz.target,
        NetlinkFuzz.target,
        HandlerTOMLFuzz.target,
        GatewayConfigFuzz.target,
        SealedStateFuzz.target,
    ]

    /// The target called `name`.
    static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }

    /// The target `rouse-fuzz` was started for, read once.
    private static let selected: FuzzTarget? = getenv(environmentVariable).flatMap { named(String(cString: $0)) }

    /// libFuzzer's callback: one input for the selected target. Always 0 (the input may join the corpus).
    static func runSelected(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        guard let selected else { fatalError("rouse-fuzz: no target in \(environmentVariable)") }
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        selected.run(bytes)
        return 0
    }
}

/// Writes `message` and a newline to standard error (fd 2, unbuffered).
func printError(_ message: String) {
    let bytes = Array((message + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

/// libFuzzer's own `main` (linked in with `-sanitize=fuzzer`, though SwiftPM's `main` runs instead) refers to this
/// symbol; it is the same callback.
@_cdecl("LLVMFuzzerTestOneInput")
func llvmFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    FuzzTarget.runSelected(data, size)
}
