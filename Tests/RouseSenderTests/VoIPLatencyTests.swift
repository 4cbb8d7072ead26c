import RouseAPNs
import RouseMockAPNs
import RouseSender
import Synchronization
import Testing

@Suite("VoIP priority lane under a 100,000-push background bulk send", .timeLimit(.minutes(3)))
struct VoIPLatencyTests {
    typealias F = MockFixture

    @Test func voipDoesNotWaitBehindBulk() async throws {
        let fixture = try F(workers: 1) { $0.recordLimit = 1000 }
        let sender = try fixture.sender()
        // Warm up: the token is accepted and the stream limit is up.
        #expect(await sender.send(F.voip(F.token(0))).isDelivered)
        let bulkDone = Atomic<Bool>(false)
        let bulkLatencies = Mutex<[Duration]>([])
        let bulk = Task {
            await sender.sendAll((1...100_000).lazy.map { F.background(F.token($0)) }, maxInFlight: 5000) { r in
                if r.outcome.isDelivered { bulkLatencies.withLock { $0.append(r.latency) } }
            }
            bulkDone.store(true, ordering: .relaxed)
        }
        var voip: [Duration] = []
        var index = 200_000
        while !bulkDone.load(ordering: .relaxed) && voip.count < 300 {
            let result = await sender.sendDetailed(F.voip(F.token(index)))
            #expect(result.outcome.isDelivered)
            voip.append(result.latency)
            index += 1
        }
        await bulk.value
        await sender.shutdown()
        let sortedVoIP = voip.sorted()
        let sortedBulk = bulkLatencies.withLock { $0 }.sorted()
        #expect(sortedBulk.count == 100_000)
        #expect(voip.count >= 20, "the bulk send ended before enough VoIP pushes were measured")
        let voipP90 = sortedVoIP[min(sortedVoIP.count - 1, sortedVoIP.count * 90 / 100)]
        let voipP99 = sortedVoIP[min(sortedVoIP.count - 1, sortedVoIP.count * 99 / 100)]
        let bulkP50 = sortedBulk[sortedBulk.count / 2]
        // p90, not p99: with a few hundred VoIP pushes p99 is the slowest two or three, and on loaded cores one
        // scheduling stall of the whole process (seen: 1.44 s, load average 14) lands on them as on the bulk. A VoIP
        // push queued behind the bulk's 5,000 in flight would wait as long as a bulk push, so p90 still tells.
        #expect(voipP90 < bulkP50, "VoIP p90 \(voipP90) (p99 \(voipP99)) vs bulk p50 \(bulkP50)")
        print("VoIP p90 \(voipP90), p99 \(voipP99) over \(voip.count) pushes; bulk p50 \(bulkP50)")
        await fixture.shutdown()
    }
}
