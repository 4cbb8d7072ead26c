import Foundation
import Logging
import RouseState

/// `rouse-bench state [--handlers N] [--pieces N] [--piece-bytes N] [--iterations N] [--dir PATH] [--json]`:
/// preserve and restore time and archive size for 1,000 pieces of state across 10 handlers (by default).
/// Each handler's archive holds `pieces / handlers` pieces under `call-<i>` and `call-<i>/ui` paths;
/// preserve = seal + atomic durable write of every archive (fsync of file and directory); restore = a fresh
/// store per iteration (launch counter persisted, archive read, authenticated, decoded, every piece handed
/// back) plus `finishLaunch`. The key is a key file, so the figures are the store's, not `systemd-creds`'s.
enum StateBench {
    struct Options {
        var handlers = 10
        var pieces = 1000
        var pieceBytes = 256
        var iterations = 20
        var directory: String?
        var json = false
        /// Through the agent's IPC with handler processes (``AgentStateBench``).
        var agent = false
    }

    typealias BenchError = Bench.Failure

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        func positive(_ name: String) throws -> Int {
            guard let value = iterator.next().flatMap(Int.init), value > 0 else {
                throw BenchError(description: "\(name) needs a positive integer")
            }
            return value
        }
        while let argument = iterator.next() {
            switch argument {
            case "--handlers": options.handlers = try positive(argument)
            case "--pieces": options.pieces = try positive(argument)
            case "--piece-bytes": options.pieceBytes = try positive(argument)
            case "--iterations": options.iterations = try positive(argument)
            case "--dir":
                guard let value = iterator.next() else { throw BenchError(description: "--dir needs a path") }
                options.directory = value
            case "--json": options.json = true
            case "--agent": options.agent = true
            default:
                throw BenchError(
                    description:
                        "unknown argument \(argument) (--handlers N, --pieces N, --piece-bytes N, --iterations N, "
                        + "--dir PATH, --agent, --json)")
            }
        }
        return options
    }

    static func run(arguments: [String]) async throws {
        let options = try parse(arguments)
        if options.agent {
            try await AgentStateBench.run(options)
            return
        }
        let base = options.directory ?? FileManager.default.temporaryDirectory.path
        let root = "\(base)/rouse-bench-state-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }

        let logger = Logger(label: "rouse-bench.state") { _ in SwiftLogNoOpLogHandler() }
        let loaded = try KeyStore(directory: "\(root)/keys", logger: logger, credentialsDirectory: "")
            .load(preference: .keyFile)
        let ring = KeyRing(key: loaded.current)
        let archives = try makeArchives(options)

        var preserveTimes: [Double] = []
        var restoreTimes: [Double] = []
        var restoredPieces = 0
        let clock = ContinuousClock()
        for _ in 0..<options.iterations {
            let store = try SealedStore(directory: "\(root)/state", keys: ring, logger: logger)
            let preservation = PreservationStore(store: store, logger: logger)
            let preserve = try clock.measure {
                for archive in archives { try preservation.preserve(archive) }
            }
            preserveTimes.append(preserve.seconds)

            let restarted = PreservationStore(
                store: try SealedStore(directory: "\(root)/state", keys: ring, logger: logger), logger: logger)
            var count = 0
            let restore = try clock.measure {
                for archive in archives {
                    let handler = archive.info.handler
                    guard let offered = try restarted.beginLaunch(handler: handler) else {
                        throw BenchError(description: "no archive offered for \(handler)")
                    }
                    count += try restarted.restore(offered) { _, _ in }.restored.count
                    try restarted.finishLaunch(handler: handler)
                }
            }
            restoreTimes.append(restore.seconds)
            restoredPieces = count
        }
        guard restoredPieces == options.pieces else {
            throw BenchError(description: "restored \(restoredPieces) pieces, expected \(options.pieces)")
        }
        // Sizes: preserve once more and measure the files.
        let store = try SealedStore(directory: "\(root)/state", keys: ring, logger: logger)
        for archive in archives { try PreservationStore(store: store, logger: logger).preserve(archive) }
        var archiveBytes = 0
        for archive in archives {
            let path = "\(root)/state/\(archive.info.handler).state"
            archiveBytes += (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        }
        let report = Report(
            options: options, preserve: Summary(preserveTimes), restore: Summary(restoreTimes),
            archiveBytes: archiveBytes, payloadBytes: options.pieces * options.pieceBytes, directory: base)
        print(options.json ? report.json : report.text)
    }

    static func makeArchives(_ options: Options) throws -> [PreservationArchive] {
        var generator = SystemRandomNumberGenerator()
        var archives: [PreservationArchive] = []
        for h in 0..<options.handlers {
            var archive = PreservationArchive(
                info: .init(handler: "org.example.handler\(h)", writerVersion: "1.0", createdAt: 0))
            let share = options.pieces / options.handlers + (h < options.pieces % options.handlers ? 1 : 0)
            var i = 0
            while i < share {
                let call = try RestorationPath("call-\(i / 2)")
                let path = i % 2 == 0 ? call : try call.appending("ui")
                archive.preserve(
                    (0..<options.pieceBytes).map { _ in UInt8.random(in: 0...255, using: &generator) }, at: path)
                i += 1
            }
            archives.append(archive)
        }
        return archives
    }

    struct Summary {
        let median: Double
        let min: Double
        let max: Double

        init(_ samples: [Double]) {
            let sorted = samples.sorted()
            median = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
            min = sorted.first ?? 0
            max = sorted.last ?? 0
        }
    }

    struct Report {
        let options: Options
        let preserve: Summary
        let restore: Summary
        let archiveBytes: Int
        let payloadBytes: Int
        let directory: String

        func ms(_ seconds: Double) -> String { String(format: "%.2f", seconds * 1000) }

        var text: String {
            """
            state: \(options.pieces) pieces of \(options.pieceBytes) B across \(options.handlers) handlers, \
            \(options.iterations) iterations, in \(directory)
              preserve (seal + atomic durable write of \(options.handlers) archives): \
            median \(ms(preserve.median)) ms, min \(ms(preserve.min)) ms, max \(ms(preserve.max)) ms
              restore (launch record, read, open, decode, hand back every piece, finish): \
            median \(ms(restore.median)) ms, min \(ms(restore.min)) ms, max \(ms(restore.max)) ms
              archive size: \(archiveBytes) B on disk for \(payloadBytes) B of state \
            (\(archiveBytes - payloadBytes) B of paths, framing, headers and tags)
            """
        }

        var json: String {
            """
            {"bench":"state","handlers":\(options.handlers),"pieces":\(options.pieces),\
            "piece_bytes":\(options.pieceBytes),"iterations":\(options.iterations),\
            "preserve_ms_median":\(ms(preserve.median)),"preserve_ms_min":\(ms(preserve.min)),\
            "restore_ms_median":\(ms(restore.median)),"restore_ms_min":\(ms(restore.min)),\
            "archive_bytes":\(archiveBytes),"payload_bytes":\(payloadBytes)}
            """
        }
    }
}
