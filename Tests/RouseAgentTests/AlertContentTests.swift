import Foundation
import RouseAgent
import RouseDBus
import Testing

/// What an alert push's `aps` shows: string and dictionary alerts, localized forms, sound and urgency.
struct AlertContentTests {
    static func content(_ json: String) -> AlertContent? {
        AlertContent(payload: Data(json.utf8).base64EncodedString())
    }

    @Test func aStringAlertIsTheBody() throws {
        let content = try #require(Self.content(#"{"aps":{"alert":"Hello","sound":"default"}}"#))
        #expect(content.body == "Hello")
        #expect(content.sound == "message-new-instant")
        let shown = content.notification(appName: "chat", replacesID: 4)
        #expect(shown.summary == "chat")
        #expect(shown.replacesID == 4)
        #expect(shown.urgency == .normal)
    }

    @Test func localizedFormsFallBackToTheKeyAsFormat() throws {
        let content = try #require(
            Self.content(
                #"{"aps":{"alert":{"title-loc-key":"From %@","title-loc-args":["Bob"],"#
                    + #""loc-key":"%2$@ then %1$@, 100%%","loc-args":["a","b"]},"sound":{"name":"bell.caf","critical":1},"#
                    + #""interruption-level":"critical"}}"#))
        #expect(content.title == "From Bob")
        #expect(content.body == "b then a, 100%")
        #expect(content.sound == "bell")
        #expect(content.urgency == .critical)
    }

    @Test(arguments: [#"{"aps":{"content-available":1}}"#, "not json", #"{"aps":{"alert":42}}"#, #"[1]"#])
    func nothingToShow(_ payload: String) {
        #expect(Self.content(payload) == nil)
    }
}
