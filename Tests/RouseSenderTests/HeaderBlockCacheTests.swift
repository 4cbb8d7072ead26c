import RouseAPNs
import Testing

@testable import RouseSender

/// The native engine's shared header blocks: one per (authorization, topic, push type, priority), reused while those
/// repeat, bounded in number.
@Suite("Native engine: shared header blocks")
struct HeaderBlockCacheTests {
    static func push(_ token: String, topic: String = "com.example.rouse", priority: APNsPriority? = .conservePower)
        -> APNsPush
    {
        APNsPush(
            deviceToken: token, topic: topic, pushType: .background, priority: priority, apnsID: APNsID.random(),
            expiration: 5, collapseID: "c", payload: [])
    }

    @Test(
        "pushes that differ only in their own fields share one block; another token, topic or priority makes a new one")
    func sharedWhileTheSharedFieldsRepeat() {
        var cache = HeaderBlockCache()
        let first = cache.block(for: Self.push("aa"), authorization: "jwt-1", authority: "host")
        let second = cache.block(for: Self.push("bb"), authorization: "jwt-1", authority: "host")
        #expect(first === second)
        #expect(cache.made == 1)
        let refreshed = cache.block(for: Self.push("cc"), authorization: "jwt-2", authority: "host")
        let otherTopic = cache.block(
            for: Self.push("dd", topic: "com.example.other"), authorization: "jwt-2", authority: "host")
        let otherPriority = cache.block(for: Self.push("ee", priority: nil), authorization: "jwt-2", authority: "host")
        #expect(refreshed !== first && otherTopic !== refreshed && otherPriority !== refreshed)
        #expect(cache.made == 4)
        // Back to the first fields: still cached.
        #expect(cache.block(for: Self.push("ff"), authorization: "jwt-1", authority: "host") === first)
        #expect(cache.made == 4)
    }

    @Test("at most `capacity` blocks are kept: the least recently used goes")
    func bounded() {
        var cache = HeaderBlockCache()
        let oldest = cache.block(for: Self.push("aa"), authorization: "jwt-0", authority: "host")
        for n in 1...HeaderBlockCache.capacity {
            _ = cache.block(for: Self.push("aa"), authorization: "jwt-\(n)", authority: "host")
        }
        #expect(cache.made == HeaderBlockCache.capacity + 1)
        #expect(cache.block(for: Self.push("aa"), authorization: "jwt-0", authority: "host") !== oldest)
        #expect(cache.made == HeaderBlockCache.capacity + 2)
    }
}
