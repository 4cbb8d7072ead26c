import RouseCurl
import RouseHTTP2
import RouseTestSupport
import Synchronization
import Testing

/// The gateway's channel replacement, over one client connection: a streaming response gets its last record, and then,
/// on a later pass of the server's loop, its `END_STREAM` in the same flush as a sibling stream's answer. libcurl
/// before 8.4.0 can read that `END_STREAM` on the sibling's turn and then drop the timer meant to finish the first
/// transfer (see `CurlMultiLoop`); without the loop's extra pass the first stream then waits for the next byte on the
/// connection, which never comes here. It happens in a few percent of rounds on a 2-core machine, so the test runs
/// many rounds.
@Suite("CurlHTTPClient: a stream whose end is read on a sibling stream's turn")
struct CurlStreamEndTests {
    static let rounds = 300

    @Test("a streaming response ends as soon as its END_STREAM arrives with a sibling's answer, in every round")
    func streamEndReadOnASiblingsTurn() async throws {
        let open = Mutex<[String: HTTP2Stream]>([:])
        let server = try makeServer { request, stream in
            let round = String(request.path.split(separator: "/").last ?? "")
            if request.path.hasPrefix("/open/") {
                stream.sendHead(status: 200, headers: [HTTP2Header("content-type", "application/x-ndjson")])
                stream.write(Array("hello\n".utf8))
                open.withLock { $0[round] = stream }
                return
            }
            guard let old = open.withLock({ $0.removeValue(forKey: round) }) else {
                return stream.respond(status: 404)
            }
            old.write(Array("replaced\n".utf8))
            stream.connection.schedule(after: .zero) {
                old.finish()
                stream.respond(status: 200, body: Array("hello\n".utf8))
            }
        }
        let client = try CurlHTTPClient()
        let tls = CurlTLSOptions(caFile: Repository.cert("ca.pem"))
        for round in 0..<Self.rounds {
            let old = try await client.stream(CurlRequest(url: "\(server.httpsURL)/open/\(round)", tls: tls))
            let (greeted, greeting) = AsyncStream<Void>.makeStream()
            let reader = Task {
                var all: [UInt8] = []
                for try await chunk in old.body {
                    all += chunk
                    if all.count >= 6 { greeting.yield() }
                }
                return all
            }
            for await _ in greeted { break }
            let replacing = try await client.send(CurlRequest(url: "\(server.httpsURL)/replace/\(round)", tls: tls))
            #expect(replacing.status == 200)
            guard let all = try await Self.value(of: reader, within: .seconds(10)) else {
                Issue.record("round \(round): the first stream's END_STREAM arrived, but its transfer never ended")
                break
            }
            #expect(String(decoding: all, as: UTF8.self) == "hello\nreplaced\n", "round \(round)")
        }
        await client.shutdown()
        await server.shutdown(gracePeriod: .seconds(1))
    }

    /// The task's value, or nil (and the task cancelled) when it has not finished within `limit`: a guard against a
    /// hang, far above the time the transfer takes to end when the loop is right (the same pass that reads the frame).
    static func value(of task: Task<[UInt8], any Error>, within limit: Duration) async throws -> [UInt8]? {
        try await withThrowingTaskGroup(of: [UInt8]?.self) { group in
            group.addTask { try await task.value }
            group.addTask {
                try await Task.sleep(for: limit)
                task.cancel()
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
