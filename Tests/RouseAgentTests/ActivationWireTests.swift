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
        let message = AgentEvent.activation(.init(event, session: "music"))
        var decoder = FrameDecoder<AgentEvent>()
        decoder.append(FrameCodec.encode(message, requestID: 7))
        let decoded = try #require(try decoder.next())
        guard case .activation(let activation) = decoded.message else {
            Issue.record("decoded as \(decoded.message.type)")
            return
        }
        #expect(activation.session == "music")
        #expect(decoded.requestID == 7)
        #expect(activation.activationMessage == event)
    }

    @Test func unknownEventIsNotGuessed() {
        var message = AgentEvent.Activation(session: "music", event: "exploded")
        #expect(message.activationMessage == nil)
        message.event = "denied"  // without its reason
        #expect(message.activationMessage == nil)
    }

    @Test func configurationIsValidatedWithPreciseErrors() throws {
        var message = AgentRequest.Activate(session: "music", category: nil)
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
            let bad = AgentRequest.Activate(session: "music", category: category, mode: mode, options: options)
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
        let message = AgentRequest.Activate(
            session: "talk", configuration: configuration, role: .assistant, acceptsDelay: true)
        #expect(message.session == "talk")
        #expect(message.role == "assistant")
        #expect(message.acceptsDelay == true)
        #expect(try message.sessionConfiguration() == configuration)
    }
}
