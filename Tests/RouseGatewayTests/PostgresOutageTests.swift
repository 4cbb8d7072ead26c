import Foundation
import RouseGateway
import RouseTestSupport
import Testing

/// PostgreSQL going away under a running gateway: providers get 503, never 200 without a COMMIT; devices keep their
/// channels; the store reconnects by itself and delivery resumes with nothing lost.
@Suite("Gateway on PostgreSQL: outage and recovery", .timeLimit(.minutes(5)), .stopsWhatItStarts)
struct PostgresOutageTests {
    @Test("PostgreSQL stopped: 503 ServiceUnavailable, the channel stays open; restarted: 200 and delivery resumes")
    func outage() async throws {
        let cluster = try await PostgresCluster.start()
        let settings = StoreBackend.settings(of: cluster)
        let h = try await Harness.start { $0.postgres = settings }
        let channel = try await h.channel()
        await h.push(1)
        #expect(try await h.numbers(channel, count: 1) == [1])

        await cluster.stop(mode: "fast")
        for n in 2...4 {
            let answer = await h.provider.push(token: h.token, payload: #"{"n":\#(n)}"#)
            #expect(answer.status == 503 && answer.reason == "ServiceUnavailable", "push \(n): \(answer)")
        }
        #expect(h.gateway.metrics.total("pushes_in/ServiceUnavailable") == 3)

        try await cluster.startServer()
        // The store reconnects on its own (one attempt per 250 ms): the provider's retry succeeds.
        var answer = await h.provider.push(token: h.token, payload: #"{"n":5}"#)
        let deadline = ContinuousClock.now + .seconds(10)
        while answer.status == 503, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            answer = await h.provider.push(token: h.token, payload: #"{"n":5}"#)
        }
        #expect(answer.status == 200, "after the restart: \(answer)")
        await h.push(6)
        // The channel opened before the outage delivers what was committed after it, in order; 2-4 were never stored.
        #expect(try await h.numbers(channel, count: 2) == [5, 6])
        // Stored (delivered, not acknowledged): 1, 5, 6; nothing of 2-4.
        let stored = try await cluster.psql(
            "SELECT string_agg(convert_from(payload, 'UTF8'), ' ' ORDER BY seq) FROM pushes")
        #expect(stored.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"n":1} {"n":5} {"n":6}"#)
        await h.stop()
    }

    @Test("a gateway whose PostgreSQL settings do not connect refuses to start, naming the setting")
    func startRefused() async throws {
        let cluster = try await PostgresCluster.start()
        var settings = StoreBackend.settings(of: cluster)
        settings.database = "missing"
        let directory = try TemporaryDirectory()
        do {
            _ = try GatewayFixture.start(in: directory) { $0.postgres = settings }
            Issue.record("the gateway started")
        } catch {
            #expect("\(error)".contains("postgres.database: cannot connect"), "\(error)")
        }
    }
}
