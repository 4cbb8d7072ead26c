import Foundation
import RouseGateway
import RouseHTTP2
import RouseTestSupport
import Synchronization
import Testing

/// A recording store whose writes wait while the gate is closed: the store thread stops in its next batch, so
/// the test can fill the queue in a known state.
final class GatedStore: GatewayStore {
    let recording: RecordingStore
    /// One element each time a write starts waiting at the closed gate.
    let blocked: AsyncStream<Void>
    private let blockedContinuation: AsyncStream<Void>.Continuation
    private let closed = Mutex(false)
    private let opened = DispatchSemaphore(value: 0)

    init(path: String) throws {
        recording = try RecordingStore(path: path)
        (blocked, blockedContinuation) = AsyncStream<Void>.makeStream()
    }

    /// The store thread's next write waits until `open()`.
    func close() { closed.withLock { $0 = true } }

    /// Lets the waiting write (if any) and all later ones through.
    func open() {
        closed.withLock { $0 = false }
        opened.signal()
    }

    func write<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T {
        if closed.withLock({ $0 }) {
            blockedContinuation.yield()
            opened.wait()
            opened.signal()
        }
        recording.record("write")
        return try recording.write(body)
    }

    func read<T>(_ body: (any GatewayStoreTransaction) throws -> T) throws -> T { try recording.read(body) }
    var migration: GatewaySchema.Migration { recording.migration }
}

/// The status of a response, or -1.
private func status(_ result: HTTP2ClientResult) -> Int {
    if case .response(let status, _, _) = result { return status }
    return -1
}

@Suite("Gateway store queue: provider pushes are not held back by queued device requests", .timeLimit(.minutes(1)))
struct DeviceQueuePriorityTests {
    @Test("a push queued behind 200 bogus-credential checks commits before them, in a batch with at most 16")
    func pushAheadOfDeviceRequests() async throws {
        let gated = Mutex<GatedStore?>(nil)
        let h = try await Harness.start(
            configure: {
                $0.limits.maxQueuedDeviceRequests = 200
                $0.limits.maxQueuedJobs = 1
            },
            store: { directory in
                let store = try GatedStore(path: directory.path + "/gateway.sqlite")
                gated.withLock { $0 = store }
                return store
            })
        let store = try #require(gated.withLock { $0 })
        var tls = TLSConfiguration()
        tls.trustRootsFile = Repository.cert("ca.pem")
        var connected: [HTTP2Client] = []
        for _ in 0..<21 {
            connected.append(
                try await HTTP2Client.connect(
                    HTTP2ClientConfiguration(host: "127.0.0.1", port: h.gateway.devicePort, tls: tls), on: providerLoop)
            )
        }
        let devices = connected
        let bogus = HTTP2ClientRequest(
            method: "GET", path: "/device/v1/tokens", authority: "localhost",
            headers: [HTTP2Header("authorization", "Bearer d0123456789abcdef." + String(repeating: "0", count: 64))])

        // The store thread stops in the batch of one bogus request; 300 more: 200 fill the device budget, 100 get
        // 503 at once (the sign that the queue holds 200).
        store.close()
        var blocked = store.blocked.makeAsyncIterator()
        let first = Task { status(await devices[20].send(bogus)) }
        await blocked.next()
        let (answers, answered) = AsyncStream<Int>.makeStream()
        let flood = Task {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<300 {
                    let client = devices[index % 20]
                    group.addTask { answered.yield(status(await client.send(bogus))) }
                }
            }
            answered.finish()
        }
        var statuses: [Int: Int] = [:]
        var iterator = answers.makeAsyncIterator()
        while statuses[503, default: 0] < 100, let status = await iterator.next() { statuses[status, default: 0] += 1 }
        #expect(statuses == [503: 100], "\(statuses)")

        // Two pushes: the provider budget is one job, so one is queued and the other gets 503 at once.
        let second = try await Provider.connect(port: h.gateway.providerPort)
        let (pushAnswers, pushAnswered) = AsyncStream<Int>.makeStream()
        for provider in [h.provider, second] {
            Task { pushAnswered.yield(await provider.push(token: h.token).status) }
        }
        var pushIterator = pushAnswers.makeAsyncIterator()
        #expect(await pushIterator.next() == 503)

        store.recording.reset()
        store.open()
        #expect(await pushIterator.next() == 200)
        while let status = await iterator.next() { statuses[status, default: 0] += 1 }
        await flood.value
        #expect(statuses == [503: 100, 401: 200], "\(statuses)")
        #expect(await first.value == 401)

        // The first batch held the one bogus request taken before the gate closed; the push's batch comes next,
        // the push first, then at most 16 of the queued credential checks. (In arrival order, all 200 came first.)
        let calls = store.recording.calls
        let pushAt = try #require(calls.firstIndex(of: "insertPush"))
        let batchStart = try #require(calls[..<pushAt].lastIndex(of: "write"))
        let batchEnd = calls[pushAt...].firstIndex(of: "write") ?? calls.endIndex
        #expect(calls[..<batchStart].filter { $0 == "device" }.count == 1, "\(calls.prefix(20))")
        #expect(calls[batchStart..<pushAt].filter { $0 == "device" }.count == 0, "credential checks ahead of the push")
        #expect(calls[pushAt..<batchEnd].filter { $0 == "device" }.count <= 16)
        for client in devices { client.close() }
        second.close()
        await h.stop()
    }
}
