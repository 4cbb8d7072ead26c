import RouseAPNs
import RouseMockAPNs
import Testing

/// The registry keys tokens by their digits (`DeviceTokenKey`): case does not matter, length and leading zeros do,
/// and tokens that are not short hex keep the lookup they had.
@Suite("Engine: device-token registry keys")
struct DeviceTokenKeyTests {
    @Test("hex tokens of any case find the same entry; leading zeros and length tell tokens apart")
    func hexTokens() {
        let token = "00FC13ADFF785122B4AD28809A3420982341241421348097878E577C991DE8F0"
        var registry = DeviceTokenRegistry(unknownTokens: .reject)
        registry.set(token, .init(topics: ["com.example.app.voip"]))
        registry.set("0a", .init(state: .expired))
        #expect(registry.entry(for: token.lowercased()) != nil)
        #expect(
            registry.check(token: Substring(token.lowercased()), topic: "com.example.app.voip", environment: .sandbox)
                == nil)
        #expect(registry.check(token: Substring(token), topic: "com.example.app.voip", environment: .sandbox) == nil)
        #expect(registry.entry(for: String(token.dropFirst(2))) == nil)  // Without its leading zeros.
        #expect(registry.entry(for: token + "00") == nil)
        #expect(registry.check(token: "0A", topic: "x", environment: .sandbox)?.reason == .expiredToken)
        #expect(registry.check(token: "a", topic: "x", environment: .sandbox)?.reason == .badDeviceToken)
        #expect(registry.check(token: "000a", topic: "x", environment: .sandbox)?.reason == .badDeviceToken)
        registry.remove(token.lowercased())
        #expect(registry.entry(for: token) == nil)
        #expect(registry.count == 1)
    }

    @Test("tokens longer than 64 digits, and tokens that are not hex, are looked up as before")
    func otherTokens() {
        let long = String(repeating: "AB", count: 40)  // 80 digits.
        var registry = DeviceTokenRegistry(unknownTokens: .reject)
        registry.set(long, .init(state: .expired))
        registry.set("GA", .init(state: .expired))
        #expect(
            registry.check(token: Substring(long.lowercased()), topic: "x", environment: .sandbox)?.reason
                == .expiredToken)
        #expect(registry.check(token: Substring(long), topic: "x", environment: .sandbox)?.reason == .expiredToken)
        #expect(registry.entry(for: "ga") != nil)
        #expect(registry.entry(for: "GA") != nil)
        #expect(registry.entry(for: long.dropLast(2)) == nil)
    }
}
