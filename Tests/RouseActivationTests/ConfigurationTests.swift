import Foundation
import RouseActivation
import Testing

@Suite("Session configuration: options and modes per category, re-assertion")
struct ConfigurationTests {
    /// Independent transcription of agent.md B1/B3: the options each category accepts.
    static let allowedOptions: [SessionCategory: SessionOptions] = [
        .ambient: [.mixWithOthers], .soloAmbient: [], .record: [],
        .playback: [.mixWithOthers, .duckOthers, .interruptSpokenAudioAndMixWithOthers],
        .playAndRecord: [.mixWithOthers, .duckOthers, .interruptSpokenAudioAndMixWithOthers],
    ]
    /// Independent transcription of the modes each category accepts (B2 and the iOS mode pages).
    static let allowedModes: [SessionMode: Set<SessionCategory>] = [
        .default: [.ambient, .soloAmbient, .playback, .record, .playAndRecord],
        .voiceChat: [.playAndRecord], .gameChat: [.playAndRecord], .videoChat: [.playAndRecord, .record],
        .videoRecording: [.playAndRecord, .record], .measurement: [.playAndRecord, .record, .playback],
        .moviePlayback: [.playback], .spokenAudio: [.playback], .voicePrompt: [.playback, .playAndRecord],
    ]

    static let optionSubsets: [SessionOptions] = (0..<8).map { SessionOptions(rawValue: UInt8($0)) }

    @Test(
        "Every category × mode × option subset: accepted exactly when the tables allow it",
        arguments: SessionCategory.allCases)
    func validity(_ category: SessionCategory) throws {
        for mode in SessionMode.allCases {
            for options in Self.optionSubsets {
                let optionsOK = Self.allowedOptions[category, default: []].isSuperset(of: options)
                let modeOK = Self.allowedModes[mode, default: []].contains(category)
                let result = Result { () throws(ActivationError) in
                    try SessionConfiguration(category: category, mode: mode, options: options)
                }
                switch result {
                case .success(let configuration):
                    #expect(optionsOK && modeOK, "\(category) \(mode) \(options.members) accepted")
                    // Normalization: ambient and the two mixing options imply mixWithOthers.
                    let impliesMix =
                        category == .ambient || options.contains(.duckOthers)
                        || options.contains(.interruptSpokenAudioAndMixWithOthers) || options.contains(.mixWithOthers)
                    #expect(configuration.isMixable == impliesMix)
                    #expect(configuration.options.isSuperset(of: options))
                case .failure(let error):
                    #expect(!(optionsOK && modeOK), "\(category) \(mode) \(options.members) refused")
                    #expect(error.code == (optionsOK ? .incompatibleMode : .incompatibleOption))
                }
            }
        }
    }

    @Test("Options are not sticky across a category change; the mode is kept only if still valid")
    func reassertion() throws {
        let ducking = try SessionConfiguration(category: .playback, mode: .spokenAudio, options: [.duckOthers])
        let moved = try ducking.changingCategory(to: .playAndRecord)
        #expect(moved.options == [])
        #expect(moved.mode == .default)
        #expect(!moved.isMixable)
        let reasserted = try ducking.changingCategory(to: .playback, options: [.duckOthers])
        #expect(reasserted.options == [.duckOthers, .mixWithOthers])
        #expect(reasserted.mode == .spokenAudio)
        #expect(try ducking.changingCategory(to: .ambient).isMixable)
        #expect(throws: ActivationError.self) { try ducking.changingCategory(to: .record, options: [.mixWithOthers]) }
    }

    @Test("JSON: configurations and messages round-trip; an invalid configuration from a peer is refused")
    func json() throws {
        let configuration = try SessionConfiguration(
            category: .playback, options: [.interruptSpokenAudioAndMixWithOthers])
        let data = try JSONEncoder().encode(configuration)
        #expect(try JSONDecoder().decode(SessionConfiguration.self, from: data) == configuration)
        let bad = Data(#"{"category":"record","options":["duckOthers"]}"#.utf8)
        #expect(throws: (any Error).self) { try JSONDecoder().decode(SessionConfiguration.self, from: bad) }
        let messages: [ActivationMessage] = [
            .granted, .denied(.insufficientPriority), .delayed, .interruptionBegan(.appSuspended),
            .interruptionEnded(shouldResume: true), .duckBegan, .duckEnded, .routeChanged(.oldDeviceUnavailable),
            .routeChanged(RouteChangeReason(rawValue: "bluetoothGone")), .callActivated, .callDeactivated,
        ]
        for message in messages {
            let encoded = try JSONEncoder().encode(message)
            #expect(try JSONDecoder().decode(ActivationMessage.self, from: encoded) == message)
        }
        let began = try JSONEncoder().encode(ActivationMessage.interruptionEnded(shouldResume: false))
        #expect(String(decoding: began, as: UTF8.self).contains(#""event":"interruptionEnded""#))
        #expect(throws: (any Error).self) {
            try JSONDecoder().decode(ActivationMessage.self, from: Data(#"{"event":"nope"}"#.utf8))
        }
    }
}
