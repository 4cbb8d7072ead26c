import Foundation
import RouseActivation
import RouseAgentClient
import Testing

@Suite("Activation messages on the agent's IPC wire")
struct ActivationWireTests {
    static let events: [ActivationMessage] = [
        .granted, .denied(.insufficientPriority), .denied(.cannotInterruptOthers), .delayed,
        .interruptionBegan(.preempted), .interruptionBegan(.appSuspended), .interruptionEnded(shouldResume: true),
        .interruptionEnded(shouldResume: false), .duckBegan, .duckEnded, .routeChanged(.oldDeviceUnavailable),
        .routeChanged(RouteChangeReason(rawValue: "someVendorReason")), .callActivated, .callDeactivated,
    ]

    @Test(arguments: events)
    func everyEventSurvivesAFrame(event: ActivationMessage) throws {
        let message = AgentMessage(activation: event, session: "music", requestID: 7)
        var decoder = FrameDecoder()
        decoder.append(FrameCodec.encode(message))
        let decoded = try #require(try decoder.next())
        #expect(decoded.kind == .activation)
        #expect(decoded.session == "music")
        #expect(decoded.requestID == 7)
        #expect(decoded.activationEvent == event)
    }

    @Test func unknownEventIsNotGuessed() {
        var message = AgentMessage(type: .activation)
        message.event = "exploded"
        #expect(message.activationEvent == nil)
        message.event = "denied"  // without its reason
        #expect(message.activationEvent == nil)
    }

    @Test func configurationIsValidatedWithPreciseErrors() throws {
        var message = AgentMessage(type: .activate)
        #expect(try message.sessionConfiguration() == nil)
        message.category = "playback"
        message.options = ["duckOthers"]
        message.mode = "spokenAudio"
        let configuration = try #require(try message.sessionConfiguration())
        #expect(configuration.options.contains(.mixWithOthers))  // duckOthers implies it
        #expect(configuration.mode == .spokenAudio)

        let cases: [(String?, String?, [String]?, String, String)] = [
            ("stereo", nil, nil, "badRequest", "unknown category stereo"),
            ("playback", "karaoke", nil, "badRequest", "unknown mode karaoke"),
            ("playback", nil, ["louder"], "badRequest", "unknown option louder"),
            ("record", nil, ["duckOthers"], "incompatible-option", "duckOthers with record"),
            ("playback", "voiceChat", nil, "incompatible-mode", "voiceChat with playback"),
        ]
        for (category, mode, options, code, detail) in cases {
            var bad = AgentMessage(type: .activate)
            bad.category = category
            bad.mode = mode
            bad.options = options
            do {
                _ = try bad.sessionConfiguration()
                Issue.record("\(String(describing: category)) \(String(describing: mode)) accepted")
            } catch {
                #expect(error.code == code)
                #expect(error.detail.contains(detail), "\(error.detail)")
            }
        }
    }

    @Test func activateRequestCarriesTheConfiguration() throws {
        let configuration = try SessionConfiguration(category: .playAndRecord, mode: .voiceChat, options: [.duckOthers])
        let message = AgentMessage(activate: "talk", configuration: configuration, role: .assistant, acceptsDelay: true)
        #expect(message.kind == .activate)
        #expect(message.role == "assistant")
        #expect(message.acceptsDelay == true)
        #expect(try message.sessionConfiguration() == configuration)
    }
}
